"""A bulk import's working tables (its scratch database, tasks/store/scratch.py) beside the
library: what an import keeps of every citation past its batch, on disk, so that its memory
holds a batch, not the list.

- its citation ids in input order (`add_order`, read back a batch at a time by `stored_rows`);
- its match keys, every other job's records and the works its earlier run cited, which its
  dedupe reads (`dedupe_import`: tasks/dedupe/stored.py), and what that dedupe made;
- the library save of those (`save_import`): one transaction, in which the library's DuckDB
  reads each table from a Parquet file the working database writes (rows handed to it as Arrow
  frames stayed in memory until the commit, nearly twice the peak).
"""

import hashlib
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from models.audit import Checked, Claim, InputError, Reference
from models.job import JobParams
from tasks.citation_ids import identify
from tasks.dedupe.stored import add_library, add_previous, dedupe_stored
from tasks.digests import DigestMap
from tasks.frames import checked_from_row
from tasks.job.library import BULK_MEMORY, BULK_THREADS, shared_rows
from tasks.job.render import citation_rows
from tasks.read.inputs import read_batches
from tasks.score.metrics import citation_scores
from tasks.store.library import open_library
from tasks.store.names import LibraryPath, check_job_id
from tasks.store.scratch import Scratch

ORDER = "input_order"  # pos, citation_id
PART = 50_000  # rows moved between the working database and the library at a time
METRIC_COLUMNS = {"completeness": pl.Float64, "is_trusted": pl.Boolean, "confidence": pl.Float64}


def import_spill(out_dir: str, job_id: str) -> Scratch:
    """The import's working database, in a hidden folder beside its job folder (the disk the
    user chose for its outputs). Call holding the job's lock: a killed run's leftover folders
    of this job are removed first."""
    for stale in Path(out_dir).glob(f".citeaudit-import-{job_id}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return Scratch(out_dir, prefix=f".citeaudit-import-{job_id}-")


def add_order(spill: Scratch, ids: Sequence[str]) -> None:
    """A batch's citation ids, next in input order."""
    start = citation_count(spill)
    spill.append(
        ORDER,
        pl.DataFrame({"citation_id": list(ids)}, schema={"citation_id": pl.Utf8}).with_row_index(
            "pos", offset=start
        ),
    )


def citation_count(spill: Scratch) -> int:
    return spill.count(ORDER) if spill.has(ORDER) else 0


def ordered_ids(spill: Scratch, batch_size: int) -> Iterator[list[str]]:
    """The import's citation ids in input order, `batch_size` at a time."""
    if not spill.has(ORDER):
        return
    query = f"SELECT citation_id FROM {ORDER} ORDER BY pos"
    held: list[str] = []
    for part in spill.parts(query, batch_size):
        held.extend(part["citation_id"].to_list())
        while len(held) >= batch_size:
            yield held[:batch_size]
            held = held[batch_size:]
    if held:
        yield held


def stored_rows(
    job_id: str, spill: Scratch, batch_size: int, db: LibraryPath
) -> Iterator[pl.DataFrame]:
    """The import's stored citation rows, a batch at a time, in input order."""
    for ids in ordered_ids(spill, batch_size):
        with open_library(db, threads=BULK_THREADS, memory_limit=BULK_MEMORY) as library:
            yield library.rows_in_order("citations", job_id, ids)


def store_batch(
    job_id: str, batch: int, fingerprint: str, checked: Sequence[Checked], db: LibraryPath
) -> int:
    """One batch's rows, scored, and its `done` mark (tasks/store/bulk.py); how many rows."""
    frame = citation_rows(job_id, checked, citation_scores(checked))
    with open_library(db, threads=BULK_THREADS, memory_limit=BULK_MEMORY) as library:
        library.save_bulk_batch(job_id, batch, fingerprint, frame)
    return frame.height


def checked_of(rows: pl.DataFrame) -> list[Checked]:
    """Stored citation rows made `Checked` again."""
    return [checked_from_row(row) for row in rows.iter_rows(named=True)]


def cited_works(spill: Scratch, rows: int) -> Iterator[pl.DataFrame]:
    """The works the import's citations cite (works.parquet), in work id order."""
    return spill.parts(
        """SELECT * FROM job_works WHERE work_id IN (SELECT work_id FROM job_columns)
           ORDER BY work_id""",
        rows,
    )


def metric_scores(job_id: str, db: LibraryPath) -> pl.DataFrame:
    """The stored citations' scores the job's metrics read (`job_metrics`): three small columns
    of every citation."""
    with open_library(db, threads=BULK_THREADS, memory_limit=BULK_MEMORY) as library:
        parts = list(library.job_citations(job_id, PART, list(METRIC_COLUMNS)))
    return pl.concat(parts) if parts else pl.DataFrame(schema=METRIC_COLUMNS)


def dedupe_import(job_id: str, spill: Scratch, db: LibraryPath) -> int:
    """`dedupe_against_library` of the import's match keys (`add_new`, by the score pass):
    every other job's records and the works the job's earlier run cited are copied beside them a
    part at a time, and the dedupe's outcome left in `spill`; how many citations repeat a work
    (`repeats_within_jobs`). Call under the library's write lock, and `save_import` before
    letting it go: the work ids minted here must not be minted again meanwhile."""
    with open_library(db, memory_limit=BULK_MEMORY) as library:
        for part in library.dedupe_library_parts(job_id, PART):
            add_library(spill, part)
        for part in library.job_works(job_id, PART):
            add_previous(spill, part["work_id"])
    return dedupe_stored(job_id, spill)


def save_import(
    job_id: str,
    inputs: Sequence[str],
    tables: Mapping[str, pl.DataFrame],
    spill: Scratch,
    db: LibraryPath,
) -> None:
    """Replace the job's rows in the library, in one transaction: its `tables` (input errors,
    claims), and from `spill` its dedupe records, its citations' work columns, the works and
    links it touches and the works it retired."""

    def rows(table: str, query: str = "SELECT *") -> Path:
        return spill.parquet(f'{query} FROM "{table}"', table)

    # job ids are letters, digits, '.', '_' and '-' (store.names.check_job_id): safe in SQL
    updates = rows("job_columns", f"SELECT *, '{check_job_id(job_id)}' AS job_id")
    with open_library(db, threads=BULK_THREADS, memory_limit=BULK_MEMORY) as library:
        library.save_job(
            job_id,
            list(inputs),
            {**tables, "dedupe_records": rows("job_records")},
            shared_rows(rows("job_works"), rows("job_links")),
            rows("job_retired"),
            updates={"citations": updates},
        )


# --- the batch stage: read, identify, check and store a batch at a time ------------------------


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


StoreBatch = Callable[[str, int, str, Sequence[Checked], LibraryPath], int]
Report = Callable[[str, int, int | None], None]
Check = Callable[[Sequence[Reference], bool, int], list[Checked]]


@dataclass
class Imported:
    """What an import keeps of its input once the batches are stored (its citation ids are in
    its working database, in input order)."""

    claims: list[Claim] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    batches: int = 0


def import_batches(
    params: JobParams,
    batch_size: int,
    digests: dict[str, str],
    fingerprint: str,
    done: set[int],
    check: Check,
    store: StoreBatch,
    spill: Scratch,
    db: LibraryPath,
    report: Report,
) -> Imported:
    """Read, identify, check and store the input a batch at a time (the batches in `done` are
    read but neither checked nor stored again), the citation ids in input order into `spill`.
    `digests`: file_digests of the inputs; `report`: progress, (stage, done, total)."""
    seen = DigestMap()  # a million ids: digests, not strings
    imported = Imported()
    stored = 0
    for read in read_batches(params.inputs, params.input_format, batch_size):
        job = identify(read, digests, seen)  # ids keyed by content: a renamed copy resumes
        add_order(spill, [ref.citation_id for ref in job.references])
        imported.claims.extend(job.claims)
        imported.errors.extend(job.errors)
        if not job.references:
            continue
        number = imported.batches
        imported.batches += 1
        if number in done:
            stored += len(job.references)
        else:
            checked = check(job.references, params.offline, params.chunk_size)
            stored += store(params.job_id, number, fingerprint, checked, db)
        report("import", stored, None)  # the total is known once all is read
    report("import", stored, stored)
    return imported
