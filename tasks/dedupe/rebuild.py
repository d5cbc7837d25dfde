"""Dedupe the whole library again (e.g. after a threshold change): every stored record is
reassigned from scratch, as if all jobs had been one."""

from dataclasses import dataclass

import polars as pl

from tasks.dedupe.assign import assign_works
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.compare import DedupeThresholds
from tasks.dedupe.records import RECORD_SCHEMA


@dataclass(frozen=True)
class LibraryDedupe:
    records: pl.DataFrame  # every dedupe record with its new work_id (and job_id)
    assignments: pl.DataFrame  # job_id, citation_id, work_id, duplicate_of, dup_reason, dup_score
    works: pl.DataFrame
    links: pl.DataFrame


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
