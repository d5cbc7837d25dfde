"""Citation rows for report tests: every column of tasks/frames.py, the flags false."""

import polars as pl

from tasks.frames import CITATION_SCHEMA


def citation(**values: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(CITATION_SCHEMA)
    row.update(
        job_id="j",
        citation_id=str(values.get("entry_key")),
        source_file="refs.bib",
        retracted=False,
        corrected=False,
        expression_of_concern=False,
    )
    row.update(values)
    return row


def citations(*rows: dict[str, object]) -> pl.DataFrame:
    """The rows as a citations frame; columns beyond CITATION_SCHEMA (dedupe's `work_id`,
    scoring's `confidence`) are kept with their inferred types."""
    return pl.DataFrame(list(rows), schema_overrides=CITATION_SCHEMA, infer_schema_length=None)
