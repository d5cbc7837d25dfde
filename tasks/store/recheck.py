"""Scheduled-audit updates: which citations are due a re-check, and writing the re-checks back
to the citations that are still there."""

import json
from datetime import UTC, datetime
from typing import Any

import polars as pl

from tasks.store.core import LibraryCore

KEYS = ["job_id", "citation_id"]


class Rechecks(LibraryCore):
    def stale_citations(self, before: datetime, job_ids: list[str] | None = None) -> pl.DataFrame:
        """Citations with a DOI, PMID or arXiv id last checked before `before`, or never decided
        (`unverified`: an offline import or an outage stamps `checked_at` without an answer),
        of `job_ids` or of every job."""
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
        transaction. Only citations still in their job are written: a re-run of the job since
        the re-check read it may have dropped some, and they must not come back."""
        if citations.height and citations.select(KEYS).is_duplicated().any():
            # a citation id is unique only within its job: two rows for one key would be
            # written as two rows of one citation
            raise ValueError("re-checked rows repeat a (job_id, citation_id)")
        now = datetime.now(UTC)
        with self.transaction() as con:
            if citations.height:
                jobs = sorted(set(citations["job_id"]))
                present = con.execute(
                    "SELECT job_id, citation_id FROM citations WHERE list_contains(?, job_id)",
                    [jobs],
                ).pl()
                citations = citations.join(present, on=KEYS, how="semi")
                if changes.height:
                    changes = changes.join(present, on=KEYS, how="semi")
            if citations.height:
                self.upsert_job_rows("citations", citations)
            self._insert("citation_changes", changes)
            for job_id in sorted(set(citations["job_id"])) if citations.height else []:
                counts = self._status_counts(job_id)
                con.execute(
                    "UPDATE jobs SET status_counts = ?, updated_at = ? WHERE job_id = ?",
                    [json.dumps(counts, sort_keys=True), now, job_id],
                )
