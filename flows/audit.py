"""audit_job: one research job in, its audited outputs out.

    read -> identify -> look up + decide (chunked, in parallel) -> support -> dedupe -> score
    -> render -> persist -> publish

`run_pipeline` is that line; the flow runs it with every stage a Prefect task, and
bench/orchestration.py runs the very same line on plain function calls.

An audit holds its whole list in memory (it grows with the list: gigabytes past 100,000 tiny
records), so past MAX_AUDIT_REFERENCES it is refused before any
lookup, pointing to `citeaudit import` (flows/bulk.py: batches, bounded memory). The count
streams the input a batch at a time, and only inputs large enough to hold that many (at least
MIN_REFERENCE_BYTES a reference) are counted: a small audit reads its input once.
"""

from collections.abc import Sequence
from pathlib import Path

from prefect import flow

from flows import progress
from flows.runners import task_runner
from flows.steps import PLAIN, TASKS, Stages, read_batches
from models.audit import Checked, ReadResult
from models.job import JobParams, JobSummary
from tasks.errors import UsageError
from tasks.job.audited import summarize
from tasks.job.end import audited_job, end_job, end_unstored
from tasks.store.library import write_lock
from tasks.store.lock import JobNotStored, LibraryLocked, job_lock
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


def run_pipeline(params: JobParams, stages: Stages = PLAIN) -> JobSummary:
    """One job, stage by stage; every input citation ends as exactly one row. The job is this
    run's alone from start to end (job_lock: a second run of it is refused). The library's
    name is resolved here, once, for every stage."""
    check_job_id(params.job_id)
    db = library_at(params.db)
    with job_lock(db, params.job_id):
        check_audit_size(params)
        job = stages.identify(stages.read(params.inputs, params.input_format))
        shown = progress.ArtifactProgress(
            "validate", params.job_id, f"audit {params.job_id}: citations checked"
        )
        checked = stages.check(job.references, params.offline, params.chunk_size, shown)
        return finish_job(params, job, checked, params.chosen_styles(), stages, db)


def finish_job(
    params: JobParams,
    job: ReadResult,
    checked: Sequence[Checked],
    styles: Sequence[str],
    stages: Stages,
    db: LibraryPath,
) -> JobSummary:
    """How every job ends once its citations are checked (no bibliographies when `styles` is
    empty): support -> dedupe -> score -> render -> persist (tasks/job) -> publish. The library
    stays locked from the dedupe's read to the persist's write, so work ids are minted against
    what is stored; claim support, which only reads what lookup found, runs before taking the
    lock. pandoc starts on the bibliographies at once (`stages.ahead`), beside all that; its
    runs are handed to render."""
    job_id = params.job_id
    with stages.ahead(checked, styles) as ahead:
        supports = stages.support(job.claims, checked)
        try:
            with write_lock(db):
                audited = audited_job(job_id, job, checked, supports, db, stages)
                rendered, out = end_job(
                    audited, styles, params.inputs, params.out_dir, db, stages, ahead
                )
        except LibraryLocked as locked:
            why = str(locked)
            out = end_unstored(
                job_id, job, checked, supports, styles, params.out_dir, why, stages, ahead
            )
            raise JobNotStored(
                f"{locked}; this run's outputs are in {out}, marked not stored (NOT_STORED.txt)"
            ) from None
    stages.publish(rendered)
    return summarize(rendered, out)


@flow(name="audit_job", task_runner=task_runner(), log_prints=False)
def audit_job(params: JobParams) -> JobSummary:
    """Audit the citations of `params.inputs` as job `params.job_id`; the outputs go to
    `params.out_dir/params.job_id/` and the job's rows to the library."""
    return run_pipeline(params, TASKS)
