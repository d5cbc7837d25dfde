"""audit_job: one research job in, its audited outputs out.

read inputs -> identify -> validate (chunked, in parallel) -> persist
"""

from collections.abc import Sequence
from typing import Any, cast

from prefect import flow
from prefect.futures import as_completed
from prefect.utilities.annotations import quote

from flows import progress
from flows.runners import task_runner
from flows.steps import (
    JobRecord,
    assess_step,
    dedupe_step,
    job_deadline,
    lookup_chunk,
    persist_step,
    read_step,
    render_step,
    unverified_chunk,
)
from models.audit import Claim, InputError, Reference, ValidationResult
from tasks.citation_ids import assign_citation_ids, link_claims, plan_chunks, unique_claim_ids
from tasks.dedupe.job import repeats_within_jobs
from tasks.render.csl_styles import STYLES
from tasks.render.selection import bibliography_items
from tasks.store import check_job_id

DEFAULT_CHUNK = 200
# Big task arguments go in `quote(...)`: Prefect would otherwise walk every nested model looking
# for futures (11 s of a 1,363-citation job), though none of them holds one. Not for submitted
# chunks: they are small, and a Dask worker would receive the quote unopened.


def validate_all(
    refs: Sequence[Reference],
    offline: bool,
    chunk_size: int,
    shown: progress.ArtifactProgress | None = None,
) -> list[ValidationResult]:
    """Fan validation out over chunks; a chunk that fails outright leaves its citations
    `unverified`, so every citation still gets exactly one result. Progress goes to the CLI's
    listener and, given `shown`, to the Prefect UI."""
    chunks = plan_chunks(refs, chunk_size)
    deadline = job_deadline()
    futures = {lookup_chunk.submit(chunk, offline, deadline): chunk for chunk in chunks}
    results: list[ValidationResult] = []
    done = 0
    progress.report("validate", 0, len(refs))
    for future in as_completed(list(futures)):
        chunk = futures[future]
        try:
            results.extend(future.result())
        except Exception as exc:  # the task itself crashed: keep the rows, say why
            results.extend(unverified_chunk(chunk, f"{type(exc).__name__}: {exc}"))
        done += len(chunk)
        progress.report("validate", done, len(refs))
        if shown is not None:
            shown.update(done, len(refs))
    return results


def finish_job(
    job_id: str,
    inputs: list[str],
    errors: Sequence[InputError],
    refs: Sequence[Reference],
    claims: Sequence[Claim],
    results: Sequence[ValidationResult],
    out_dir: str,
    db: str | None,
    styles: list[str],
) -> dict[str, Any]:
    """dedupe -> score -> render -> persist: how every job ends, once its citations are
    validated (no bibliographies when `styles` is empty)."""
    works = dedupe_step(job_id, quote(refs), quote(results), db)
    duplicates = repeats_within_jobs(works.columns).height
    assessment = assess_step(quote(refs), quote(results), quote(claims), duplicates=duplicates)
    work_ids = dict(works.columns.select("citation_id", "work_id").iter_rows())
    items = bibliography_items(refs, {r.citation_id: r for r in results}, work_ids)
    bibliographies = render_step(quote(items), styles) if styles else {}
    job = JobRecord(
        job_id=job_id,
        inputs=inputs,
        refs=refs,
        results=results,
        errors=errors,
        claims=claims,
        assessment=assessment,
        items=items,
        bibliographies=bibliographies,
        dedupe=works,
    )
    # quote() is unwrapped before the task runs; typed as what the task receives.
    return persist_step(cast(JobRecord, quote(job)), out_dir, db)


@flow(
    name="audit_job",
    task_runner=task_runner(),
    log_prints=False,
)
def audit_job(
    inputs: list[str],
    job_id: str,
    out_dir: str = "out",
    db: str | None = None,
    offline: bool = False,
    input_format: str | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    styles: list[str] | None = None,
) -> dict[str, Any]:
    """Audit the citations in `inputs` as job `job_id`; outputs go to `out_dir/job_id/`.

    Parameters:
        inputs: reference files (BibTeX, RIS, CSL-JSON, plain text, crew JSON or Markdown).
        job_id: names the job in the library and its output folder (letters, digits, . _ -).
        out_dir: where job folders are written.
        db: the DuckDB library file (default `$CITEAUDIT_DB` or ./citeaudit.duckdb).
        offline: skip the registries; every citation is `unverified` (reason: offline).
        input_format: force one input format instead of detecting it from content.
        chunk_size: citations validated per Prefect task.
        styles: bibliography styles to write (default: all seven; the first one is shown in
            the report).
    """
    check_job_id(job_id)
    read = read_step(inputs, input_format)
    claims, refs = unique_claim_ids(read.claims, assign_citation_ids(read.references))
    claims = link_claims(claims, refs)
    shown = progress.ArtifactProgress("validate", job_id, f"audit {job_id}: citations checked")
    results = validate_all(refs, offline, chunk_size, shown)
    return finish_job(
        job_id, inputs, read.errors, refs, claims, results, out_dir, db, styles or list(STYLES)
    )
