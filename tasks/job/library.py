"""The job's side of the library: the job's rows saved (a bulk import's a part at a time:
tasks/job/batches.py). The library is opened by tasks.store.open_library, at the `LibraryPath`
the entry point resolved."""

from collections.abc import Mapping, Sequence

from tasks.dedupe.job import JobDedupe
from tasks.store.core import Rows
from tasks.store.library import open_library
from tasks.store.names import LibraryPath

# An import's library connections run DuckDB on one thread: with two, its writes and reads held
# more memory at the peak (each thread's own buffers and partial row groups). An audit keeps one
# per core: one thread made its library steps slower (bench.audit_throughput).
BULK_THREADS = 1
# ... and hold at most this in DuckDB's buffers before it spills or writes out (a save's one
# transaction of a million rows included: tasks/job/batches.save_import).
BULK_MEMORY = "300MB"


def save_to_library(
    job_id: str,
    inputs: Sequence[str],
    tables: Mapping[str, Rows],
    works: JobDedupe,
    db: LibraryPath,
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
