"""Everything citeaudit writes: the job folders (jobfolder.py) and the library (library.py: a
DuckDB file, or a DuckLake with a PostgreSQL catalog in lake.py; its lock in lock.py, its
declared schema and migrations in schema.py, bulk-import progress in bulk.py, scheduled-audit
updates in recheck.py).

A library's name is resolved in one place (`library_at`: --db, else $CITEAUDIT_DB) and a
library opened in one (`open_library`); an entry point resolves the name once and passes the
`LibraryPath` down."""

from tasks.store.core import (
    DEFAULT_DB,
    LibraryPath,
    NotALibrary,
    check_library,
    library_at,
    library_exists,
)
from tasks.store.jobfolder import (
    JobFolder,
    UnsafeJobId,
    check_job_id,
    shared_mode,
    write_atomically,
)
from tasks.store.lake import Lake, LakeUnavailable
from tasks.store.library import Library, open_library, write_lock
from tasks.store.lock import JobBusy, JobNotStored, LibraryLocked, job_lock

__all__ = [
    "DEFAULT_DB",
    "JobFolder",
    "Lake",
    "LakeUnavailable",
    "JobBusy",
    "JobNotStored",
    "Library",
    "LibraryLocked",
    "NotALibrary",
    "UnsafeJobId",
    "check_job_id",
    "check_library",
    "job_lock",
    "library_at",
    "library_exists",
    "LibraryPath",
    "open_library",
    "shared_mode",
    "write_atomically",
    "write_lock",
]
