"""Everything citeaudit writes: the job folders (jobfolder.py) and the library (library.py: a
DuckDB file, or a DuckLake with a PostgreSQL catalog in lake.py; its lock in lock.py, its
declared schema and migrations in schema.py, bulk-import progress in bulk.py, scheduled-audit
updates in recheck.py)."""

from tasks.store.core import (
    DEFAULT_DB,
    NotALibrary,
    check_library,
    db_path_from_env,
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
from tasks.store.library import Library, write_lock
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
    "db_path_from_env",
    "job_lock",
    "library_exists",
    "shared_mode",
    "write_atomically",
    "write_lock",
]
