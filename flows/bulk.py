"""bulk_import: a large reference list (100k+) into the library, in resumable batches.

per batch of `batch_size` references: read -> identify -> validate -> store rows + mark batch
done (one transaction); then finish (support, dedupe, score, render and write the job folder
from the stored rows, a batch at a time: tasks/job.finish) -> publish

The input is read as the batches are consumed (tasks/read:stream_inputs), and what the import
keeps of every citation past its batch (its id in input order, its match keys, its dedupe) is
kept in a working database on disk (tasks/job/batches.py), not in memory: the dedupe runs there
a group of records at a time, the library save streams from it, and the job folder is built
from the stored rows a batch at a time (tasks/job.finish: three passes over them). So memory
holds about a batch, whatever the list's length (bench/RESULTS.md: bulk-import-memory). The
exports list every item; past citeproc.MAX_BIBLIOGRAPHY_ITEMS no bibliography is rendered, and
past report.MAX_REPORTED_CITATIONS the report lists that many flagged citations and
counts the rest (citations.parquet holds them all).

A re-run of the same job on the same input skips the batches already stored (it reads them
again, but does not check them), so an import that crashed or was stopped resumes where it
stopped and ends with the same outputs as one that ran through. The input fingerprint (file
contents, format, batch size) keys the progress: changed input starts over."""

from prefect import flow

from flows import progress
from flows.runners import task_runner
from flows.steps import (
    check_all_tasks,
    finish_task,
    publish_task,
    quoted,
    stage_task,
)
from models.audit import ReadResult
from models.job import BulkSummary, JobParams
from tasks.job.audited import summarize
from tasks.job.batches import (
    citation_count,
    file_digests,
    import_batches,
    import_spill,
    input_fingerprint,
    store_batch,
)
from tasks.job.finish import StoredChecks
from tasks.job.library import BULK_THREADS
from tasks.store.library import open_library
from tasks.store.lock import job_lock
from tasks.store.names import LibraryPath, check_job_id, library_at

DEFAULT_BATCH = 5_000


@stage_task("bulk-batches-done")
def batches_done_step(job_id: str, fingerprint: str, db: LibraryPath) -> set[int]:
    with open_library(db, threads=BULK_THREADS) as library:
        return library.bulk_batches_done(job_id, fingerprint)


store_batch_step = stage_task("store-batch")(store_batch)


@flow(name="bulk_import", task_runner=task_runner(), log_prints=False)
def bulk_import(params: JobParams, batch_size: int = DEFAULT_BATCH) -> BulkSummary:
    """Import a large reference list into the library as job `params.job_id`, resumably.

    Parameters:
        params: the job (as audit_job's); bibliographies are skipped above
            citeproc.MAX_BIBLIOGRAPHY_ITEMS items, as audit_job skips them.
        batch_size: references read, checked and stored per batch (the unit of resumption and
            of memory).

    Returns audit_job's summary plus `batches`, `batches_skipped` (already stored by an earlier
    run) and `bibliographies_skipped`.
    """
    job_id, db = check_job_id(params.job_id), library_at(params.db)  # resolved once, here
    with job_lock(db, job_id):  # the job is this run's alone (two at once mixed)
        return import_job(params, batch_size, db)


def import_job(params: JobParams, batch_size: int, db: LibraryPath) -> BulkSummary:
    """bulk_import's work, under the job's lock."""
    job_id = params.job_id
    digests = file_digests(params.inputs)
    fingerprint = input_fingerprint(
        [digests[p] for p in params.inputs], params.input_format, batch_size
    )
    done = batches_done_step(job_id, fingerprint, db)
    shown = progress.ArtifactProgress("import", job_id, f"bulk import {job_id}: batches stored")
    store = quoted(store_batch_step)
    with import_spill(params.out_dir, job_id) as spill:
        imported = import_batches(
            params,
            batch_size,
            digests,
            fingerprint,
            done,
            check_all_tasks,
            store,
            spill,
            db,
            progress.report,
        )
        count = citation_count(spill)
        shown.update(count, count)
        job = ReadResult(references=[], claims=imported.claims, errors=imported.errors)
        stored = StoredChecks(spill, batch_size)
        rendered, out = quoted(finish_task)(params, job, stored, db)
    quoted(publish_task)(rendered)
    summary = summarize(rendered, out)
    return BulkSummary(
        **summary.model_dump(),
        batches=imported.batches,
        batches_skipped=len(done & set(range(imported.batches))),
        bibliographies_skipped="bibliographies_skipped" in summary.metrics,
    )
