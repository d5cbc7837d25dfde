"""assign_works: the whole dedupe of a batch of new records against the library."""

from dataclasses import dataclass, field

import polars as pl

from tasks.dedupe.candidates import candidate_pairs
from tasks.dedupe.cluster import ASSIGNMENT_SCHEMA, LINK_SCHEMA, cluster
from tasks.dedupe.compare import score_pairs
from tasks.dedupe.records import LIBRARY_SCHEMA, RECORD_SCHEMA, RELATION
from tasks.dedupe.recurring import recurring_titles, repeated_in_list
from tasks.dedupe.thresholds import DedupeThresholds

# What makes two rows the same citation content (besides citation_id): all match keys, not the
# list it came from (a moved file holds the same citations).
_FINGERPRINT = [c for c in RECORD_SCHEMA if c not in ("citation_id", "source", "relations")]


@dataclass(frozen=True)
class DedupeResult:
    """`assignments`: one row per new record, in input order: citation_id, work_id,
    duplicate_of (the citation it matched; None when it founded a new work), dup_reason
    (doi | citation | pmid | pmcid | arxiv | isbn | url | fuzzy), dup_score.
    `links`: work_id_a, work_id_b, kind (preprint-of, erratum-of, retraction-of,
    expression-of-concern-for, chapter-of-same-book, co-publication, version-of (one paper
    printed twice, e.g. a conference paper and its journal version), or a registry relation):
    related works that stay apart."""

    assignments: pl.DataFrame
    links: pl.DataFrame
    # library records compared with new ones: citation_id, decision (merge | link | distinct)
    compared: pl.DataFrame = field(default_factory=pl.DataFrame)

    def library_rows(self, new: pl.DataFrame) -> pl.DataFrame:
        """The new records with their work ids, in the library's shape."""
        return new.with_columns(work_id=self.assignments["work_id"]).select(list(LIBRARY_SCHEMA))

    @property
    def new_works(self) -> int:
        return int(self.assignments.filter(pl.col("duplicate_of").is_null()).height)


def _conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The schema's columns in order; a column a stored library predates is read as missing."""
    return frame.with_columns(
        pl.lit(None, dtype).alias(name) for name, dtype in schema.items() if name not in frame
    ).select(list(schema))


def empty_library() -> pl.DataFrame:
    return pl.DataFrame(schema=LIBRARY_SCHEMA)


def assign_works(
    new: pl.DataFrame,
    library: pl.DataFrame | None = None,
    *,
    thresholds: DedupeThresholds | None = None,
) -> DedupeResult:
    """Give every new record (rows of `records_frame`) a work id: an existing library work's, or
    a new one. `library` holds earlier jobs' records with their `work_id`. No row is dropped."""
    thresholds = thresholds or DedupeThresholds()
    if new.is_empty():
        return DedupeResult(
            pl.DataFrame(schema=ASSIGNMENT_SCHEMA), pl.DataFrame(schema=LINK_SCHEMA)
        )
    records = prepared_records(new, library, thresholds)
    return decided_works(records, candidate_pairs(records, thresholds.blocking), thresholds)


def decided_works(
    records: pl.DataFrame, pairs: pl.DataFrame, thresholds: DedupeThresholds
) -> DedupeResult:
    """`assign_works` once the candidate pairs of `records` (prepared_records) are known: the
    pairs decided, the new records clustered into works."""
    decided = score_pairs(records, pairs, thresholds)
    assignments, links = cluster(records, decided, thresholds.linkage)
    ends = [decided.select(pl.col(end).alias("row"), "decision") for end in ("a", "b")]
    rows = records.select("citation_id", "new").with_row_index("row")
    compared = (
        pl.concat(ends)
        .join(rows.with_columns(pl.col("row").cast(pl.Int64)), on="row")
        .filter(~pl.col("new"))
        .select("citation_id", "decision")
    )
    return DedupeResult(assignments, links, compared)


def prepared_records(
    new: pl.DataFrame, library: pl.DataFrame | None, thresholds: DedupeThresholds
) -> pl.DataFrame:
    """Library rows, then the new rows (`new` says which), with what pairs are compared by:
    a fingerprint of the match keys, recurring columns and their repeats within a list."""
    records = conformed_records(new, library)
    records = records.with_columns(recurring_titles(records, thresholds))
    return records.with_columns(repeated_in_list(records))


def conformed_records(new: pl.DataFrame, library: pl.DataFrame | None) -> pl.DataFrame:
    """Library rows, then the new rows, in the shape pairs are compared in: what
    `prepared_records` gives but the columns that count over all records (recurring titles),
    each row made from itself alone."""
    library = empty_library() if library is None else library
    return pl.concat(
        [
            _conform(library, LIBRARY_SCHEMA).with_columns(new=pl.lit(False)),
            _conform(new, RECORD_SCHEMA).with_columns(
                work_id=pl.lit(None, pl.Utf8), new=pl.lit(True)
            ),
        ],
        how="diagonal_relaxed",
    ).with_columns(
        fingerprint=pl.struct(_FINGERPRINT).hash(),
        relations=pl.col("relations").cast(pl.List(RELATION)),
    )
