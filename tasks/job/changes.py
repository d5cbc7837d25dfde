"""Scheduled audits: which citations to re-check, and what changed since they were last checked.

Plain functions over citation frames (the columns of tasks/frames.py); the flow
(flows/scheduled.py) asks the registries and the library (tasks/store/) stores the outcome."""

from collections.abc import Sequence
from datetime import datetime, timedelta

import polars as pl

from models.audit import Reference, Status
from tasks.identifiers import primary_identifier

# The columns whose change a reader wants to hear about: the verdict, the registry's flags, and
# the matched record itself (a registry may correct a title, authors, year or venue).
WATCHED_FIELDS = (
    "status",
    "retracted",
    "corrected",
    "expression_of_concern",
    "matched_id",
    "matched_title",
    "matched_authors",
    "matched_year",
    "matched_container",
)

CHANGES_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "job_id": pl.Utf8,
    "citation_id": pl.Utf8,
    "entry_key": pl.Utf8,
    "field": pl.Utf8,
    "before": pl.Utf8,
    "after": pl.Utf8,
    "detected_at": pl.Datetime("us", "UTC"),
}


def stale_before(now: datetime, max_age_days: int) -> datetime:
    """Rows checked before this moment are due for a re-check."""
    if max_age_days < 0:
        raise ValueError("max_age_days must be 0 or more")
    return now - timedelta(days=max_age_days)


def identifier_key(ref: Reference) -> str:
    """What the registries are asked about for this reference (the DOI decides, as in
    tasks/lookup/): one key per registry question."""
    primary = primary_identifier(ref.ids)
    if primary is None:
        raise ValueError(f"citation {ref.citation_id} has no DOI, PMID or arXiv id")
    return ":".join(primary)


def chunks_by_identifier(refs: Sequence[Reference], size: int) -> list[list[int]]:
    """Chunks of about `size` positions in `refs` in which all citations of one identifier
    travel together, so each DOI/PMID is asked once however many jobs cite it."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    groups: dict[str, list[int]] = {}
    for index, ref in enumerate(refs):
        groups.setdefault(identifier_key(ref), []).append(index)
    chunks: list[list[int]] = []
    current: list[int] = []
    for key in sorted(groups):
        if current and len(current) + len(groups[key]) > size:
            chunks.append(current)
            current = []
        current.extend(groups[key])
    if current:
        chunks.append(current)
    return chunks


def _as_text(value: object) -> str | None:
    return None if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def detect_changes(
    before: pl.DataFrame, after: pl.DataFrame, detected_at: datetime
) -> pl.DataFrame:
    """One row per (citation, watched field) whose value differs between the two frames, which
    are keyed by (job_id, citation_id)."""
    keys = ["job_id", "citation_id"]
    joined = before.select(*keys, "entry_key", *WATCHED_FIELDS).join(
        after.select(*keys, *WATCHED_FIELDS), on=keys, how="inner", suffix="_after"
    )
    rows = []
    for row in joined.iter_rows(named=True):
        for name in WATCHED_FIELDS:
            old, new = row[name], row[f"{name}_after"]
            if old != new:
                rows.append(
                    {
                        "job_id": row["job_id"],
                        "citation_id": row["citation_id"],
                        "entry_key": row["entry_key"],
                        "field": name,
                        "before": _as_text(old),
                        "after": _as_text(new),
                        "detected_at": detected_at,
                    }
                )
    return pl.DataFrame(rows, schema=CHANGES_SCHEMA).sort(["job_id", "citation_id", "field"])


def worth_applying(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """The re-checked rows to write back. A citation we could not ask about this time
    (`unverified` now, decided before) keeps its stored verdict and its old `checked_at`, so the
    next scheduled audit tries it again: an outage is not a change of the literature."""
    keys = ["job_id", "citation_id"]
    unverified = Status.UNVERIFIED.value
    decided_before = before.filter(pl.col("status") != unverified).select(keys)
    lost = after.filter(pl.col("status") == unverified).join(decided_before, on=keys, how="semi")
    return after.join(lost.select(keys), on=keys, how="anti")
