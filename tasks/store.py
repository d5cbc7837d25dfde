"""Everything citeaudit writes: the DuckDB library and the per-job output folder.

Writes are crash-safe: files are written to a temporary name in the same folder and renamed into
place (readers never see half a file), and a job's rows are replaced inside one DuckDB transaction
(a re-run replaces, never duplicates). All SQL takes its values as parameters or Arrow frames."""

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
DEFAULT_DB = "citeaudit.duckdb"


class UnsafeJobId(ValueError):
    pass


def check_job_id(job_id: str) -> str:
    """Job ids name folders: letters, digits, `.`, `_`, `-` only, and never `..`."""
    if not _JOB_ID.match(job_id) or ".." in job_id:
        raise UnsafeJobId(
            f"invalid job id {job_id!r}: use letters, digits, '.', '_' and '-' (no '..', no '/')"
        )
    return job_id


def db_path_from_env(explicit: str | None = None) -> Path:
    return Path(explicit or os.environ.get("CITEAUDIT_DB") or DEFAULT_DB)


class JobFolder:
    """`OUT/JOB/`: the only place a job's files go."""

    def __init__(self, out_dir: Path | str, job_id: str) -> None:
        self.path = Path(out_dir) / check_job_id(job_id)

    def file(self, name: str) -> Path:
        if not _FILE_NAME.match(name) or ".." in name:
            raise ValueError(f"refusing to write {name!r}: not a plain file name")
        return self.path / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        target = self.file(name)
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def write_text(self, name: str, text: str) -> Path:
        return self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False, default=str))

    def write_parquet(self, name: str, frame: pl.DataFrame) -> Path:
        target = self.file(name)
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        os.close(fd)
        try:
            frame.write_parquet(tmp, statistics=False)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target


class Library:
    """The persistent DuckDB library: jobs, their citations, input errors and claims.

    Tables follow the frames given to them: a new column in a frame is added to the table, so an
    older library file keeps working after an upgrade."""

    JOB_TABLES = ("citations", "input_errors", "claims")

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if self.path.parent != Path(""):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = duckdb.connect(str(self.path))
        self.con.execute(
            """CREATE TABLE IF NOT EXISTS jobs (
                job_id VARCHAR PRIMARY KEY,
                created_at TIMESTAMPTZ,
                updated_at TIMESTAMPTZ,
                inputs VARCHAR,
                n_citations BIGINT,
                n_input_errors BIGINT,
                status_counts VARCHAR
            )"""
        )

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Library":
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

    def _table_columns(self, table: str) -> list[str]:
        rows = self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
        return [r[0] for r in rows]

    def _ensure_table(self, table: str, frame: pl.DataFrame) -> None:
        self.con.register("incoming", frame.head(0).to_arrow())
        try:
            existing = self._table_columns(table)
            if not existing:
                self.con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM incoming')
                return
            probe = self.con.execute("DESCRIBE SELECT * FROM incoming").fetchall()
            for name, sql_type, *_ in probe:
                if name not in existing:
                    self.con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {sql_type}')
        finally:
            self.con.unregister("incoming")

    def replace_job_rows(self, table: str, job_id: str, frame: pl.DataFrame) -> None:
        """Replace one job's rows of `table` (call inside `transaction()`)."""
        if table not in self.JOB_TABLES + ("works", "work_links"):
            raise ValueError(f"unknown table {table}")
        self._ensure_table(table, frame)
        self.con.execute(f'DELETE FROM "{table}" WHERE job_id = ?', [job_id])
        if frame.height:
            self.con.register("incoming", frame.to_arrow())
            try:
                self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')
            finally:
                self.con.unregister("incoming")

    def save_job(
        self,
        job_id: str,
        inputs: list[str],
        frames: dict[str, pl.DataFrame],
    ) -> None:
        """Store a job's frames, replacing any earlier run of the same job, atomically."""
        citations = frames["citations"]
        counts = (
            dict(citations.group_by("status").len().sort("status").iter_rows())
            if citations.height
            else {}
        )
        now = datetime.now(UTC)
        with self.transaction() as con:
            for table, frame in frames.items():
                self.replace_job_rows(table, job_id, frame)
            con.execute(
                """INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (job_id) DO UPDATE SET updated_at = excluded.updated_at,
                     inputs = excluded.inputs, n_citations = excluded.n_citations,
                     n_input_errors = excluded.n_input_errors,
                     status_counts = excluded.status_counts""",
                [
                    job_id,
                    now,
                    now,
                    json.dumps(inputs),
                    citations.height,
                    frames.get("input_errors", pl.DataFrame()).height,
                    json.dumps(counts, sort_keys=True),
                ],
            )

    def table(self, table: str, job_id: str | None = None) -> pl.DataFrame:
        if not self._table_columns(table):
            return pl.DataFrame()
        if job_id is None:
            return self.con.sql(f'SELECT * FROM "{table}"').pl()
        return self.con.sql(f'SELECT * FROM "{table}" WHERE job_id = ?', params=[job_id]).pl()

    def jobs(self) -> pl.DataFrame:
        return self.con.sql("SELECT * FROM jobs ORDER BY job_id").pl()
