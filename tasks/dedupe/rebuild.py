"""Dedupe the whole library again (e.g. after a threshold change or an upgrade): every stored
record gets its match keys computed afresh from its citation and is reassigned from scratch, as
if all jobs had been one."""

from dataclasses import dataclass

import polars as pl

from tasks.dedupe.assign import assign_works
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.job import job_records
from tasks.dedupe.records import RECORD_SCHEMA
from tasks.dedupe.thresholds import DedupeThresholds
from tasks.rows import reference_from_row, result_from_row


@dataclass(frozen=True)
class LibraryDedupe:
    records: pl.DataFrame  # every dedupe record with its new work_id (and job_id)
    assignments: pl.DataFrame  # job_id, citation_id, work_id, duplicate_of, dup_reason, dup_score
    works: pl.DataFrame
    links: pl.DataFrame


def refreshed_records(stored: pl.DataFrame, citations: pl.DataFrame) -> pl.DataFrame:
    """The library's dedupe records (`stored`) with their match keys computed again from its
    citation rows, so that keys a newer citeaudit compares exist for older jobs too. Registry
    relations, which citation rows do not keep, stay as stored; a record whose citation row is
    missing stays as it was."""
    frames = []
    for (job_id,), rows in citations.group_by("job_id", maintain_order=True):
        named = list(rows.iter_rows(named=True))
        refs = [reference_from_row(row) for row in named]
        results = [result_from_row(row) for row in named]
        frames.append(job_records(str(job_id), refs, results).with_columns(job_id=pl.lit(job_id)))
    if not frames:
        return stored
    fresh = pl.concat(frames, how="diagonal_relaxed").drop("relations")
    fresh = fresh.join(
        stored.select("citation_id", "relations"), on="citation_id", how="left"
    ).filter(pl.col("citation_id").is_in(stored["citation_id"].implode()))
    kept = stored.filter(~pl.col("citation_id").is_in(fresh["citation_id"].implode()))
    return pl.concat([fresh, kept], how="diagonal_relaxed").sort("citation_id")


def rededupe(records: pl.DataFrame, thresholds: DedupeThresholds | None = None) -> LibraryDedupe:
    """`records`: the library's dedupe records (job_id, citation_id as `JOB/CITATION_ID`, ...)."""
    new = records.select([c for c in RECORD_SCHEMA if c in records.columns])
    result = assign_works(new, None, thresholds=thresholds)
    relabelled = records.drop("work_id", strict=False).with_columns(
        work_id=result.assignments["work_id"]
    )
    split = pl.col("citation_id").str.split_exact("/", 1)
    assignments = result.assignments.with_columns(
        job_id=pl.Series(records["job_id"]),
        citation_id=split.struct.field("field_1"),
    )
    works = canonical_works(relabelled.drop("job_id"))
    return LibraryDedupe(relabelled, assignments, works, result.links)
