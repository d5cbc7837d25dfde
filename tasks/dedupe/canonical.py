"""One canonical record per work, for works.parquet and the bibliographies."""

import polars as pl

from tasks.dedupe.records import ID_KINDS, RECORD_SCHEMA

CANONICAL_FIELDS = (
    *ID_KINDS, "title", "authors", "container_title", "year", "volume", "pages", "type",
)  # fmt: skip
WORKS_SCHEMA: dict[str, pl.DataType] = {
    "work_id": pl.Utf8(),
    "citations": pl.UInt32(),  # what pl.len() counts in
    "verified": pl.Boolean(),
    "canonical_citation_id": pl.Utf8(),
    **{field: RECORD_SCHEMA[field] for field in CANONICAL_FIELDS},
}


def canonical_works(records: pl.DataFrame) -> pl.DataFrame:
    """Per work (records in the library's shape, with `work_id`): each field from the best
    record that has it, where registry-verified records come first, then the most complete, then
    the smallest citation id; plus `citations` (how many citations the work gathers),
    `verified`, and `canonical_citation_id` (the best record)."""
    ranked = records.sort(
        ["work_id", "verified", "completeness", "citation_id"],
        descending=[False, True, True, False],
        nulls_last=True,
    )
    return (
        ranked.group_by("work_id", maintain_order=True)
        .agg(
            pl.len().alias("citations"),
            pl.col("verified").any(),
            pl.col("citation_id").first().alias("canonical_citation_id"),
            *[pl.col(field).drop_nulls().first() for field in CANONICAL_FIELDS],
        )
        .sort("work_id")
        .cast(pl.Schema(WORKS_SCHEMA))
    )
