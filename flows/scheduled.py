"""scheduled_audit: re-check library citations that were last checked too long ago.

stale rows -> ask the registries again (each DOI/PMID once, no HTTP cache) -> what changed ->
library rows updated (one transaction) -> OUT/AUDIT_JOB/ (changes.parquet, citations.parquet,
report with "Changes since the last audit")

Only citations with a DOI, PMID or arXiv id are re-checked: their registry answer can change
(retractions, corrections, a DOI that now resolves). Citations found by search are left alone.
One that was never decided (`unverified`: imported offline, or asked during an outage) is due at
once, whatever its age: its `checked_at` records no answer.

A citation id is unique only within its job (one file audited as two jobs repeats the ids), so
rows are keyed by (job_id, citation_id) throughout; each identifier is still asked once.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import polars as pl
from prefect import flow

from flows import artifacts, progress
from flows.steps import stage_task
from models.audit import Checked, Reference
from models.job import RecheckSummary
from tasks.frames import reference_from_row
from tasks.job.changes import (
    CHANGES_SCHEMA,
    chunks_by_identifier,
    detect_changes,
    stale_before,
    worth_applying,
)
from tasks.job.recheck import rechecked_rows, save_recheck
from tasks.lookup.checker import PROCESS_POOL, Checker
from tasks.registries import read_settings
from tasks.store.library import open_library
from tasks.store.names import LibraryPath, check_job_id, library_at

DEFAULT_MAX_AGE_DAYS = 7
DEFAULT_CHUNK = 500


@stage_task("stale-citations")
def stale_step(db: LibraryPath, before: datetime, job_ids: list[str] | None) -> pl.DataFrame:
    with open_library(db) as library:
        return library.stale_citations(before, job_ids)


@stage_task("recheck")
def recheck_step(refs: Sequence[Reference], chunk_size: int) -> list[Checked]:
    """Ask the registries again, bypassing the HTTP cache: a cached answer is exactly the stale
    knowledge this audit exists to replace. One client set, over the process's limiters (an
    audit running beside it shares them), so the rate limits hold. One
    result per reference, in `refs` order (chunks group them by identifier)."""
    settings = read_settings(cache_enabled=False)
    checked: dict[int, Checked] = {}
    deadline = settings.job_ends_at()
    progress.report("recheck", 0, len(refs))
    with Checker(settings, pool=PROCESS_POOL, deadline=deadline) as checker:
        for chunk in chunks_by_identifier(refs, chunk_size):
            checked.update(zip(chunk, checker.check([refs[index] for index in chunk]), strict=True))
            progress.report("recheck", len(checked), len(refs))
    return [checked[index] for index in range(len(refs))]


@flow(name="scheduled_audit", log_prints=False)
def scheduled_audit(
    out_dir: str = "out",
    db: str | None = None,
    max_age_days: int = DEFAULT_MAX_AGE_DAYS,
    job_ids: list[str] | None = None,
    audit_id: str | None = None,
    chunk_size: int = DEFAULT_CHUNK,
) -> RecheckSummary:
    """Re-validate library citations last checked more than `max_age_days` ago, and those
    still `unverified` (an offline import, an outage) whatever their age.

    Parameters:
        out_dir: where the audit's folder is written (`out_dir/audit_id/`).
        db: the DuckDB library file (default `$CITEAUDIT_DB` or ./citeaudit.duckdb).
        max_age_days: re-check citations whose `checked_at` is older than this (0: all);
            `unverified` ones are re-checked at every run.
        job_ids: only these jobs' citations (default: every job in the library).
        audit_id: names this audit's folder (default `scheduled-YYYYMMDDTHHMMSSZ`).
        chunk_size: citations per registry round (all citations of one identifier together).

    A citation the registries cannot be asked about now keeps its stored verdict and is tried
    again next time. Returns counts: rechecked, updated, changed citations, changes by field.
    """
    now = datetime.now(UTC)
    audit_id = check_job_id(audit_id or f"scheduled-{now:%Y%m%dT%H%M%SZ}")
    library_path = library_at(db)  # resolved once, here
    before = stale_step(library_path, stale_before(now, max_age_days), job_ids)
    refs = [reference_from_row(row) for row in before.iter_rows(named=True)]
    if refs:
        after = rechecked_rows(before, recheck_step(refs, chunk_size))
        updates = worth_applying(before, after)
        changes = detect_changes(before, updates, now)
    else:
        updates, changes = before, pl.DataFrame(schema=CHANGES_SCHEMA)
    out, markdown = save_recheck(audit_id, updates, changes, out_dir, library_path)
    by_field = dict(changes.group_by("field").len().sort("field").iter_rows())
    artifacts.publish_changes(audit_id, markdown)
    return RecheckSummary(
        audit_id=audit_id,
        out=out,
        rechecked=len(refs),
        updated=updates.height,
        changed_citations=changes.select("job_id", "citation_id").n_unique(),
        changes_by_field=by_field,
    )
