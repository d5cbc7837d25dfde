"""The pipeline's stages: each a plain function, and a thin Prefect task over it.

    read -> identify -> look up + decide (chunked) -> support -> dedupe -> score -> render
    -> persist -> publish

The stages up to the checked citations (read, identify, look up + decide: this process's
Checker, tasks/lookup/checker.py) and claim support are here; dedupe, score, render and persist
are the job package's (tasks/job), which owns how a job ends. `TASKS` runs the stages as
Prefect tasks (the flows); `PLAIN` calls the same functions directly (bench/orchestration.py
measures the difference). Checking is chunked: a task run costs milliseconds plus server time,
so one per citation would dominate a large job; retries happen per request inside the registry
clients, not per task."""

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from flows import artifacts, interrupt, progress
from flows.runners import tasks_run_here
from models.audit import (
    Checked,
    CitationSupport,
    Claim,
    ReadResult,
    Reference,
    Status,
    ValidationResult,
)
from tasks.citation_ids import assign_citation_ids, link_claims, plan_chunks, unique_claim_ids
from tasks.dedupe.job import JobDedupe
from tasks.digests import DigestMap
from tasks.job.audited import AuditedJob, Rendered
from tasks.job.end import dedupe, score
from tasks.job.folder import write_job
from tasks.job.render import RunsAhead, render, render_ahead
from tasks.lookup.checker import process_checker, process_registries
from tasks.read.inputs import read_inputs, stream_inputs
from tasks.read.kinds import check_bibliographies
from tasks.registries import read_settings
from tasks.render import citeproc
from tasks.render.citeproc import Ahead
from tasks.score.metrics import Assessment
from tasks.store.names import LibraryPath
from tasks.support.claims import support_claims

P = ParamSpec("P")
R = TypeVar("R")

# A stop signal ends the process with os._exit: pandoc runs (render's, and those render_ahead
# started) would run on as orphans, as they inherit the blocked stop signals; so it kills them.
interrupt.on_stop(citeproc.stop_all_pandoc)

# --- read, identify -------------------------------------------------------------------------


def read(paths: Sequence[str], input_format: str | None) -> ReadResult:
    """Raises NotABibliography (the run ends Failed) for a missing input or one that holds no
    bibliography (an image, a Word document, an empty file)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return read_inputs(files, input_format)


def read_batches(
    paths: Sequence[str], input_format: str | None, batch_size: int
) -> Iterator[ReadResult]:
    """`read` in batches of `batch_size` references, read as they are consumed
    (tasks/read:stream_inputs)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return stream_inputs(files, input_format, batch_size)


def identify(
    read: ReadResult,
    file_keys: Mapping[str, str] | None = None,
    seen: DigestMap | None = None,
) -> ReadResult:
    """Citation ids (stable, unique in the job; keyed by `file_keys`, source file -> content
    digest, instead of file names when given; `seen` carries them across a job's batches),
    unique claim ids, claims linked to them."""
    refs = assign_citation_ids(read.references, file_keys, seen)
    claims, refs = unique_claim_ids(read.claims, refs)
    return ReadResult(
        references=refs,
        claims=link_claims(claims, refs),
        errors=read.errors,
        subjects=read.subjects,
    )


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


def check_all(
    refs: Sequence[Reference], offline: bool, chunk_size: int, shown: Shown = None
) -> list[Checked]:
    """Every chunk in turn, in this process (the plain pipeline)."""
    checked: list[Checked] = []
    deadline = job_deadline()
    progress.report("validate", 0, len(refs))
    checker = process_checker(offline, deadline)
    for chunk in plan_chunks(refs, chunk_size):
        checked.extend(checker.check(chunk))
        progress.report("validate", len(checked), len(refs))
    return checked


# --- dedupe, score, render, persist: the job package's (tasks/job), Prefect-free ------------


def render_ahead_of_tasks(checked: Sequence[Checked], styles: Sequence[str]) -> RunsAhead:
    """`render_ahead` when the render task runs in this process; a task runner whose workers
    are other processes would render it all again."""
    return render_ahead(checked, styles) if tasks_run_here() else nullcontext()


def support(claims: Sequence[Claim], checked: Sequence[Checked]) -> list[CitationSupport] | None:
    """How well each verified cited work fits the claim citing it (and, with CITEAUDIT_LLM_URL
    set, the judge's verdict on it); None when support is off."""
    return support_claims(claims, checked, judge=process_registries().judge)


def publish(rendered: Rendered) -> None:
    """The job's summary and flagged citations, on its flow run in the Prefect UI."""
    artifacts.publish_job(rendered.job_id, rendered.tables["citations"], rendered.whole)


# --- the stages as Prefect tasks, and as plain calls ----------------------------------------


def stage_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Our Prefect task decorator: no cache policy. Results are never persisted, so a cache key
    is never used, yet Prefect would compute one for every run by serializing all its inputs
    (JSON, else cloudpickle): a bulk import's finishing tasks copied every citation's frames,
    and each checked chunk was encoded once more."""
    return task(name=name, cache_policy=NO_CACHE)


read_task = stage_task("read-inputs")(read)
identify_task = stage_task("identify")(identify)
check_task = stage_task("look-up-and-decide")(check_chunk_task)
dedupe_task = stage_task("dedupe")(dedupe)
support_task = stage_task("support")(support)
score_task = stage_task("score")(score)
render_task = stage_task("render")(render)
persist_task = stage_task("persist")(write_job)
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


@dataclass(frozen=True)
class Stages:
    """One implementation of each stage; the pipeline (flows/audit.py) calls them in order."""

    read: Callable[[Sequence[str], str | None], ReadResult]
    identify: Callable[[ReadResult], ReadResult]
    check: Callable[[Sequence[Reference], bool, int, Shown], list[Checked]]
    dedupe: Callable[[str, Sequence[Checked], LibraryPath], JobDedupe]
    support: Callable[[Sequence[Claim], Sequence[Checked]], list[CitationSupport] | None]
    score: Callable[
        [Sequence[Checked], Sequence[Claim], JobDedupe, Sequence[CitationSupport] | None],
        Assessment,
    ]
    render: Callable[[AuditedJob, Sequence[str], Ahead | None], Rendered]
    ahead: Callable[[Sequence[Checked], Sequence[str]], RunsAhead]
    persist: Callable[[Rendered, Sequence[str], str, LibraryPath], str]
    publish: Callable[[Rendered], None]


def unpublished(rendered: Rendered) -> None:
    """Outside a Prefect flow run there is no UI to publish to."""


PLAIN = Stages(
    read, identify, check_all, dedupe, support, score, render, render_ahead, write_job, unpublished
)
TASKS = Stages(
    quoted(read_task),
    quoted(identify_task),
    check_all_tasks,
    quoted(dedupe_task),
    quoted(support_task),
    quoted(score_task),
    quoted(render_task),
    render_ahead_of_tasks,
    quoted(persist_task),
    quoted(publish_task),
)
