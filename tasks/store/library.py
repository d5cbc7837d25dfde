"""The persistent DuckDB library: jobs, their citations, input errors and claims, the
library-wide works and the links between them.

A job's rows are replaced inside one transaction (a re-run replaces, never duplicates). Work ids
are minted under the library's write lock: a flow holds it (`write_lock`) from reading the
library for dedupe until its rows are stored, so two runs at once leave what one after the
other leaves."""

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

import polars as pl

from tasks.store.bulk import BulkProgress
from tasks.store.core import Part, Rows, parts
from tasks.store.lock import library_lock
from tasks.store.names import LibraryPath
from tasks.store.recheck import Rechecks


@contextmanager
def write_lock(where: LibraryPath) -> Iterator[None]:
    """Hold the library for writing across several openings."""
    with library_lock(where, exclusive=True):
        yield


def open_library(
    where: LibraryPath,
    read_only: bool = False,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> "Library":
    """The library at `where` (names.library_at), to write, or `read_only` to read; `threads`:
    DuckDB's for the connection (default one per core), `memory_limit` what DuckDB may hold
    (default its own). Every library is opened here."""
    return Library(where, read_only=read_only, threads=threads, memory_limit=memory_limit)


_OTHER_RECORDS = """SELECT * EXCLUDE (job_id) FROM dedupe_records
                    WHERE job_id IS DISTINCT FROM ? ORDER BY citation_id"""


def _retired(works: Rows | Sequence[str]) -> Iterator[Part]:
    """Retired work ids (a frame or file of `work_id`s) a part at a time."""
    if isinstance(works, Sequence) and not isinstance(works, pl.DataFrame):
        if works:
            yield pl.DataFrame({"work_id": list(works)}, schema={"work_id": pl.Utf8})
        return
    yield from parts(works)


class Library(BulkProgress, Rechecks):
    """The library; `Library(path)` to write, `Library(path, read_only=True)` to read."""

    def __enter__(self) -> "Library":
        return self

    def save_job(
        self,
        job_id: str,
        inputs: list[str],
        frames: Mapping[str, Rows],
        shared: Mapping[str, tuple[Rows, Sequence[str]]] | None = None,
        retired_works: Rows | Sequence[str] = (),
        updates: Mapping[str, Rows] | None = None,
    ) -> None:
        """Store a job's frames, replacing any earlier run of the same job, upsert the rows it
        adds to library-wide tables (`shared`: table -> (rows, key columns)) and drop the
        works no citation holds any more (`retired_works`, or rows of their work_id, with their
        links), atomically. `updates`: columns to set on rows already stored (a bulk import's
        citations). Rows may come a part at a time (a bulk import's)."""
        with self.transaction() as con:
            for table, frame in frames.items():
                self.replace_job_rows(table, job_id, frame)
            for table, frame in (updates or {}).items():
                self.update_job_rows(table, frame)
            for table, (frame, keys) in (shared or {}).items():
                self.upsert_rows(table, frame, keys)
            for retired in _retired(retired_works):
                with self._incoming(retired):
                    con.execute("DELETE FROM works WHERE work_id IN (SELECT work_id FROM incoming)")
                    con.execute(
                        """DELETE FROM work_links
                           WHERE work_id_a IN (SELECT work_id FROM incoming)
                              OR work_id_b IN (SELECT work_id FROM incoming)"""
                    )
            self._write_job_row(job_id, inputs)

    def save_added(
        self,
        job_id: str,
        inputs: list[str],
        frames: Mapping[str, Rows],
        shared: Mapping[str, tuple[Rows, Sequence[str]]],
    ) -> None:
        """Add rows to a stored job or replace some of them (`frames`: citations, claims,
        dedupe_records, each row by its key), upsert the library-wide rows they bring and
        recount the job, atomically: a citation added costs its own rows, not the job's."""
        with self.transaction():
            for table, frame in frames.items():
                self.upsert_job_rows(table, frame)
            for table, (frame, keys) in shared.items():
                self.upsert_rows(table, frame, keys)
            self._write_job_row(job_id, inputs)

    def _write_job_row(self, job_id: str, inputs: list[str]) -> None:
        """The job's row of `jobs`, counted from its stored rows (call inside `transaction()`)."""
        con = self.con
        counts = self._status_counts(job_id)
        errors = con.execute("SELECT count(*) FROM input_errors WHERE job_id = ?", [job_id])
        n_errors = (errors.fetchone() or (0,))[0]
        now = datetime.now(UTC)
        # replaced by deleting first: a DuckLake has no keys to upsert on
        first = con.execute("SELECT created_at FROM jobs WHERE job_id = ?", [job_id]).pl()
        con.execute("DELETE FROM jobs WHERE job_id = ?", [job_id])
        con.execute(
            "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                job_id,
                first["created_at"][0] if first.height else now,
                now,
                json.dumps(inputs),
                sum(counts.values()),
                n_errors,
                json.dumps(counts, sort_keys=True),
            ],
        )

    def dedupe_library(self, exclude_job: str | None = None) -> pl.DataFrame:
        """Every job's dedupe records (but `exclude_job`'s), ids as `JOB/CITATION_ID`."""
        return self.con.sql(_OTHER_RECORDS, params=[exclude_job]).pl()

    def dedupe_library_parts(self, exclude_job: str, rows: int) -> Iterator[pl.DataFrame]:
        """`dedupe_library`, `rows` records at a time."""
        return self.parts(_OTHER_RECORDS, [exclude_job], rows)

    def job_works(self, job_id: str, rows: int) -> Iterator[pl.DataFrame]:
        """The works the job's stored dedupe records name (work_id), `rows` at a time."""
        return self.parts(
            """SELECT DISTINCT work_id FROM dedupe_records
               WHERE job_id = ? AND work_id IS NOT NULL ORDER BY work_id""",
            [job_id],
            rows,
        )

    def job_citations(
        self, job_id: str, rows: int, columns: Sequence[str] | None = None
    ) -> Iterator[pl.DataFrame]:
        """The job's stored citation rows (or these columns of them) in citation id order,
        `rows` at a time."""
        chosen = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        return self.parts(
            f"SELECT {chosen} FROM citations WHERE job_id = ? ORDER BY citation_id", [job_id], rows
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
            for table, frame in (
                ("dedupe_records", records),
                ("works", works),
                ("work_links", links),
            ):
                con.execute(f'DELETE FROM "{table}"')
                self._insert(table, frame)
            self._check("citations", assignments)
            with self._incoming(assignments):
                con.execute(
                    """UPDATE citations SET work_id = incoming.work_id,
                         duplicate_of = incoming.duplicate_of, dup_reason = incoming.dup_reason,
                         dup_score = incoming.dup_score
                       FROM incoming
                       WHERE citations.job_id = incoming.job_id
                         AND citations.citation_id = incoming.citation_id"""
                )
