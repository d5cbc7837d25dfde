"""Prefect tasks: thin wrappers around the plain functions in `tasks/`.

Each task is one stage of the pipeline. Validation is chunked (a task run costs ~10 ms plus
server time, so one per citation would dominate a 10,000-citation job); retries happen per
request inside the registry clients, not per task."""

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from models.audit import Claim, InputError, ReadResult, Reference, Status, ValidationResult
from models.csl import CSLItem
from tasks import frames, report
from tasks.dedupe.job import JobDedupe, dedupe_job
from tasks.lookup import lookup_references
from tasks.metrics import Assessment, assess
from tasks.read import read_inputs
from tasks.read.kinds import check_bibliographies
from tasks.registries import Registries, RegistrySettings
from tasks.render import csl_styles, exports
from tasks.render.selection import export_entries, unconfirmed
from tasks.store import JobFolder, Library, db_path_from_env

_registries: dict[tuple[str, str | None, str | None], Registries] = {}
_registries_lock = threading.Lock()


def shared_registries() -> Registries:
    """One client set per process and settings, so all worker threads share its rate limiters
    (settings come from the environment, secrets included, and never travel as parameters)."""
    settings = RegistrySettings()
    key = (settings.model_dump_json(), settings.mailto_value(), settings.api_key_value())
    with _registries_lock:
        if key not in _registries:
            _registries[key] = Registries.from_settings(settings)
        return _registries[key]


@task(name="read-inputs")
def read_step(paths: Sequence[str], input_format: str | None) -> ReadResult:
    """Raises NotABibliography (the run ends Failed) for a missing input or one that holds no
    bibliography (an image, a Word document, an empty file)."""
    files = [Path(p) for p in paths]
    check_bibliographies(files)
    return read_inputs(files, input_format)


def job_deadline() -> float:
    """When the job's lookups must end (epoch seconds): CITEAUDIT_JOB_DEADLINE_S from now."""
    return time.time() + RegistrySettings().job_deadline_s


@task(name="look-up-chunk")
def lookup_chunk(
    refs: Sequence[Reference], offline: bool, deadline: float | None = None
) -> list[ValidationResult]:
    registries = None if offline else shared_registries()
    return lookup_references(refs, registries, offline=offline, deadline=deadline)


def unverified_chunk(refs: Sequence[Reference], error: str) -> list[ValidationResult]:
    """A chunk whose task failed outright: its citations are unverified, never dropped."""
    return [
        ValidationResult(
            citation_id=ref.citation_id,
            status=Status.UNVERIFIED,
            reason="validation did not complete",
            error=error,
        )
        for ref in refs
    ]


@task(name="dedupe")
def dedupe_step(
    job_id: str,
    refs: Sequence[Reference],
    results: Sequence[ValidationResult],
    db: str | None,
) -> JobDedupe:
    return dedupe_in_library(job_id, refs, results, db)


def dedupe_in_library(
    job_id: str,
    refs: Sequence[Reference],
    results: Sequence[ValidationResult],
    db: str | None,
) -> JobDedupe:
    """The job's citations deduped against every other job of the library."""
    with Library(db_path_from_env(db)) as library:
        others = library.dedupe_library(exclude_job=job_id)
        earlier = library.table("dedupe_records", job_id)
    previous = set(earlier["work_id"].drop_nulls()) if earlier.height else set()
    return dedupe_job(job_id, refs, results, others, previous_works=previous)


@task(name="assess")
def assess_step(
    refs: Sequence[Reference],
    results: Sequence[ValidationResult],
    claims: Sequence[Claim],
    duplicates: int,
) -> Assessment:
    return assess(refs, results, claims, duplicates)


@task(name="render-bibliographies")
def render_step(
    items: Sequence[CSLItem], styles: Sequence[str]
) -> dict[str, csl_styles.Bibliography]:
    try:
        return csl_styles.render_bibliographies(items, styles)
    except csl_styles.RenderError:
        # One style failing must not cost the job its other bibliographies or its audit.
        rendered = {}
        for style in styles:
            try:
                rendered[style] = csl_styles.render_bibliography(items, style)
            except csl_styles.RenderError as exc:
                get_run_logger().warning("no %s bibliography: %s", style, exc)
        return rendered


@dataclass
class JobRecord:
    """Everything a finished job writes."""

    job_id: str
    inputs: list[str]
    refs: Sequence[Reference]
    results: Sequence[ValidationResult]
    errors: Sequence[InputError]
    claims: Sequence[Claim]
    assessment: Assessment
    items: list[CSLItem]  # what the bibliographies and exports list
    bibliographies: dict[str, csl_styles.Bibliography]
    dedupe: JobDedupe | None = None


def job_frames(job: JobRecord) -> dict[str, pl.DataFrame]:
    citations = frames.citations_frame(job.job_id, job.refs, job.results).join(
        job.assessment.citation_scores, on="citation_id", how="left"
    )
    if job.dedupe is not None:
        citations = citations.join(job.dedupe.columns, on="citation_id", how="left")
    claims = frames.claims_frame(job.job_id, job.claims).join(
        job.assessment.claim_scores, on="claim_id", how="left"
    )
    return {
        "citations": citations,
        "input_errors": frames.input_errors_frame(job.job_id, job.errors),
        "claims": claims,
    }


def job_files(job: JobRecord, frames: dict[str, pl.DataFrame]) -> dict[str, str]:
    """The job's text outputs by file name: bibliographies, exports, metrics and the report."""
    files: dict[str, str] = {}
    results = {r.citation_id: r for r in job.results}
    marks = unconfirmed(job.items, results)
    for style, bib in job.bibliographies.items():
        files[f"bibliography.{style}.md"] = csl_styles.to_markdown(bib, marks)
        files[f"bibliography.{style}.html"] = csl_styles.to_html(bib, marks)
        files[f"bibliography.{style}.txt"] = csl_styles.to_text(bib, marks)
    listed = export_entries(job.items, job.refs, results)
    files["references.bib"] = exports.to_bibtex(listed)
    files["references.ris"] = exports.to_ris(listed)
    files["references.json"] = exports.to_csl_json(listed)
    first = next(iter(job.bibliographies.values()), None)
    data = report.ReportData(
        job_id=job.job_id,
        citations=frames["citations"],
        claims=frames["claims"],
        input_errors=frames["input_errors"],
        metrics=job.assessment.metrics,
        style=first.style if first else "",
        bibliography_html=[e.html for e in first.entries if e.item_id not in marks]
        if first
        else [],
        bibliography_unconfirmed=[
            (marks[e.item_id], e.html) for e in first.entries if e.item_id in marks
        ]
        if first
        else [],
        links=job.dedupe.links if job.dedupe is not None else pl.DataFrame(),
    )
    files["report.html"] = report.render_html(data)
    files["report.md"] = report.render_markdown(data)
    return files


@task(name="persist")
def persist_step(job: JobRecord, out_dir: str, db: str | None) -> dict[str, Any]:
    """Write the job's folder and replace its rows in the DuckDB library."""
    frames = store_job(job, out_dir, db)
    publish_artifacts(job.job_id, frames)
    return {
        "job_id": job.job_id,
        "out": str(JobFolder(out_dir, job.job_id).path),
        "citations": frames["citations"].height,
        "input_errors": frames["input_errors"].height,
        "input_errors_list": [e.model_dump() for e in job.errors],
        "status_counts": job.assessment.metrics["status_counts"],
        "metrics": job.assessment.metrics,
        "flagged": report.flagged_list(frames["citations"]),
    }


def store_job(job: JobRecord, out_dir: str | None, db: str | None) -> dict[str, pl.DataFrame]:
    """Write the job's folder (unless `out_dir` is None) and replace its rows in the library;
    returns the job's tables as stored."""
    frames = job_frames(job)
    shared: dict[str, tuple[pl.DataFrame, Sequence[str]]] = {}
    retired: list[str] = []
    if job.dedupe is not None:
        retired = job.dedupe.retired
        frames["dedupe_records"] = job.dedupe.records
        shared = {
            "works": (job.dedupe.works, ["work_id"]),
            "work_links": (job.dedupe.links, ["work_id_a", "work_id_b", "kind"]),
        }
    if out_dir is not None:
        folder = JobFolder(out_dir, job.job_id)
        for name in ("citations", "input_errors", "claims"):
            folder.write_parquet(f"{name}.parquet", frames[name])
        if job.dedupe is not None:
            folder.write_parquet("works.parquet", job.dedupe.cited_works)
        for name, text in job_files(job, frames).items():
            folder.write_text(name, text)
        folder.write_json("metrics.json", job.assessment.metrics)
    with Library(db_path_from_env(db)) as library:
        library.save_job(job.job_id, job.inputs, frames, shared, retired)
    return frames


def publish_artifacts(job_id: str, frames: dict[str, pl.DataFrame]) -> None:
    """A summary and the flagged citations, visible on the flow run in the Prefect UI."""
    key = "".join(c if c.isalnum() else "-" for c in job_id.lower())
    citations = frames["citations"]
    counts = report.status_counts(citations)
    create_markdown_artifact(
        key=f"audit-{key}",
        markdown="\n".join(
            [f"# Citation audit: {job_id}", "", "| status | count |", "|---|---:|"]
            + [f"| {s} | {n} |" for s, n in counts.items()]
        ),
        description=f"citeaudit summary of job {job_id}",
    )
    flagged = report.flagged_citations(citations)
    create_table_artifact(
        key=f"flagged-{key}",
        table=[
            {
                "entry": row["entry_key"],
                "file": row["source_file"],
                "status": report.flag_label(row),
                "reason": row["reason"] or row["error"] or "",
            }
            for row in flagged.iter_rows(named=True)
        ],
        description=f"flagged citations of job {job_id}",
    )
