"""Deduplication: a library-wide work id for every citation, and links between related works.

records_frame -> assign_works(new, library) -> DedupeResult; canonical_works(library rows).

The modules, in the order a batch passes through them:
- records: one row of match keys per citation;
- candidates: pairs worth comparing (DuckDB joins on identifiers, rare title words, locators);
- recurring: recurring titles ("Editorial", "Book review column"), how often a list holds one
  in a year;
- similarity: how alike two records' fields are, for all pairs at once;
- evidence: what is known about each pair, in named groups (authors, publication facts,
  titles, identifiers, likeness); compare: the table of named rules over that evidence deciding
  each pair (merge, link or distinct); weights: the learned weights deciding scraped, undated
  pairs;
- cluster: pair decisions to works (guarded union-find, stable work ids, links);
- canonical: one record per work; job and rebuild: a job's and the whole library's dedupe;
  stored: a job's dedupe over records in a working database (a bulk import's million), a
  group of records at a time, row for row what `job` gives.
Thresholds (thresholds.py) and blocking (candidates.Blocking) are the knobs."""

from tasks.dedupe.assign import DedupeResult, assign_works, empty_library
from tasks.dedupe.candidates import Blocking
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.records import LIBRARY_SCHEMA, RECORD_SCHEMA, record_row, records_frame
from tasks.dedupe.thresholds import DedupeThresholds

__all__ = [
    "LIBRARY_SCHEMA",
    "RECORD_SCHEMA",
    "Blocking",
    "DedupeResult",
    "DedupeThresholds",
    "assign_works",
    "canonical_works",
    "empty_library",
    "record_row",
    "records_frame",
]
