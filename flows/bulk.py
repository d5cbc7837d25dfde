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

from prefect import flow, task

from flows import progress
from flows.audit import finish_job
from flows.runners import task_runner
from flows.steps import TASKS, identify_task, quoted
from models.audit import Checked, Reference
from models.job import BulkSummary, JobParams
from tasks import frames
from tasks.frames import result_from_row
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
    job_id: str, batch: int, fingerprint: str, checked: Sequence[Checked], db: str | None
) -> int:
    frame = frames.citations_frame(job_id, checked)
    with Library(db_path_from_env(db)) as library:
        library.save_bulk_batch(job_id, batch, fingerprint, frame)
    return frame.height


@task(name="stored-results")
def stored_results_step(refs: Sequence[Reference], job_id: str, db: str | None) -> list[Checked]:
    """The job's references with the results stored for them, batch by batch, in this run or
    an earlier one."""
    with Library(db_path_from_env(db)) as library:
        rows = library.table("citations", job_id)
    stored = {row["citation_id"]: result_from_row(row) for row in rows.iter_rows(named=True)}
    return [Checked(reference=ref, result=stored[ref.citation_id]) for ref in refs]


@flow(name="bulk_import", task_runner=task_runner(), log_prints=False)
def bulk_import(params: JobParams, batch_size: int = DEFAULT_BATCH) -> BulkSummary:
    """Import a large reference list into the library as job `params.job_id`, resumably.

    Parameters:
        params: the job (as audit_job's); bibliographies are skipped above BIBLIOGRAPHY_LIMIT
            items.
        batch_size: references checked and stored per batch (the unit of resumption).

    Returns audit_job's summary plus `batches`, `batches_skipped` (already stored by an earlier
    run) and `bibliographies_skipped`.
    """
    job_id, db = check_job_id(params.job_id), params.db
    read = TASKS.read(params.inputs, params.input_format)
    digests = file_digests(params.inputs)
    fingerprint = input_fingerprint(
        [digests[p] for p in params.inputs], params.input_format, batch_size
    )
    job = quoted(identify_task)(read, digests)  # ids keyed by content: a renamed copy resumes
    refs = job.references
    planned = batches(refs, batch_size)
    done = batches_done_step(job_id, fingerprint, db)
    shown = progress.ArtifactProgress("import", job_id, f"bulk import {job_id}: batches stored")
    stored = sum(len(batch) for number, batch in enumerate(planned) if number in done)
    progress.report("import", stored, len(refs))
    for number, batch in enumerate(planned):
        if number in done:
            continue
        checked = TASKS.check(batch, params.offline, params.chunk_size, None)
        stored += quoted(store_batch_step)(job_id, number, fingerprint, checked, db)
        shown.update(stored, len(refs))
        progress.report("import", stored, len(refs))
    shown.update(len(refs), len(refs))

    skip_bibliographies = len(refs) > BIBLIOGRAPHY_LIMIT
    styles = [] if skip_bibliographies else params.chosen_styles()
    checked = quoted(stored_results_step)(refs, job_id, db)
    summary = finish_job(params, job, checked, styles, TASKS)
    return BulkSummary(
        **summary.model_dump(),
        batches=len(planned),
        batches_skipped=len(done & set(range(len(planned)))),
        bibliographies_skipped=skip_bibliographies,
    )
