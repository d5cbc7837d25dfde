"""The library as a DuckLake with a PostgreSQL catalog, for writers on several machines.

`CITEAUDIT_DB=postgresql://USER@HOST:PORT/DATABASE` (or `postgres://…`, or
`ducklake:postgres:` followed by any libpq connection string) names the catalog database;
`CITEAUDIT_LAKE_DATA` the folder or object-store prefix every writer reaches, where the lake keeps
its Parquet files (needed once, when the lake is made; the catalog remembers it). Passwords
belong in PGPASSWORD or ~/.pgpass: messages never show the one a connection string holds.

The DuckDB extensions come from their PyPI wheels (the `ducklake` extra), loaded from the
installed package, never downloaded. Writers take turns through a PostgreSQL advisory lock
(`LakeLock`, held by tasks/store/lock.py as the file library holds its lock file): work ids are
minted from what the library holds, so a run holds it from its dedupe's read to its write. A
lock dies with its connection, so a killed writer never leaves the library locked. A lake's name
(`Lake`, `lake_at`) is resolved in tasks/store/names.py, with the file library's."""

import importlib.resources

import duckdb

from tasks.errors import InfrastructureError, MissingExtra
from tasks.store.names import Lake, redact, sql_string

LOCK_KEY = (0x63697465, 0x6C696272)  # "cite" "libr": one writer per catalog database


class LakeUnavailable(InfrastructureError):
    """The lake's extensions, catalog or data path could not be had."""


def _load(con: duckdb.DuckDBPyConnection, name: str) -> None:
    package = f"duckdb_extension_{name}"
    try:
        folder = importlib.resources.files(package)
    except ModuleNotFoundError:
        raise MissingExtra(
            "ducklake", f"a DuckLake library (the {name} DuckDB extension)"
        ) from None
    binary = folder / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not binary.is_file():
        raise LakeUnavailable(
            f"the installed {package} is not built for DuckDB {duckdb.__version__}: "
            "install the version matching duckdb"
        )
    con.execute(f"LOAD {sql_string(str(binary))}")


def _failing(lake: Lake, exc: duckdb.Error) -> LakeUnavailable:
    return LakeUnavailable(f"the library {lake}: {redact(str(exc))}")


def connect_lake(lake: Lake, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection using the lake as its default catalog."""
    con = duckdb.connect()
    try:
        _load(con, "postgres_scanner")
        _load(con, "ducklake")
        options = [f"DATA_PATH {sql_string(lake.data_path)}"] if lake.data_path else []
        if read_only:
            options.append("READ_ONLY")
        clause = f" ({', '.join(options)})" if options else ""
        try:
            catalog = sql_string("ducklake:postgres:" + lake.catalog)
            con.execute(f"ATTACH {catalog} AS library{clause}")
        except duckdb.Error as exc:
            raise _failing(lake, exc) from None
        con.execute("USE library")
    except BaseException:
        con.close()
        raise
    return con


class LakeLock:
    """The lake's writer lock: a transaction-scoped advisory lock on the catalog database, held
    by a connection of its own until `release`. Transaction-scoped because DuckDB's postgres
    extension keeps one server connection only for the length of a transaction; so a server
    whose `idle_in_transaction_session_timeout` is shorter than a write would end the lock."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self.con = duckdb.connect()
        try:
            _load(self.con, "postgres_scanner")
            try:
                self.con.execute(f"ATTACH {sql_string(lake.catalog)} AS catalog (TYPE postgres)")
            except duckdb.Error as exc:
                raise _failing(lake, exc) from None
            self.con.execute("BEGIN TRANSACTION")
        except BaseException:
            self.con.close()
            raise

    def try_acquire(self) -> bool:
        query = f"SELECT pg_try_advisory_xact_lock({LOCK_KEY[0]}, {LOCK_KEY[1]}) AS got"
        row = self.con.execute(f"SELECT got FROM postgres_query('catalog', {sql_string(query)})")
        got = row.fetchone()
        return bool(got and got[0])

    def release(self) -> None:
        self.con.close()  # ends the transaction, and with it the lock
