"""bulk_import: a large reference list (100k+) into the library, in resumable batches.

read -> identify -> per batch of `batch_size`: validate, store rows + mark batch done (one
transaction) -> dedupe, score, render and write the job folder from the stored rows

A re-run of the same job on the same input skips the batches already stored, so an import that
crashed or was stopped resumes where it stopped and ends with the same outputs as one that ran
through. The input fingerprint (file contents, format, batch size) keys the progress: changed
input starts over."""

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows import progress
from flows.audit import DEFAULT_CHUNK, finish_job, validate_all
from flows.runners import task_runner
from flows.steps import (
    read_step,
)
from models.audit import Reference, ValidationResult
from tasks import frames
from tasks.citation_ids import assign_citation_ids, link_claims, unique_claim_ids
from tasks.frames import result_from_row
from tasks.render.csl_styles import STYLES
from tasks.store import Library, check_job_id, db_path_from_env

DEFAULT_BATCH = 5_000
# pandoc citeproc takes minutes over tens of thousands of entries, and nobody pastes such a
# bibliography: above this many items the job folder has exports and the report, no bibliographies.
BIBLIOGRAPHY_LIMIT = 5_000


def file_digests(paths: Sequence[str]) -> dict[str, str]:
    """Each input file's content digest: what keys the import's progress and citation ids."""
    digests = {}
    for path in paths:
        with Path(path).open("rb") as handle:
            digests[path] = hashlib.file_digest(handle, "sha256").hexdigest()
    return digests


def input_fingerprint(digests: Sequence[str], input_format: str | None, batch_size: int) -> str:
    """What decides the batches: the input files' contents, in order, the format and batch
    size (never their names: a renamed copy resumes)."""
    digest = hashlib.sha256(f"{input_format}\x1f{batch_size}".encode())
    for file_digest in digests:
        digest.update(bytes.fromhex(file_digest))
    return digest.hexdigest()


def batches(refs: Sequence[Reference], size: int) -> list[list[Reference]]:
    """Consecutive batches in input order (deterministic, so a re-run cuts the same ones)."""
    if size < 1:
        raise ValueError("batch size must be at least 1")
    return [list(refs[i : i + size]) for i in range(0, len(refs), size)]


@task(name="bulk-batches-done")
def batches_done_step(job_id: str, fingerprint: str, db: str | None) -> set[int]:
    with Library(db_path_from_env(db)) as library:
        return library.bulk_batches_done(job_id, fingerprint)


@task(name="store-batch")
def store_batch_step(
    job_id: str,
    batch: int,
    fingerprint: str,
    refs: Sequence[Reference],
    results: Sequence[ValidationResult],
    db: str | None,
) -> int:
    frame = frames.citations_frame(job_id, refs, results)
    with Library(db_path_from_env(db)) as library:
        library.save_bulk_batch(job_id, batch, fingerprint, frame)
    return frame.height


@task(name="stored-results")
def stored_results_step(job_id: str, db: str | None) -> list[ValidationResult]:
    with Library(db_path_from_env(db)) as library:
        rows = library.table("citations", job_id)
    return [result_from_row(row) for row in rows.iter_rows(named=True)]


@flow(name="bulk_import", task_runner=task_runner(), log_prints=False)
def bulk_import(
    inputs: list[str],
    job_id: str,
    out_dir: str = "out",
    db: str | None = None,
    offline: bool = False,
    input_format: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    chunk_size: int = DEFAULT_CHUNK,
    styles: list[str] | None = None,
) -> dict[str, Any]:
    """Import a large reference list into the library as job `job_id`, resumably.

    Parameters:
        inputs: reference files (BibTeX, RIS, CSL-JSON, plain text, crew JSON or Markdown).
        job_id: names the job in the library and its output folder (letters, digits, . _ -).
        out_dir: where job folders are written.
        db: the DuckDB library file (default `$CITEAUDIT_DB` or ./citeaudit.duckdb).
        offline: skip the registries; every citation is `unverified` (reason: offline).
        input_format: force one input format instead of detecting it from content.
        batch_size: references validated and stored per batch (the unit of resumption).
        chunk_size: citations validated per Prefect task within a batch.
        styles: bibliography styles to write (default: all seven); skipped above
            BIBLIOGRAPHY_LIMIT items.

    Returns audit_job's summary plus `batches`, `batches_skipped` (already stored by an earlier
    run) and `bibliographies_skipped`.
    """
    check_job_id(job_id)
    read = read_step(inputs, input_format)
    digests = file_digests(inputs)
    fingerprint = input_fingerprint([digests[p] for p in inputs], input_format, batch_size)
    claims, refs = unique_claim_ids(read.claims, assign_citation_ids(read.references, digests))
    claims = link_claims(claims, refs)
    planned = batches(refs, batch_size)
    done = batches_done_step(job_id, fingerprint, db)
    shown = progress.ArtifactProgress("import", job_id, f"bulk import {job_id}: batches stored")
    stored = sum(len(batch) for number, batch in enumerate(planned) if number in done)
    progress.report("import", stored, len(refs))
    for number, batch in enumerate(planned):
        if number in done:
            continue
        results = validate_all(batch, offline, chunk_size)
        stored += store_batch_step(job_id, number, fingerprint, batch, results, db)
        shown.update(stored, len(refs))
        progress.report("import", stored, len(refs))
    shown.update(len(refs), len(refs))

    results = stored_results_step(job_id, db)
    skip_bibliographies = len(refs) > BIBLIOGRAPHY_LIMIT
    chosen = [] if skip_bibliographies else styles or list(STYLES)
    summary = finish_job(job_id, inputs, read.errors, refs, claims, results, out_dir, db, chosen)
    return summary | {
        "batches": len(planned),
        "batches_skipped": len(done & set(range(len(planned)))),
        "bibliographies_skipped": skip_bibliographies,
    }
