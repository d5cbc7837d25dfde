"""bulk_import: a large reference list (100k+) into the library, in resumable batches.

per batch of `batch_size` references: read -> identify -> validate -> store rows + mark batch
done (one transaction); then dedupe, score, render and write the job folder from the stored rows

The input is read as the batches are consumed (tasks/read:stream_inputs), so until the job folder
is written memory holds one batch (plus each citation's id and the input errors), not the list.
The job folder's stages (dedupe, score, render, write) still take the whole job at once.

A re-run of the same job on the same input skips the batches already stored (it reads them
again, but does not check them), so an import that crashed or was stopped resumes where it
stopped and ends with the same outputs as one that ran through. The input fingerprint (file
contents, format, batch size) keys the progress: changed input starts over."""

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefect import flow, task

from flows import progress
from flows.audit import finish_job
from flows.runners import task_runner
from flows.steps import TASKS, Stages, identify, quoted, read_batches
from models.audit import Checked, Claim, InputError, ReadResult
from models.job import BulkSummary, JobParams
from tasks import frames
from tasks.citation_ids import link_claims
from tasks.frames import checked_from_row
from tasks.store import Library, check_job_id, db_path_from_env

DEFAULT_BATCH = 5_000


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


@task(name="bulk-batches-done")
def batches_done_step(job_id: str, fingerprint: str, db: str | None) -> set[int]:
    with Library(db_path_from_env(db)) as library:
        return library.bulk_batches_done(job_id, fingerprint)


def store_batch(
    job_id: str, batch: int, fingerprint: str, checked: Sequence[Checked], db: str | None
) -> int:
    """One batch's rows and its `done` mark (tasks/store/bulk.py); how many rows."""
    frame = frames.citations_frame(job_id, checked)
    with Library(db_path_from_env(db)) as library:
        library.save_bulk_batch(job_id, batch, fingerprint, frame)
    return frame.height


store_batch_step = task(name="store-batch")(store_batch)

StoreBatch = Callable[[str, int, str, Sequence[Checked], str | None], int]


@dataclass
class Imported:
    """What an import keeps of its input once the batches are stored."""

    citation_ids: list[str] = field(default_factory=list)  # in input order
    claims: list[Claim] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    batches: int = 0


def import_batches(
    params: JobParams,
    batch_size: int,
    digests: dict[str, str],
    fingerprint: str,
    done: set[int],
    stages: Stages,
    store: StoreBatch,
) -> Imported:
    """Read, identify, check and store the input a batch at a time (the batches in `done` are
    read but neither checked nor stored again). `digests`: file_digests of the inputs."""
    seen: dict[str, int] = {}
    imported = Imported()
    stored = 0
    for read in read_batches(params.inputs, params.input_format, batch_size):
        job = identify(read, digests, seen)  # ids keyed by content: a renamed copy resumes
        imported.citation_ids.extend(ref.citation_id for ref in job.references)
        imported.claims.extend(job.claims)
        imported.errors.extend(job.errors)
        if not job.references:
            continue
        number = imported.batches
        imported.batches += 1
        if number in done:
            stored += len(job.references)
        else:
            checked = stages.check(job.references, params.offline, params.chunk_size, None)
            stored += store(params.job_id, number, fingerprint, checked, params.db)
        progress.report("import", stored, None)  # the total is known once all is read
    progress.report("import", stored, stored)
    return imported


@task(name="stored-results")
def stored_results_step(citation_ids: Sequence[str], job_id: str, db: str | None) -> list[Checked]:
    """The job's citations as stored, batch by batch, in this run or an earlier one, in input
    order (`citation_ids`)."""
    with Library(db_path_from_env(db)) as library:
        rows = library.table("citations", job_id)
    # each row made a Checked as it is read: the rows are never all held as dicts too
    stored = {row["citation_id"]: checked_from_row(row) for row in rows.iter_rows(named=True)}
    return [stored[citation_id] for citation_id in citation_ids]


@flow(name="bulk_import", task_runner=task_runner(), log_prints=False)
def bulk_import(params: JobParams, batch_size: int = DEFAULT_BATCH) -> BulkSummary:
    """Import a large reference list into the library as job `params.job_id`, resumably.

    Parameters:
        params: the job (as audit_job's); bibliographies are skipped above
            csl_styles.MAX_BIBLIOGRAPHY_ITEMS items, as audit_job skips them.
        batch_size: references read, checked and stored per batch (the unit of resumption and
            of memory).

    Returns audit_job's summary plus `batches`, `batches_skipped` (already stored by an earlier
    run) and `bibliographies_skipped`.
    """
    job_id, db = check_job_id(params.job_id), params.db
    digests = file_digests(params.inputs)
    fingerprint = input_fingerprint(
        [digests[p] for p in params.inputs], params.input_format, batch_size
    )
    done = batches_done_step(job_id, fingerprint, db)
    shown = progress.ArtifactProgress("import", job_id, f"bulk import {job_id}: batches stored")
    store = quoted(store_batch_step)
    imported = import_batches(params, batch_size, digests, fingerprint, done, TASKS, store)
    order = imported.citation_ids
    shown.update(len(order), len(order))

    checked = quoted(stored_results_step)(order, job_id, db)
    refs = [c.reference for c in checked]
    claims = link_claims(imported.claims, refs)
    job = ReadResult(references=refs, claims=claims, errors=imported.errors)
    summary = finish_job(params, job, checked, params.chosen_styles(), TASKS)
    return BulkSummary(
        **summary.model_dump(),
        batches=imported.batches,
        batches_skipped=len(done & set(range(imported.batches))),
        bibliographies_skipped="bibliographies_skipped" in summary.metrics,
    )
