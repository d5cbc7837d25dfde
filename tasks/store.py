"""Everything citeaudit writes: the DuckDB library and the per-job output folder.

Writes are crash-safe: files are written to a temporary name in the same folder and renamed into
place (readers never see half a file), and a job's rows are replaced inside one DuckDB transaction
(a re-run replaces, never duplicates). All SQL takes its values as parameters or Arrow frames."""

import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
DEFAULT_DB = "citeaudit.duckdb"
# A citation's validation lives on its row of `citations` (one row per input citation, replaced
# with its job); this view shows just the verdicts, for SQL users of the library.
VALIDATIONS_VIEW = """CREATE OR REPLACE VIEW validations AS SELECT
    job_id, citation_id, status, reason, registry, matched_id, match_score, agreement_title,
    agreement_authors, agreement_year, agreement_container, agreement_pages, retracted,
    corrected, expression_of_concern, attempts, error, checked_at
    FROM citations"""


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


def shared_mode() -> int:
    """The mode a new file gets under the user's umask: mkstemp's files are 0600, so a report
    would otherwise be unreadable to the colleagues the umask lets read it."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


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
            os.fchmod(fd, shared_mode())
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
        os.fchmod(fd, shared_mode())
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

    JOB_TABLES = ("citations", "input_errors", "claims", "dedupe_records")
    SHARED_TABLES = ("works", "work_links")

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

    def save_job(
        self,
        job_id: str,
        inputs: list[str],
        frames: dict[str, pl.DataFrame],
        shared: dict[str, tuple[pl.DataFrame, Sequence[str]]] | None = None,
        retired_works: Sequence[str] = (),
    ) -> None:
        """Store a job's frames, replacing any earlier run of the same job, upsert the rows it
        adds to library-wide tables (`shared`: table -> (frame, key columns)) and drop the
        works no citation holds any more (`retired_works`, with their links), atomically."""
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
            for table, (frame, keys) in (shared or {}).items():
                self.upsert_rows(table, frame, keys)
            if retired_works and self._table_columns("works"):
                retired = list(retired_works)
                con.execute("DELETE FROM works WHERE list_contains(?, work_id)", [retired])
                if self._table_columns("work_links"):
                    con.execute(
                        """DELETE FROM work_links
                           WHERE list_contains(?, work_id_a) OR list_contains(?, work_id_b)""",
                        [retired, retired],
                    )
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
            con.execute(VALIDATIONS_VIEW)

    def table(self, table: str, job_id: str | None = None) -> pl.DataFrame:
        if not self._table_columns(table):
            return pl.DataFrame()
        if job_id is None:
            return self.con.sql(f'SELECT * FROM "{table}"').pl()
        return self.con.sql(f'SELECT * FROM "{table}" WHERE job_id = ?', params=[job_id]).pl()

    def dedupe_library(self, exclude_job: str | None = None) -> pl.DataFrame:
        """Every job's dedupe records (but `exclude_job`'s), ids as `JOB/CITATION_ID`."""
        if not self._table_columns("dedupe_records"):
            return pl.DataFrame()
        return self.con.sql(
            """SELECT * EXCLUDE (job_id) FROM dedupe_records
               WHERE job_id IS DISTINCT FROM ? ORDER BY citation_id""",
            params=[exclude_job],
        ).pl()

    def jobs(self) -> pl.DataFrame:
        return self.con.sql("SELECT * FROM jobs ORDER BY job_id").pl()

    def job(self, job_id: str) -> dict[str, Any] | None:
        """The job's row of `jobs` (status_counts decoded), or None if the library lacks it."""
        rows = self.con.sql("SELECT * FROM jobs WHERE job_id = ?", params=[job_id]).pl()
        if not rows.height:
            return None
        row = rows.row(0, named=True)
        row["status_counts"] = json.loads(row["status_counts"] or "{}")
        return row

    # -- bulk imports: batches done, so a stopped import resumes where it stopped

    def _ensure_bulk_progress(self) -> None:
        self.con.execute(
            """CREATE TABLE IF NOT EXISTS bulk_progress (
                job_id VARCHAR, batch BIGINT, fingerprint VARCHAR, n_citations BIGINT,
                done_at TIMESTAMPTZ, PRIMARY KEY (job_id, batch, fingerprint))"""
        )

    def bulk_batches_done(self, job_id: str, fingerprint: str) -> set[int]:
        """Batches of this job already stored for exactly this input. Rows of an earlier
        import of other input (another fingerprint) are dropped: that import starts over."""
        self._ensure_bulk_progress()
        with self.transaction() as con:
            stale = con.execute(
                "SELECT count(*) FROM bulk_progress WHERE job_id = ? AND fingerprint <> ?",
                [job_id, fingerprint],
            ).fetchone()
            if stale and stale[0]:
                con.execute("DELETE FROM bulk_progress WHERE job_id = ?", [job_id])
                if self._table_columns("citations"):
                    con.execute("DELETE FROM citations WHERE job_id = ?", [job_id])
            rows = con.execute(
                "SELECT batch FROM bulk_progress WHERE job_id = ? AND fingerprint = ?",
                [job_id, fingerprint],
            ).fetchall()
        return {int(r[0]) for r in rows}

    def save_bulk_batch(
        self, job_id: str, batch: int, fingerprint: str, citations: pl.DataFrame
    ) -> None:
        """One batch's citation rows and its `done` mark, in one transaction: after a crash a
        batch is either wholly stored and marked, or neither."""
        self._ensure_bulk_progress()
        with self.transaction() as con:
            self._upsert_citations(citations)
            con.execute(
                "INSERT OR REPLACE INTO bulk_progress VALUES (?, ?, ?, ?, ?)",
                [job_id, batch, fingerprint, citations.height, datetime.now(UTC)],
            )

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

    # -- scheduled audits

    def stale_citations(self, before: datetime, job_ids: list[str] | None = None) -> pl.DataFrame:
        """Citations with a DOI, PMID or arXiv id last checked before `before`, or never decided
        (`unverified`: an offline import or an outage stamps `checked_at` without an answer),
        of `job_ids` or of every job."""
        if not self._table_columns("citations"):
            return pl.DataFrame()
        sql = """SELECT * FROM citations WHERE (checked_at < ? OR status = 'unverified')
                 AND (doi IS NOT NULL OR pmid IS NOT NULL OR arxiv IS NOT NULL)"""
        params: list[Any] = [before]
        if job_ids is not None:
            sql += " AND list_contains(?, job_id)"
            params.append(job_ids)
        return self.con.sql(sql + " ORDER BY job_id, citation_id", params=params).pl()

    def apply_recheck(self, citations: pl.DataFrame, changes: pl.DataFrame) -> None:
        """Write re-checked citation rows (one per (job_id, citation_id)), append what changed
        to `citation_changes`, and refresh the touched jobs' status counts: all in one
        transaction."""
        keys = ["job_id", "citation_id"]
        if citations.height and citations.select(keys).is_duplicated().any():
            # a citation id is unique only within its job: two rows for one key would be
            # written as two rows of one citation
            raise ValueError("re-checked rows repeat a (job_id, citation_id)")
        now = datetime.now(UTC)
        with self.transaction() as con:
            if citations.height:
                self._upsert_citations(citations)
            if changes.height:
                self._ensure_table("citation_changes", changes)
                with self._incoming(changes):
                    con.execute("INSERT INTO citation_changes BY NAME SELECT * FROM incoming")
            for job_id in sorted(set(citations["job_id"])) if citations.height else []:
                counts = con.execute(
                    "SELECT status, count(*) FROM citations WHERE job_id = ? "
                    "GROUP BY status ORDER BY status",
                    [job_id],
                ).fetchall()
                con.execute(
                    "UPDATE jobs SET status_counts = ?, updated_at = ? WHERE job_id = ?",
                    [json.dumps(dict(counts), sort_keys=True), now, job_id],
                )

    # -- library-wide dedupe

    def replace_dedupe(
        self,
        records: pl.DataFrame,
        assignments: pl.DataFrame,
        works: pl.DataFrame,
        links: pl.DataFrame,
    ) -> None:
        """Install a whole-library dedupe: records, every citation's work columns, works and
        links, in one transaction."""
        with self.transaction() as con:
            for table, frame in (("dedupe_records", records), ("works", works)):
                self._ensure_table(table, frame)
                con.execute(f'DELETE FROM "{table}"')
                self._insert(table, frame)
            self._ensure_table("work_links", links)
            con.execute('DELETE FROM "work_links"')
            self._insert("work_links", links)
            self._ensure_table("citations", assignments.head(0))
            with self._incoming(assignments):
                con.execute(
                    """UPDATE citations SET work_id = incoming.work_id,
                         duplicate_of = incoming.duplicate_of, dup_reason = incoming.dup_reason,
                         dup_score = incoming.dup_score
                       FROM incoming
                       WHERE citations.job_id = incoming.job_id
                         AND citations.citation_id = incoming.citation_id"""
                )

    def _insert(self, table: str, frame: pl.DataFrame) -> None:
        if not frame.height:
            return
        with self._incoming(frame):
            self.con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM incoming')
