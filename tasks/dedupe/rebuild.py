"""Dedupe the whole library again (e.g. after a threshold change or an upgrade): every stored
record gets its match keys computed afresh from its citation and is reassigned from scratch, as
if all jobs had been one."""

from dataclasses import dataclass

import polars as pl

from tasks.citation_ids import unused_id
from tasks.dedupe.assign import assign_works
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.cluster import ordered_links
from tasks.dedupe.job import job_records, named_in_job
from tasks.dedupe.records import RECORD_SCHEMA, RELATION
from tasks.dedupe.thresholds import DedupeThresholds
from tasks.frames import checked_from_row


@dataclass(frozen=True)
class LibraryDedupe:
    records: pl.DataFrame  # every dedupe record with its new work_id (and job_id)
    assignments: pl.DataFrame  # job_id, citation_id, work_id, duplicate_of, dup_reason, dup_score
    works: pl.DataFrame
    links: pl.DataFrame


def refreshed_records(stored: pl.DataFrame, citations: pl.DataFrame) -> pl.DataFrame:
    """Dedupe records for every citation row of the library, match keys computed afresh (keys a
    newer citeaudit compares exist for older jobs too, and citations stored before dedupe get
    records), each with the work id its citation row holds. Registry relations, which citation
    rows do not keep, are taken from `stored` (the library's dedupe records); a stored record
    whose citation row is missing stays as it was."""
    if not citations.height:
        return stored
    frames = []
    for (job_id,), rows in citations.group_by("job_id", maintain_order=True):
        named = list(rows.iter_rows(named=True))
        checked = [checked_from_row(row) for row in named]
        frames.append(
            job_records(str(job_id), checked).with_columns(
                job_id=pl.lit(job_id),
                work_id=rows["work_id"] if "work_id" in rows.columns else pl.lit(None, pl.Utf8),
            )
        )
    fresh = pl.concat(frames, how="diagonal_relaxed").drop("relations")
    if not stored.columns:  # a library stored before dedupe existed
        stored = pl.DataFrame(schema={"citation_id": pl.Utf8, "relations": pl.List(RELATION)})
    fresh = fresh.join(stored.select("citation_id", "relations"), on="citation_id", how="left")
    kept = stored.filter(~pl.col("citation_id").is_in(fresh["citation_id"].implode()))
    return pl.concat([fresh, kept], how="diagonal_relaxed").sort("citation_id")


def kept_work_ids(stored: pl.Series, rebuilt: pl.Series) -> dict[str, str]:
    """Rebuilt work id -> the id the work goes by: the stored id most of its citations held,
    so re-deduping leaves the ids of unchanged works as they were. A stored id goes to one work
    only (where a work was split, to the part holding most of its citations); a work left
    without one keeps its rebuilt id."""
    held = (
        pl.DataFrame({"rebuilt": rebuilt, "stored": stored})
        .drop_nulls()
        .group_by("rebuilt", "stored")
        .len()
        .sort(["len", "stored", "rebuilt"], descending=[True, False, False])
    )
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for new_id, old_id, _ in held.iter_rows():
        if new_id not in ids and old_id not in taken:
            ids[new_id] = old_id
            taken.add(old_id)
    for new_id in sorted(set(rebuilt) - set(ids)):
        ids[new_id] = unused_id(new_id, taken)
    return ids


def rededupe(records: pl.DataFrame, thresholds: DedupeThresholds | None = None) -> LibraryDedupe:
    """`records`: the library's dedupe records (job_id, citation_id as `JOB/CITATION_ID`, the
    stored `work_id`, ...)."""
    new = records.select([c for c in RECORD_SCHEMA if c in records.columns])
    result = assign_works(new, None, thresholds=thresholds)
    stored = records.get_column("work_id", default=pl.Series([None] * records.height))
    ids = kept_work_ids(stored.cast(pl.Utf8), result.assignments["work_id"])
    work_id = result.assignments["work_id"].replace_strict(ids)
    relabelled = records.drop("work_id", strict=False).with_columns(work_id=work_id)
    split = pl.col("citation_id").str.split_exact("/", 1)
    assignments = result.assignments.with_columns(
        work_id=work_id,
        job_id=pl.Series(records["job_id"]),
        citation_id=split.struct.field("field_1"),
    ).with_columns(duplicate_of=named_in_job(pl.col("duplicate_of"), pl.col("job_id")))
    links = ordered_links(
        result.links.with_columns(pl.col("work_id_a", "work_id_b").replace_strict(ids))
    )
    works = canonical_works(relabelled.drop("job_id"))
    return LibraryDedupe(relabelled, assignments, works, links)
