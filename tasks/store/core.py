"""Opening the library: the lock first (tasks/store/lock.py), then DuckDB, read-only for
readers; the schema brought up to date by writers. Every write goes to a declared table
(tasks/store/schema.py) and is refused if it brings an undeclared column. All SQL takes its
values as parameters, Arrow frames or Parquet files."""

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.store.lake import connect_lake
from tasks.store.lock import library_lock
from tasks.store.names import Lake, LibraryPath, sql_string
from tasks.store.schema import library_tables, migrate, table_names

# A table's rows to write: whole, a part at a time (each part is written before the next is
# read, all in one transaction), or a Parquet file DuckDB reads itself (a bulk import's working
# tables): rows handed over as Arrow stayed in memory until the transaction ended, where
# DuckDB's own scan of a file keeps to its memory limit (half the memory at a million records).
Part = pl.DataFrame | Path
Rows = Part | Iterable[pl.DataFrame]


def parts(rows: Rows) -> Iterator[Part]:
    if isinstance(rows, pl.DataFrame | Path):
        yield rows
    else:
        yield from rows


def _columns(part: Part) -> list[str]:
    return part.columns if isinstance(part, pl.DataFrame) else pq.read_schema(part).names


def _height(part: Part) -> int:
    return part.height if isinstance(part, pl.DataFrame) else pq.read_metadata(part).num_rows


class LibraryCore:
    """An open library. Writers (the default) hold it exclusively until closed; readers
    (`read_only=True`) share it with other readers and never change it."""

    JOB_TABLES = ("citations", "input_errors", "claims", "dedupe_records")
    SHARED_TABLES = ("works", "work_links")
    # what names one row of a job table (input errors have no key: only replaced with the job)
    JOB_KEYS = {
        "citations": ("job_id", "citation_id"),
        "claims": ("job_id", "claim_id"),
        "dedupe_records": ("job_id", "citation_id"),
    }

    def __init__(
        self,
        where: LibraryPath,
        read_only: bool = False,
        threads: int | None = None,
        memory_limit: str | None = None,
    ) -> None:
        """`threads`: DuckDB's for this connection (default: one per core); `memory_limit`:
        what DuckDB may hold before it writes out (a transaction's rows too: a bulk import's
        million rows), default its own (80 % of the machine's)."""
        self.where = where
        self.read_only = read_only
        if not read_only and isinstance(self.where, Path) and self.where.parent != Path(""):
            self.where.parent.mkdir(parents=True, exist_ok=True)
        self._stack = ExitStack()
        self._stack.enter_context(library_lock(self.where, exclusive=not read_only))
        try:
            if isinstance(self.where, Lake):
                self.con = connect_lake(self.where, read_only=read_only)
            else:
                self.con = duckdb.connect(str(self.where), read_only=read_only)
            if threads:
                self.con.execute(f"SET threads = {int(threads)}")
            if memory_limit:
                self.con.execute("SET memory_limit = ?", [memory_limit])
            if not read_only:
                # a lake has no primary keys: every write replaces by deleting first
                migrate(self.con, keys=isinstance(self.where, Path))
        except BaseException:
            self._stack.close()
            raise

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self._stack.close()

    def __enter__(self) -> "LibraryCore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self.con
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def _incoming(self, part: Part) -> Iterator[None]:
        """`part` readable as the table `incoming` in SQL, for the block's duration."""
        if isinstance(part, Path):
            self.con.execute(
                "CREATE OR REPLACE TEMP VIEW incoming AS "
                f"SELECT * FROM read_parquet({sql_string(str(part))})"
            )
        else:
            self.con.register("incoming", part.to_arrow())
        try:
            yield
        finally:
            if isinstance(part, Path):
                self.con.execute("DROP VIEW IF EXISTS incoming")
            else:
                self.con.unregister("incoming")

    def _has(self, table: str) -> bool:
        """Whether the library holds `table` (a reader may open a library older than the
        declaration, which writers bring up to date)."""
        return table in table_names(self.con)

    def _check(self, table: str, part: Part) -> None:
        library_tables()[table].check(_columns(part))

    def replace_job_rows(self, table: str, job_id: str, rows: Rows) -> None:
        """Replace one job's rows of `table` (call inside `transaction()`)."""
        if table not in self.JOB_TABLES:
            raise ValueError(f"unknown table {table}")
        self.con.execute(f'DELETE FROM "{table}" WHERE job_id = ?', [job_id])
        for frame in parts(rows):
            self._insert(table, frame)

    def upsert_rows(self, table: str, rows: Rows, keys: Sequence[str]) -> None:
        """Insert rows, replacing those with the same `keys` (call inside `transaction()`)."""
        if table not in self.SHARED_TABLES:
            raise ValueError(f"unknown table {table}")
        for frame in parts(rows):
            self._replace_by(table, frame, keys)

    def upsert_job_rows(self, table: str, rows: Rows) -> None:
        """Insert some of jobs' rows of `table`, replacing those with the same key (call inside
        `transaction()`)."""
        if table not in self.JOB_KEYS:
            raise ValueError(f"no keyed job table {table}")
        for frame in parts(rows):
            self._replace_by(table, frame, self.JOB_KEYS[table])

    def update_job_rows(self, table: str, rows: Rows) -> None:
        """Set the columns the rows bring on the stored rows their keys name (call inside
        `transaction()`): a bulk import's work ids, its rows being stored already."""
        keys = self.JOB_KEYS[table]
        for frame in parts(rows):
            self._check(table, frame)
            values = [c for c in _columns(frame) if c not in keys]
            if not _height(frame) or not values:
                continue
            assign = ", ".join(f'"{c}" = incoming."{c}"' for c in values)
            match = " AND ".join(f'"{table}"."{k}" = incoming."{k}"' for k in keys)
            with self._incoming(frame):
                self.con.execute(f'UPDATE "{table}" SET {assign} FROM incoming WHERE {match}')

    def rows_in_order(self, table: str, job_id: str, ids: Sequence[str]) -> pl.DataFrame:
        """The job's stored rows of `table` named by `ids` (their key's last part), in that order:
        a bulk import reads its citations back a batch at a time."""
        key = self.JOB_KEYS[table][-1]
        order = pl.DataFrame({key: list(ids)}, schema={key: pl.Utf8}).with_row_index("_position")
        with self._incoming(order):
            return self.con.sql(
                f"""SELECT t.* FROM "{table}" t JOIN incoming i ON t."{key}" = i."{key}"
                    WHERE t.job_id = ? ORDER BY i._position""",
                params=[job_id],
            ).pl()

    def _replace_by(self, table: str, frame: Part, keys: Sequence[str]) -> None:
        self._check(table, frame)
        if not _height(frame):
            return
        match = " AND ".join(f'"{table}"."{k}" IS NOT DISTINCT FROM incoming."{k}"' for k in keys)
        with self._incoming(frame):
            self.con.execute(f'DELETE FROM "{table}" USING incoming WHERE {match}')
            self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')

    def _status_counts(self, job_id: str) -> dict[str, int]:
        """How many of the job's stored citations have each status."""
        rows = self.con.execute(
            "SELECT status, count(*) FROM citations WHERE job_id = ? GROUP BY status",
            [job_id],
        ).fetchall()
        return {status: count for status, count in sorted(rows)}

    def _insert(self, table: str, frame: Part) -> None:
        self._check(table, frame)
        if not _height(frame):
            return
        with self._incoming(frame):
            self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')

    def parts(self, query: str, params: list[Any], rows: int) -> Iterator[pl.DataFrame]:
        """A query's rows, `rows` at a time (about: DuckDB's vectors round it), read on a
        cursor of their own: the library may be written between two parts."""
        with self.con.cursor() as cursor:
            for batch in cursor.execute(query, params).to_arrow_reader(rows):
                if batch.num_rows:
                    yield pl.DataFrame(pa.Table.from_batches([batch]))

    def table(self, table: str, job_id: str | None = None) -> pl.DataFrame:
        if not self._has(table):
            return pl.DataFrame()
        if job_id is None:
            return self.con.sql(f'SELECT * FROM "{table}"').pl()
        return self.con.sql(f'SELECT * FROM "{table}" WHERE job_id = ?', params=[job_id]).pl()

    def jobs(self) -> pl.DataFrame:
        if not self._has("jobs"):
            return pl.DataFrame()
        return self.con.sql("SELECT * FROM jobs ORDER BY job_id").pl()

    def job(self, job_id: str) -> dict[str, Any] | None:
        """The job's row of `jobs` (status_counts decoded), or None if the library lacks it."""
        if not self._has("jobs"):
            return None
        rows = self.con.sql("SELECT * FROM jobs WHERE job_id = ?", params=[job_id]).pl()
        if not rows.height:
            return None
        row = rows.row(0, named=True)
        row["status_counts"] = json.loads(row["status_counts"] or "{}")
        return row
