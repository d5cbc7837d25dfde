"""The pipeline's stages: each a plain function, and a thin Prefect task over it.

    read -> identify -> look up + decide (chunked) -> finish (support, dedupe, score, render,
    job folder + library rows: tasks/job.finish) -> publish

The flows call the tasks (`read_task`, ..., `finish_task`) by name; the plain path
(flows/audit.py:run_pipeline) calls the same functions directly (bench/orchestration.py
measures the difference). Checking is chunked: a task run costs milliseconds plus server time,
so one per citation would dominate a large job; retries happen per request inside the registry
clients, not per task."""

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import ParamSpec, TypeVar

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from flows import artifacts, interrupt, progress
from flows.runners import tasks_run_here
from models.audit import (
    Checked,
    Reference,
    Status,
    ValidationResult,
)
from tasks.citation_ids import identify, plan_chunks
from tasks.job.audited import Rendered
from tasks.job.finish import finish
from tasks.job.render import RunsAhead, render_ahead
from tasks.lookup.checker import process_checker
from tasks.read.inputs import read
from tasks.registries import read_settings
from tasks.render import citeproc

P = ParamSpec("P")
R = TypeVar("R")

# A stop signal ends the process with os._exit: pandoc runs (render's, and those render_ahead
# started) would run on as orphans, as they inherit the blocked stop signals; so it kills them.
interrupt.on_stop(citeproc.stop_all_pandoc)

# --- look up + decide -----------------------------------------------------------------------


def job_deadline() -> float:
    """When the job's lookups must end (epoch seconds): CITEAUDIT_JOB_DEADLINE_S from now."""
    return read_settings().job_ends_at()


@dataclass(frozen=True)
class CheckedChunk:
    """What the look-up task returns: Prefect links each element of a list a task returns to
    the task's state until the flow run ends (hundreds of bytes a citation, for a bulk import
    held to its end); an object holding the list is linked once."""

    checked: list[Checked]


def check_chunk_task(
    refs: Sequence[Reference], offline: bool, deadline: float | None = None
) -> CheckedChunk:
    """One chunk checked by this process's checker (tasks/lookup/checker.py)."""
    return CheckedChunk(process_checker(offline, deadline).check(refs))


def unchecked(refs: Sequence[Reference], error: str) -> list[Checked]:
    """A chunk whose task failed outright: its citations are unverified, never dropped."""
    return [
        Checked(
            reference=ref,
            result=ValidationResult(
                citation_id=ref.citation_id,
                status=Status.UNVERIFIED,
                reason="validation did not complete",
                error=error,
            ),
        )
        for ref in refs
    ]


Shown = progress.ArtifactProgress | None


def check_all(refs: Sequence[Reference], offline: bool, chunk_size: int) -> list[Checked]:
    """Every chunk in turn, in this process (the plain pipeline)."""
    checker = process_checker(offline, job_deadline())
    return checker.check_in_chunks(refs, chunk_size, partial(progress.report, "validate"))


# --- how the job ends: the job package's (tasks/job.finish), Prefect-free -------------------


def render_ahead_of_tasks(checked: Sequence[Checked], styles: Sequence[str]) -> RunsAhead:
    """`render_ahead` when the finish task (which renders) runs in this process; a task runner
    whose workers are other processes would render it all again."""
    return render_ahead(checked, styles) if tasks_run_here() else nullcontext()


def publish(rendered: Rendered) -> None:
    """The job's summary and flagged citations, on its flow run in the Prefect UI."""
    artifacts.publish_job(rendered.job_id, rendered.tables["citations"], rendered.whole)


# --- the stages as Prefect tasks ---------------------------------------------------------------


def stage_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Our Prefect task decorator: no cache policy. Results are never persisted, so a cache key
    is never used, yet Prefect would compute one for every run by serializing all its inputs
    (JSON, else cloudpickle): a bulk import's finishing tasks copied every citation's frames,
    and each checked chunk was encoded once more."""
    return task(name=name, cache_policy=NO_CACHE)


read_task = stage_task("read-inputs")(read)
identify_task = stage_task("identify")(identify)
check_task = stage_task("look-up-and-decide")(check_chunk_task)
finish_task = stage_task("finish-job")(finish)
publish_task = stage_task("publish-artifacts")(publish)


def quoted(stage: Task[P, R]) -> Callable[P, R]:
    """A task called with its arguments in `quote(...)`: Prefect would otherwise walk every
    nested model looking for futures (seconds of a mid-sized job), though none holds one."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return stage(*(quote(a) for a in args), **{k: quote(v) for k, v in kwargs.items()})  # type: ignore[arg-type]

    return call


def check_all_tasks(
    refs: Sequence[Reference], offline: bool, chunk_size: int, shown: Shown = None
) -> list[Checked]:
    """Fan the chunks out as tasks (not quoted: they are small, and a Dask worker would receive
    the quote unopened); a chunk that fails outright leaves its citations `unverified`, so
    every citation still gets exactly one row. Progress goes to the CLI's listener and, given
    `shown`, to the Prefect UI."""
    deadline = job_deadline()
    chunks = plan_chunks(refs, chunk_size)
    futures = {check_task.submit(chunk, offline, deadline): chunk for chunk in chunks}
    checked: list[Checked] = []
    progress.report("validate", 0, len(refs))
    for future in as_completed(list(futures)):
        chunk = futures[future]
        try:
            checked.extend(future.result().checked)
        except Exception as exc:  # the task itself crashed: keep the rows, say why
            checked.extend(unchecked(chunk, f"{type(exc).__name__}: {exc}"))
        progress.report("validate", len(checked), len(refs))
        if shown is not None:
            shown.update(len(checked), len(refs))
    order = {ref.citation_id: index for index, ref in enumerate(refs)}
    return sorted(checked, key=lambda c: order[c.citation_id])  # chunks finish in any order
