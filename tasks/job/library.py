"""The job's side of the library: the job's rows saved, and its stored citations read back a
batch at a time (a bulk import's job folder is written so). The library is opened by
tasks.store.open_library, at the `LibraryPath` the entry point resolved.
"""

from collections.abc import Iterator, Sequence

import polars as pl

from models.audit import Checked
from tasks.dedupe.job import JobDedupe
from tasks.frames import checked_from_row
from tasks.store import LibraryPath, open_library

# An import's library connections run DuckDB on one thread: with two, its writes and reads held
# ~10% more memory at the peak (40,000 citations: 751 MB against 795 MB; each thread's own
# buffers and partial row groups). An audit keeps one per core: one thread made its library
# steps slower (ratio 1.21-1.25 against 1.17 on bench.audit_throughput).
BULK_THREADS = 1


def save_to_library(
    job_id: str,
    inputs: Sequence[str],
    tables: dict[str, pl.DataFrame],
    works: JobDedupe,
    db: LibraryPath,
    updates: dict[str, pl.DataFrame] | None = None,
    threads: int | None = None,
) -> None:
    """Replace the job's rows in the library, and the works and links it touches (`updates`:
    columns to set on rows stored already; `threads`: DuckDB's for the write)."""
    with open_library(db, threads=threads) as library:
        library.save_job(
            job_id, list(inputs), tables, shared_rows(works), works.retired, updates=updates
        )


def shared_rows(works: JobDedupe) -> dict[str, tuple[pl.DataFrame, Sequence[str]]]:
    """The library-wide rows a dedupe brings, with their keys: works and the links between them."""
    return {
        "works": (works.works, ["work_id"]),
        "work_links": (works.links, ["work_id_a", "work_id_b", "kind"]),
    }


def stored_rows(
    job_id: str, ids: Sequence[str], batch_size: int, db: LibraryPath
) -> Iterator[pl.DataFrame]:
    """The job's stored citation rows named by `ids`, in that order, a batch at a time."""
    for start in range(0, len(ids), batch_size):
        with open_library(db, threads=BULK_THREADS) as library:
            yield library.rows_in_order("citations", job_id, ids[start : start + batch_size])


def stored_batches(
    job_id: str, order: Sequence[str], batch_size: int, db: LibraryPath
) -> Iterator[list[Checked]]:
    """The job's stored citations a batch at a time, in input order (`order`), made `Checked`
    again: one batch held at a time."""
    for rows in stored_rows(job_id, order, batch_size, db):
        yield [checked_from_row(row) for row in rows.iter_rows(named=True)]
