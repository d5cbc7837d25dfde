"""audit_job: one research job in, its audited outputs out.

    read -> identify -> look up + decide (chunked, in parallel) -> finish (support -> dedupe
    -> score -> render -> job folder + library rows: tasks/job.finish) -> publish

`audit_job` is that line with every stage a Prefect task; `run_pipeline` is the very same line
on plain function calls (bench/orchestration.py measures the difference).

An audit holds its whole list in memory (it grows with the list: gigabytes past 100,000 tiny
records), so past MAX_AUDIT_REFERENCES it is refused before any
lookup, pointing to `citeaudit import` (flows/bulk.py: batches, bounded memory). The count
streams the input a batch at a time, and only inputs large enough to hold that many (at least
MIN_REFERENCE_BYTES a reference) are counted: a small audit reads its input once.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import flow

from flows import progress
from flows.runners import task_runner
from flows.steps import (
    check_all,
    check_all_tasks,
    finish_task,
    identify_task,
    publish_task,
    quoted,
    read_task,
    render_ahead_of_tasks,
)
from models.job import JobParams, JobSummary
from tasks.citation_ids import identify
from tasks.errors import UsageError
from tasks.job.audited import summarize
from tasks.job.finish import Checks, finish
from tasks.job.render import render_ahead
from tasks.read.inputs import read, read_batches
from tasks.store.lock import job_lock
from tasks.store.names import LibraryPath, check_job_id, library_at

MAX_AUDIT_REFERENCES = 100_000
MIN_REFERENCE_BYTES = 2  # a PMID and its line break


class TooLargeForAudit(UsageError):
    """More references than an audit holds in memory: an import's work."""


def check_audit_size(params: JobParams) -> None:
    """Refuse an input of more than MAX_AUDIT_REFERENCES references, counted a batch at a time
    (never all held) and only when its files are large enough to hold that many."""
    size = sum(Path(p).stat().st_size for p in params.inputs)
    if size <= MAX_AUDIT_REFERENCES * MIN_REFERENCE_BYTES:
        return
    count = 0
    for batch in read_batches(params.inputs, params.input_format, 5_000):
        count += len(batch.references)
        if count > MAX_AUDIT_REFERENCES:
            raise TooLargeForAudit(
                f"more than {MAX_AUDIT_REFERENCES:,} references: too many to audit in memory; "
                f"run `citeaudit import` with the same arguments (batches, resumable)"
            )


@contextmanager
def audit_started(params: JobParams) -> Iterator[LibraryPath]:
    """The job is this run's alone from start to end (job_lock: a second run of it is refused),
    and not too large to audit; the library's name, resolved here once for every stage."""
    check_job_id(params.job_id)
    db = library_at(params.db)
    with job_lock(db, params.job_id):
        check_audit_size(params)
        yield db


def run_pipeline(params: JobParams) -> JobSummary:
    """One job on plain function calls (no Prefect); every input citation ends as exactly one
    row. pandoc starts on the bibliographies at once (render_ahead), beside support, dedupe
    and score."""
    with audit_started(params) as db:
        job = identify(read(params.inputs, params.input_format))
        checked = check_all(job.references, params.offline, params.chunk_size)
        with render_ahead(checked, params.chosen_styles()) as ahead:
            rendered, out = finish(params, job, Checks(checked), db, ahead)
    return summarize(rendered, out)


@flow(name="audit_job", task_runner=task_runner(), log_prints=False)
def audit_job(params: JobParams) -> JobSummary:
    """Audit the citations of `params.inputs` as job `params.job_id`; the outputs go to
    `params.out_dir/params.job_id/` and the job's rows to the library."""
    with audit_started(params) as db:
        job = quoted(identify_task)(quoted(read_task)(params.inputs, params.input_format))
        shown = progress.ArtifactProgress(
            "validate", params.job_id, f"audit {params.job_id}: citations checked"
        )
        checked = check_all_tasks(job.references, params.offline, params.chunk_size, shown)
        with render_ahead_of_tasks(checked, params.chosen_styles()) as ahead:
            rendered, out = quoted(finish_task)(params, job, Checks(checked), db, ahead)
    quoted(publish_task)(rendered)
    return summarize(rendered, out)
