"""crew_report: after a crew run, audit what the crew cited and say which claims do not hold.

audit_job (as a subflow) -> read back its claims and citations -> the claims as answers (inline,
footnotes, JSON) and the list of the works they cite, written beside the report -> unsupported
claims, each with its citations' statuses and reasons (summary, Prefect artifact; the job's report
lists them too)
"""

from pathlib import Path

import polars as pl
from prefect import flow

from flows import artifacts
from flows.audit import audit_job
from flows.steps import stage_task
from models.job import CrewSummary, JobParams, UnsupportedClaim
from tasks import report
from tasks.job.folder import write_files
from tasks.render import forms


def stored_tables(job_folder: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The audited job's claims and citations, as its folder holds them."""
    folder = Path(job_folder)
    return pl.read_parquet(folder / "claims.parquet"), pl.read_parquet(folder / "citations.parquet")


@stage_task("unsupported-claims")
def unsupported_claims_step(job_folder: str) -> list[UnsupportedClaim]:
    found = report.unsupported_claims(*stored_tables(job_folder))
    return [UnsupportedClaim.model_validate(claim) for claim in found]


@stage_task("render-answers")
def render_answers_step(job_folder: str) -> dict[str, str]:
    return forms.crew_answers(*stored_tables(job_folder))


@stage_task("persist-answers")
def persist_answers_step(params: JobParams, files: dict[str, str]) -> None:
    write_files(params.out_dir, params.job_id, files)


@flow(name="crew_report", log_prints=False)
def crew_report(params: JobParams) -> CrewSummary:
    """Audit a crew run's output and report its unsupported claims.

    `params.inputs` are the crew's output files: claims JSON in any agent format citeaudit reads
    (ModelChorus, IVCAP, ICE, RAG contexts, clinical) or a Markdown report with its reference
    list. Offline, every citation is `unverified`: claims stay undecided, never unsupported for
    want of an answer.

    Returns audit_job's summary plus `unsupported_claims`: each claim's id, text, strength and
    its citations' statuses and reasons, weakest claim first.
    """
    summary = audit_job(params)
    persist_answers_step(params, render_answers_step(summary.out))
    unsupported = unsupported_claims_step(summary.out)
    artifacts.publish_unsupported(params.job_id, unsupported)
    return CrewSummary(**summary.model_dump(), unsupported_claims=unsupported)
