"""Bulk-import progress: which batches of an import are stored, so a stopped import resumes.

Progress is keyed by the input's content (its fingerprint), never by file names: the same list
under another name resumes; changed content starts over."""

from datetime import UTC, datetime

import polars as pl

from tasks.store.core import LibraryCore


class BulkProgress(LibraryCore):
    def bulk_batches_done(self, job_id: str, fingerprint: str) -> set[int]:
        """Batches of this job already stored for exactly this input. Rows of an earlier
        import of other input (another fingerprint) are dropped: that import starts over."""
        with self.transaction() as con:
            stale = con.execute(
                "SELECT count(*) FROM bulk_progress WHERE job_id = ? AND fingerprint <> ?",
                [job_id, fingerprint],
            ).fetchone()
            if stale and stale[0]:
                con.execute("DELETE FROM bulk_progress WHERE job_id = ?", [job_id])
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
        with self.transaction() as con:
            self.upsert_job_rows("citations", citations)
            con.execute(
                "DELETE FROM bulk_progress WHERE job_id = ? AND batch = ? AND fingerprint = ?",
                [job_id, batch, fingerprint],
            )
            con.execute(
                "INSERT INTO bulk_progress VALUES (?, ?, ?, ?, ?)",
                [job_id, batch, fingerprint, citations.height, datetime.now(UTC)],
            )
