"""The names a user gives the store, resolved and checked with the standard library alone: a
library's (--db, else $CITEAUDIT_DB: a DuckDB file or a DuckLake) and a job's (--job, a folder
name). A command checks both before DuckDB, Polars and pyarrow load, so that a mistyped one is a
usage error at once (tests/test_exit_codes.py runs them and asserts those were not imported).
A name or path that DuckDB must take in the statement's text is `sql_string`'s."""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tasks.errors import UsageError

DEFAULT_DB = "citeaudit.duckdb"

# A DuckLake's catalog database (tasks/store/lake.py): named by a connection string.
LAKE_PREFIXES = ("postgresql://", "postgres://", "ducklake:postgres:")

_SECRET = re.compile(r"(://[^:/@\s]*:)[^@\s]*@|(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def sql_string(text: str) -> str:
    """`text` as an SQL string literal, for the statements DuckDB takes no parameters in
    (ATTACH, LOAD, COPY, SET, a view's body)."""
    return "'" + text.replace("'", "''") + "'"


def redact(text: str) -> str:
    """`text` with the passwords of connection strings in it replaced by ***."""
    return _SECRET.sub(lambda m: f"{m[1]}***@" if m[1] else f"{m[2]}***", text)


@dataclass(frozen=True)
class Lake:
    catalog: str  # libpq connection string or URI of the catalog database
    data_path: str | None = None  # where new data files go; the catalog's own once made

    def __str__(self) -> str:
        return f"ducklake:postgres:{redact(self.catalog)}"


def lake_at(text: str) -> Lake | None:
    """The lake `text` names (with $CITEAUDIT_LAKE_DATA), or None if it names a file."""
    for prefix in LAKE_PREFIXES:
        if text.startswith(prefix):
            catalog = text.removeprefix("ducklake:postgres:")
            return Lake(catalog, os.environ.get("CITEAUDIT_LAKE_DATA") or None)
    return None


# Where a library is, resolved: a DuckDB file or a DuckLake.
LibraryPath = Path | Lake


def library_at(db: str | LibraryPath | None = None) -> LibraryPath:
    """The library `db` names (--db; one given resolved is kept), else $CITEAUDIT_DB, else
    ./citeaudit.duckdb: a DuckDB file, or a DuckLake for a `postgresql://` or
    `ducklake:postgres:` name. The one place a library's name is resolved: an entry point (a
    command, a flow, the agent service) resolves it once and passes the result down."""
    if isinstance(db, Path | Lake):
        return db
    text = db or os.environ.get("CITEAUDIT_DB") or DEFAULT_DB
    return lake_at(text) or Path(text)


def library_exists(where: LibraryPath) -> bool:
    """Whether there is a library to read (a lake's catalog is asked on opening)."""
    return isinstance(where, Lake) or where.is_file()


class NotALibrary(UsageError):
    """The library's path names a folder or a file that is no DuckDB database."""


# Bytes 8-11 of every DuckDB database file (its main header's magic).
_DUCKDB_MAGIC = b"DUCK"


def check_library(where: LibraryPath) -> None:
    """NotALibrary if `where` is a folder or a file DuckDB did not write (an empty one included):
    a mistyped --db (refs.bib) is the user's error, found before a job runs, not a failure of
    its store step after every lookup. A path with nothing there is a library to make."""
    if isinstance(where, Lake):
        return
    if where.is_dir():
        raise NotALibrary(f"{where} is a folder, not a library file")
    try:
        with where.open("rb") as handle:
            head = handle.read(12)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise NotALibrary(f"{where}: {exc.strerror or exc}") from exc
    if head[8:12] != _DUCKDB_MAGIC:
        raise NotALibrary(f"{where} is not a library: not a DuckDB database file")


_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UnsafeJobId(UsageError):
    pass


def check_job_id(job_id: str) -> str:
    """Job ids name folders: letters, digits, `.`, `_`, `-` only, and never `..`."""
    if not _JOB_ID.fullmatch(job_id) or ".." in job_id:
        raise UnsafeJobId(
            f"invalid job id {job_id!r}: use letters, digits, '.', '_' and '-' (no '..', no '/')"
        )
    return job_id
