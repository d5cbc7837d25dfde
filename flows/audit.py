"""audit_job: one research job in, its audited outputs out.

    read -> identify -> look up + decide (chunked, in parallel) -> support -> dedupe -> score
    -> render -> persist -> publish

`run_pipeline` is that line; the flow runs it with every stage a Prefect task, and
bench/orchestration.py runs the very same line on plain function calls.
"""

from collections.abc import Sequence

import polars as pl
from prefect import flow

from flows import progress
from flows.runners import task_runner
from flows.steps import PLAIN, TASKS, AuditedJob, Stages, persist_unstored, summarize
from models.audit import Checked, CitationSupport, ReadResult
from models.job import JobParams, JobSummary
from tasks.dedupe.job import dedupe_job
from tasks.store import JobNotStored, LibraryLocked, check_job_id, write_lock


def run_pipeline(params: JobParams, stages: Stages = PLAIN) -> JobSummary:
    """One job, stage by stage; every input citation ends as exactly one row."""
    check_job_id(params.job_id)
    job = stages.identify(stages.read(params.inputs, params.input_format))
    shown = progress.ArtifactProgress(
        "validate", params.job_id, f"audit {params.job_id}: citations checked"
    )
    checked = stages.check(job.references, params.offline, params.chunk_size, shown)
    return finish_job(params, job, checked, params.chosen_styles(), stages)


def finish_job(
    params: JobParams,
    job: ReadResult,
    checked: Sequence[Checked],
    styles: Sequence[str],
    stages: Stages,
) -> JobSummary:
    """How every job ends once its citations are checked (no bibliographies when `styles` is
    empty): support -> dedupe -> score -> render -> persist -> publish. The library stays locked
    from the dedupe's read to the persist's write, so work ids are minted against what is stored;
    claim support, which only reads what lookup found, runs before taking the lock. pandoc
    starts on the bibliographies at once (`stages.ahead`), beside all that."""
    with stages.ahead(checked, styles):
        supports = stages.support(job.claims, checked)
        try:
            with write_lock(params.db):
                works = stages.dedupe(params.job_id, checked, params.db)
                scores = stages.score(checked, job.claims, works, supports)
                audited = AuditedJob(params.job_id, job, checked, works, scores)
                rendered = stages.render(audited, styles)
                out = stages.persist(rendered, params.inputs, params.out_dir, params.db)
        except LibraryLocked as locked:
            out = keep_unstored(params, job, checked, supports, styles, stages, str(locked))
            raise JobNotStored(
                f"{locked}; this run's outputs are in {out}, marked not stored (NOT_STORED.txt)"
            ) from None
    stages.publish(rendered)
    return summarize(rendered, out)


def keep_unstored(
    params: JobParams,
    job: ReadResult,
    checked: Sequence[Checked],
    supports: Sequence[CitationSupport] | None,
    styles: Sequence[str],
    stages: Stages,
    why: str,
) -> str:
    """The job's folder without the library: the checked citations are not lost, and the folder
    says (report, metrics.json, NOT_STORED.txt) that they are not stored and how to store them.
    Duplicates and work ids are found within the job alone: the library could not be read."""
    works = dedupe_job(params.job_id, checked, pl.DataFrame())
    scores = stages.score(checked, job.claims, works, supports)
    note = (
        f"Not stored in the library: {why}. Work ids and duplicates here are within this job only."
    )
    audited = AuditedJob(params.job_id, job, checked, works, scores, not_stored=note)
    return persist_unstored(stages.render(audited, styles), params.out_dir)


@flow(name="audit_job", task_runner=task_runner(), log_prints=False)
def audit_job(params: JobParams) -> JobSummary:
    """Audit the citations of `params.inputs` as job `params.job_id`; the outputs go to
    `params.out_dir/params.job_id/` and the job's rows to the library."""
    return run_pipeline(params, TASKS)
