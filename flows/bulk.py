"""bulk_import: a large reference list (100k+) into the library, in resumable batches.

per batch of `batch_size` references: read -> identify -> validate -> store rows + mark batch
done (one transaction); then support, dedupe, score, render and write the job folder from the
stored rows, a batch at a time

The input is read as the batches are consumed (tasks/read:stream_inputs), and the job folder is
built from the stored rows a batch at a time (`finish_import`: three passes over them), so
memory holds one batch plus a few columns of every citation (its id, scores, dedupe keys, work
id), not the list. The exports list every item; past csl_styles.MAX_BIBLIOGRAPHY_ITEMS no
bibliography is rendered, and past report.MAX_REPORTED_CITATIONS the report lists that many
flagged citations and counts the rest (citations.parquet holds them all).

A re-run of the same job on the same input skips the batches already stored (it reads them
again, but does not check them), so an import that crashed or was stopped resumes where it
stopped and ends with the same outputs as one that ran through. The input fingerprint (file
contents, format, batch size) keys the progress: changed input starts over."""

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import polars as pl
from prefect import flow

from flows import progress
from flows.runners import task_runner
from flows.steps import (
    TASKS,
    Rendered,
    Stages,
    citation_table,
    dedupe_against_library,
    identify,
    listing,
    other_tables,
    quoted,
    read_batches,
    report_files,
    save_to_library,
    stage_task,
    summarize,
    write_outputs,
)
from models.audit import Checked, Claim, InputError, ReadResult
from models.csl import CSLItem
from models.job import BulkSummary, JobParams, JobSummary
from tasks import frames, report
from tasks.citation_ids import link_claims
from tasks.dedupe.job import JobDedupe, job_records, repeats_within_jobs
from tasks.frames import checked_from_row
from tasks.render import csl_styles, exports
from tasks.render.selection import bibliography_items, export_entries, unconfirmed
from tasks.score.metrics import Assessment, Tally, assessment, citation_scores
from tasks.store import JobFolder, Library, check_job_id, db_path_from_env, write_lock
from tasks.store.schema import library_tables

DEFAULT_BATCH = 5_000
# An import's library connections run DuckDB on one thread: with two, its writes and reads held
# ~10% more memory at the peak (40,000 citations: 751 MB against 795 MB; each thread's own
# buffers and partial row groups). An audit keeps one per core: one thread made its library
# steps slower (ratio 1.21-1.25 against 1.17 on bench.audit_throughput).
BULK_THREADS = 1


def _library(db: str | None) -> Library:
    """The library, opened as an import opens it (on `BULK_THREADS`)."""
    return Library(db_path_from_env(db), threads=BULK_THREADS)


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


@stage_task("bulk-batches-done")
def batches_done_step(job_id: str, fingerprint: str, db: str | None) -> set[int]:
    with _library(db) as library:
        return library.bulk_batches_done(job_id, fingerprint)


def store_batch(
    job_id: str, batch: int, fingerprint: str, checked: Sequence[Checked], db: str | None
) -> int:
    """One batch's rows and its `done` mark (tasks/store/bulk.py); how many rows."""
    frame = frames.citations_frame(job_id, checked)
    with _library(db) as library:
        library.save_bulk_batch(job_id, batch, fingerprint, frame)
    return frame.height


store_batch_step = stage_task("store-batch")(store_batch)

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


def stored_rows(
    job_id: str, ids: Sequence[str], batch_size: int, db: str | None
) -> Iterator[pl.DataFrame]:
    """The job's stored citation rows named by `ids`, in that order, a batch at a time."""
    for start in range(0, len(ids), batch_size):
        with _library(db) as library:
            yield library.rows_in_order("citations", job_id, ids[start : start + batch_size])


def stored_batches(
    job_id: str, order: Sequence[str], batch_size: int, db: str | None
) -> Iterator[list[Checked]]:
    """The job's stored citations a batch at a time, in input order (`order`), made `Checked`
    again: one batch held at a time."""
    for rows in stored_rows(job_id, order, batch_size, db):
        yield [checked_from_row(row) for row in rows.iter_rows(named=True)]


@dataclass
class Scored:
    """What the job-folder stage keeps of every citation: a few columns, never the citations."""

    scores: pl.DataFrame  # metrics.citation_scores
    tally: Tally
    cited: list[Checked]  # the citations claims name (claim support and claim scores need them)


def score_batches(
    job_id: str, order: Sequence[str], claims: Sequence[Claim], batch_size: int, db: str | None
) -> tuple[pl.DataFrame, Scored]:
    """The first pass over the stored batches: dedupe's match keys (`job_records`), and what
    scoring and metrics take."""
    named = {cid for claim in claims for cid in claim.citation_ids}
    records, scores, tally, cited = [], [], Tally(), list[Checked]()
    for checked in stored_batches(job_id, order, batch_size, db):
        records.append(job_records(job_id, checked))
        scores.append(citation_scores(checked))
        tally.add(c.result for c in checked)
        cited.extend(c for c in checked if c.reference.claim_ids or c.citation_id in named)
    keys = pl.concat(records) if records else job_records(job_id, [])
    return keys, Scored(pl.concat(scores) if scores else citation_scores([]), tally, cited)


def batch_work_ids(columns: pl.DataFrame, checked: Sequence[Checked]) -> dict[str, str]:
    """The work ids of a batch's citations (`columns`: the job's DEDUPE_COLUMNS): a dict of
    every citation's would be ~200 bytes a citation held to the end."""
    ids = pl.Series([c.citation_id for c in checked], dtype=pl.Utf8)
    batch = columns.filter(pl.col("citation_id").is_in(ids.implode()))
    return dict(batch.select("citation_id", "work_id").iter_rows())


def export_keys(
    job_id: str, order: Sequence[str], columns: pl.DataFrame, batch_size: int, db: str | None
) -> list[str]:
    """The citation keys of every listed item, in order (the second pass): a key depends on
    every other item's, so they are made before any batch is written."""
    seen: set[str] = set()
    requests = []
    for checked in stored_batches(job_id, order, batch_size, db):
        items = bibliography_items(checked, batch_work_ids(columns, checked), seen)
        requests.extend(exports.key_requests(export_entries(items, checked)))
    return exports.assign_keys(requests)


@dataclass
class Written:
    """What a job folder written batch by batch keeps for its report and bibliographies."""

    count: int = 0  # items listed
    listed: list[CSLItem] = field(default_factory=list)  # all of them, if few enough to render
    marks: dict[str, str] = field(default_factory=dict)  # csl_selection.unconfirmed's
    reported: pl.DataFrame = field(default_factory=pl.DataFrame)  # the citations it lists
    summaries: list[pl.DataFrame] = field(default_factory=list)  # report.SUMMARY_COLUMNS

    def add(self, cites: pl.DataFrame, every: bool) -> None:
        """A batch's citation rows: the report lists all (`every`) or the first flagged ones."""
        self.summaries.append(cites.select(report.SUMMARY_COLUMNS))
        before = self.reported if self.reported.width else cites.head(0)
        if every:
            self.reported = pl.concat([before, cites])
        else:
            cap = report.MAX_REPORTED_CITATIONS
            self.reported = report.reported_citations(before, cites, cap)


def write_batches(
    folder: JobFolder,
    params: JobParams,
    order: Sequence[str],
    works: JobDedupe,
    scores: pl.DataFrame,
    batch_size: int,
) -> Written:
    """citations.parquet and the exports, a batch of stored citations at a time (the last pass
    over them), holding what `render` and `persist` give a whole job."""
    job_id, db = params.job_id, params.db
    keys = export_keys(job_id, order, works.columns, batch_size, db)
    every = len(order) <= report.MAX_REPORTED_CITATIONS
    schema = library_tables()["citations"].columns
    written = Written(count=len(keys))
    seen: set[str] = set()
    with ExitStack() as files:
        add_rows = files.enter_context(folder.appending_parquet("citations.parquet", schema))
        bib, ris, csl = (
            files.enter_context(text_file(folder, name))
            for name in ("references.bib", "references.ris", "references.json")
        )
        # citations.parquet is sorted by citation id, as frames.citations_frame sorts it
        for rows in stored_rows(job_id, sorted(order), batch_size, db):
            cites = citation_table(
                rows.select(list(frames.CITATION_SCHEMA)), scores, works.columns
            ).cast(dict(schema))  # type: ignore[arg-type]
            add_rows(cites)
            written.add(cites, every)
        done = 0
        for checked in stored_batches(job_id, order, batch_size, db):
            listed = bibliography_items(checked, batch_work_ids(works.columns, checked), seen)
            entries = export_entries(listed, checked)
            batch_keys = keys[done : done + len(entries)]
            if entries:
                bib.write(
                    (exports.BIBTEX_BETWEEN if done else "")
                    + exports.to_bibtex(entries, batch_keys)
                )
                ris.write(
                    (exports.RIS_BETWEEN if done else "") + exports.to_ris(entries, batch_keys)
                )
                body = exports.csl_json_records(entries, batch_keys)
                csl.write((exports.CSL_JSON_BETWEEN if done else "[\n") + body)
            done += len(entries)
            if written.count <= csl_styles.MAX_BIBLIOGRAPHY_ITEMS:
                written.listed.extend(listed)
                written.marks |= unconfirmed(listed, checked)
        csl.write("\n]\n" if done else "[]\n")  # as exports.to_csl_json writes it
    return written


@contextmanager
def text_file(folder: JobFolder, name: str) -> Iterator[TextIO]:
    """A text file of the folder written bit by bit, in place once closed."""
    with folder.placing(name) as tmp, tmp.open("w", encoding="utf-8") as handle:
        yield handle


def write_folder(
    params: JobParams,
    job: ReadResult,
    order: Sequence[str],
    works: JobDedupe,
    assessed: Assessment,
    batch_size: int,
) -> tuple[Rendered, str]:
    """An import's library rows, then its job folder from its stored citations a batch at a
    time, swapped in whole as `persist` does: what was written (the citations its report lists)
    and the folder's path."""
    job_id, styles = params.job_id, params.chosen_styles()
    target = JobFolder(params.out_dir, job_id)
    with target.replacing() as folder:
        others = other_tables(job_id, job, works, assessed)
        # the citations are stored already: they get their scores and work columns. Saved
        # before the folder is written, not after: DuckDB holds a transaction's rows in memory
        # until it commits (~2 KB a row), which would come on top of what writing the folder
        # leaves allocated. The folder is still swapped in only once the library holds the rows.
        updates = assessed.citation_scores.join(works.columns, on="citation_id", how="left")
        updated = {"citations": updates.with_columns(job_id=pl.lit(job_id))}
        save_to_library(job_id, params.inputs, others, works, params.db, updated, BULK_THREADS)
        del updates, updated  # not held while the folder is written
        written = write_batches(folder, params, order, works, assessed.citation_scores, batch_size)
        listed = listing(written.listed, written.count, written.marks, styles)
        every = len(order) <= report.MAX_REPORTED_CITATIONS
        whole = None if every else pl.concat(written.summaries)
        reported = (
            written.reported
            if written.reported.width
            else citation_table(
                frames.citations_frame(job_id, []), assessed.citation_scores, works.columns
            )
        )
        tables = {"citations": reported, **others}
        files = listed.files | report_files(
            job_id, tables, listed, written.marks, works.links, whole
        )
        metrics = listed.metrics(assessed.metrics)
        rendered = Rendered(job_id, tables, files, works, metrics, job.errors, whole)
        write_outputs(folder, rendered, citations_written=True)
    return rendered, str(target.path)


write_folder_step = stage_task("write-job-folder")(write_folder)
score_batches_step = stage_task("score-batches")(score_batches)
dedupe_step = stage_task("dedupe")(dedupe_against_library)


def finish_import(
    params: JobParams, job: ReadResult, order: Sequence[str], batch_size: int
) -> JobSummary:
    """How an import ends once its citations are stored: `finish_job`'s stages, each over the
    stored citations a batch at a time (support -> dedupe -> score -> library rows -> render
    + job folder -> publish), so that memory holds a batch and a few columns of every citation."""
    job_id, db = params.job_id, params.db
    records, scored = quoted(score_batches_step)(job_id, order, job.claims, batch_size, db)
    claims = link_claims(job.claims, [c.reference for c in scored.cited])
    job = ReadResult(references=[], claims=claims, errors=job.errors)
    supports = TASKS.support(claims, scored.cited)
    with write_lock(db):
        works = quoted(dedupe_step)(job_id, records, db)
        # `works` holds them with their work ids: not kept twice through the save and the
        # folder (-24 MB at once at 40,000 citations)
        del records
        duplicates = repeats_within_jobs(works.columns).height
        assessed = assessment(
            scored.scores, scored.tally, claims, scored.cited, duplicates, supports
        )
        rendered, out = quoted(write_folder_step)(params, job, order, works, assessed, batch_size)
    TASKS.publish(rendered)
    return summarize(rendered, out)


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

    job = ReadResult(references=[], claims=imported.claims, errors=imported.errors)
    summary = finish_import(params, job, order, batch_size)
    return BulkSummary(
        **summary.model_dump(),
        batches=imported.batches,
        batches_skipped=len(done & set(range(imported.batches))),
        bibliographies_skipped="bibliographies_skipped" in summary.metrics,
    )
