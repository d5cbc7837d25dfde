"""Deduplication: a library-wide work id for every citation, and links between related works.

records_frame -> assign_works(new, library) -> DedupeResult; canonical_works(library rows)."""

from tasks.dedupe.assign import DedupeResult, assign_works, empty_library
from tasks.dedupe.candidates import Blocking
from tasks.dedupe.canonical import canonical_works
from tasks.dedupe.compare import DedupeThresholds
from tasks.dedupe.records import LIBRARY_SCHEMA, RECORD_SCHEMA, record_row, records_frame

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
