"""The job's side of the library: the one place a library is opened and the job's rows saved
(a bulk import's a part at a time: tasks/job/imported.py)."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from tasks.dedupe.job import JobDedupe
from tasks.store import Lake, Library, db_path_from_env, library_exists
from tasks.store.core import Rows

# An import's library connections run DuckDB on one thread: with two, its writes and reads held
# ~10% more memory at the peak (40,000 citations: 751 MB against 795 MB; each thread's own
# buffers and partial row groups). An audit keeps one per core: one thread made its library
# steps slower (ratio 1.21-1.25 against 1.17 on bench.audit_throughput).
BULK_THREADS = 1
# ... and hold at most this before DuckDB writes out (the save's one transaction of a million
# rows would otherwise stay in memory until its commit, ~2 KB a row).
BULK_MEMORY = "300MB"


LibraryName = str | Path | Lake | None  # a name (--db, None: $CITEAUDIT_DB) or a resolved path


def library_at(db: LibraryName) -> Path | Lake:
    """Where the library `db` names is (else $CITEAUDIT_DB, else ./citeaudit.duckdb)."""
    return db if isinstance(db, Path | Lake) else db_path_from_env(db)


def open_library(
    db: LibraryName,
    read_only: bool = False,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> Library:
    """The library `db` names: to write, or `read_only` to read; `threads`: DuckDB's for the
    connection (default one per core), `memory_limit` what DuckDB may hold (default its own).
    Every library opened for a job is opened here."""
    return Library(library_at(db), read_only=read_only, threads=threads, memory_limit=memory_limit)


def has_library(db: LibraryName) -> bool:
    """Whether the library `db` names is there to read (a lake's catalog is asked on opening)."""
    return library_exists(library_at(db))


def save_to_library(
    job_id: str,
    inputs: Sequence[str],
    tables: Mapping[str, Rows],
    works: JobDedupe,
    db: str | None,
) -> None:
    """Replace the job's rows in the library, and the works and links it touches."""
    with open_library(db) as library:
        library.save_job(
            job_id, list(inputs), tables, shared_rows(works.works, works.links), works.retired
        )


def shared_rows(works: Rows, links: Rows) -> dict[str, tuple[Rows, Sequence[str]]]:
    """The library-wide rows a dedupe brings, with their keys: works and the links between them."""
    return {
        "works": (works, ["work_id"]),
        "work_links": (links, ["work_id_a", "work_id_b", "kind"]),
    }
