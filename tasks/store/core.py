"""Opening the library: the lock first (tasks/store/lock.py), then DuckDB, read-only for
readers; the schema brought up to date by writers. All SQL takes its values as parameters or
Arrow frames."""

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.store.lock import library_lock
from tasks.store.schema import migrate

DEFAULT_DB = "citeaudit.duckdb"


def db_path_from_env(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("CITEAUDIT_DB") or DEFAULT_DB)


class LibraryCore:
    """An open library. Writers (the default) hold it exclusively until closed; readers
    (`read_only=True`) share it with other readers and never change the file."""

    JOB_TABLES = ("citations", "input_errors", "claims", "dedupe_records")
    SHARED_TABLES = ("works", "work_links")

    def __init__(self, path: Path | str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if not read_only and self.path.parent != Path(""):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stack = ExitStack()
        self._stack.enter_context(library_lock(self.path, exclusive=not read_only))
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
            if not read_only:
                migrate(self.con)
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
    def _incoming(self, frame: pl.DataFrame) -> Iterator[None]:
        """`frame` readable as the table `incoming` in SQL, for the block's duration."""
        self.con.register("incoming", frame.to_arrow())
        try:
            yield
        finally:
            self.con.unregister("incoming")

    def _table_columns(self, table: str) -> list[str]:
        rows = self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
        return [r[0] for r in rows]

    def _ensure_table(self, table: str, frame: pl.DataFrame) -> None:
        """A frame table with the columns of the frame's declared schema."""
        with self._incoming(frame.head(0)):
            existing = self._table_columns(table)
            if not existing:
                self.con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM incoming')
                return
            probe = self.con.execute("DESCRIBE SELECT * FROM incoming").fetchall()
            for name, sql_type, *_ in probe:
                if name not in existing:
                    self.con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {sql_type}')

    def replace_job_rows(self, table: str, job_id: str, frame: pl.DataFrame) -> None:
        """Replace one job's rows of `table` (call inside `transaction()`)."""
        if table not in self.JOB_TABLES:
            raise ValueError(f"unknown table {table}")
        self._ensure_table(table, frame)
        self.con.execute(f'DELETE FROM "{table}" WHERE job_id = ?', [job_id])
        self._insert(table, frame)

    def upsert_rows(self, table: str, frame: pl.DataFrame, keys: Sequence[str]) -> None:
        """Insert rows, replacing those with the same `keys` (call inside `transaction()`)."""
        if table not in self.SHARED_TABLES:
            raise ValueError(f"unknown table {table}")
        self._ensure_table(table, frame)
        if not frame.height:
            return
        match = " AND ".join(f'"{table}"."{k}" IS NOT DISTINCT FROM incoming."{k}"' for k in keys)
        with self._incoming(frame):
            self.con.execute(f'DELETE FROM "{table}" USING incoming WHERE {match}')
            self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')

    def _upsert_citations(self, frame: pl.DataFrame) -> None:
        """Replace rows of `citations` by (job_id, citation_id) (call inside `transaction()`)."""
        self._ensure_table("citations", frame)
        with self._incoming(frame):
            self.con.execute(
                """DELETE FROM citations USING incoming
                   WHERE citations.job_id = incoming.job_id
                     AND citations.citation_id = incoming.citation_id"""
            )
            self.con.execute("INSERT INTO citations BY NAME SELECT * FROM incoming")

    def _insert(self, table: str, frame: pl.DataFrame) -> None:
        if not frame.height:
            return
        with self._incoming(frame):
            self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')

    def table(self, table: str, job_id: str | None = None) -> pl.DataFrame:
        if not self._table_columns(table):
            return pl.DataFrame()
        if job_id is None:
            return self.con.sql(f'SELECT * FROM "{table}"').pl()
        return self.con.sql(f'SELECT * FROM "{table}" WHERE job_id = ?', params=[job_id]).pl()

    def jobs(self) -> pl.DataFrame:
        if not self._table_columns("jobs"):
            return pl.DataFrame()
        return self.con.sql("SELECT * FROM jobs ORDER BY job_id").pl()

    def job(self, job_id: str) -> dict[str, Any] | None:
        """The job's row of `jobs` (status_counts decoded), or None if the library lacks it."""
        if not self._table_columns("jobs"):
            return None
        rows = self.con.sql("SELECT * FROM jobs WHERE job_id = ?", params=[job_id]).pl()
        if not rows.height:
            return None
        row = rows.row(0, named=True)
        row["status_counts"] = json.loads(row["status_counts"] or "{}")
        return row
