"""How a scheduled audit ends: the re-checked citations made rows again (scored as a job's are),
the library's rows updated with what changed, and the audit's folder written."""

from collections.abc import Sequence

import polars as pl

from models.audit import Checked
from tasks.job.folder import write_recheck
from tasks.job.render import citation_rows
from tasks.score.metrics import assess
from tasks.store.library import open_library
from tasks.store.names import LibraryPath


def _job_rows(job_id: str, checked: list[Checked]) -> pl.DataFrame:
    """One job's re-checked citation rows with their scores (citation ids unique within it)."""
    return citation_rows(job_id, checked, assess(checked, [], duplicates=0).citation_scores)


def rechecked_rows(before: pl.DataFrame, checked: Sequence[Checked]) -> pl.DataFrame:
    """The stored rows with their validation and score columns replaced by the new check
    (columns other stages added, e.g. dedupe's work_id, are kept). `checked` holds `before`'s
    rows in order. A citation id names a citation only within its job (it hashes provenance,
    so one file audited as two jobs repeats it): rows are matched by position and keyed by
    (job_id, citation_id), and scores are computed job by job."""
    rows: dict[str, list[Checked]] = {}
    for job_id, one in zip(before["job_id"], checked, strict=True):
        rows.setdefault(job_id, []).append(one)
    fresh = pl.concat([_job_rows(job_id, job_checked) for job_id, job_checked in rows.items()])
    keys = ["job_id", "citation_id"]
    replaced = [c for c in fresh.columns if c not in keys]
    kept = before.drop([c for c in replaced if c in before.columns])
    return kept.join(fresh, on=keys, how="inner").select(
        before.columns + [c for c in fresh.columns if c not in before.columns]
    )


def save_recheck(
    audit_id: str, updates: pl.DataFrame, changes: pl.DataFrame, out_dir: str, db: LibraryPath
) -> tuple[str, str]:
    """The `updates` and `changes` into the library (one transaction), then the audit's folder;
    the folder's path and its report's Markdown."""
    with open_library(db) as library:
        library.apply_recheck(updates, changes)
    return write_recheck(out_dir, audit_id, changes, updates)
