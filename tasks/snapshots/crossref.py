"""The `crossref` snapshot: Crossref's public data file as works.

The public data file (yearly, ~180M works, ~200 GB) is a folder of gzipped JSON files, each
`{"items": [work, ...]}` holding a few thousand REST API work items. Each file is one input
part (tasks/snapshots/store.py): read whole, so memory is bounded by the largest file, never by
the dump (a file expanding past FILE_LIMIT is refused: tasks/snapshots/bounded.py); files are
built in parallel by the store's process pool, and a killed build resumes at the first file not
written. A file is gunzipped by ISA-L (isal, cheaper than zlib), split by msgspec into its items'
raw JSON, and each item decoded on its own into a typed work: only the fields kept become
Python objects (references, licences, links, an author's affiliations and ORCID are skipped),
and each work's row is built from them by tasks/registries/crossref_map's rules (slim_work's, as
a live answer is mapped) and handed over column by column. An item of another shape (null, an
author that is no object) is decoded into plain JSON and mapped by slim_work itself. Tiny JSON
values decode to objects tens of times their bytes, so what is decoded at once is capped: a file
of more than ITEMS items (counted by its commas, before it is split), an item of more than
ITEM_VALUES values or ITEM_LIMIT bytes is refused, naming it. Where a file's time goes:
bench/RESULTS.md.

| Crossref                                      | works                                      |
|-----------------------------------------------|--------------------------------------------|
| `DOI`                                         | `id`, `doi` (10.48550/arXiv.X also `arxiv_id`) |
| `title`, `subtitle` (the first of each)       | `title`, `subtitle`, markup removed        |
| `author`                                      | `authors` (organisations as `literal`)     |
| `issued`, else `published-print`, `-online`, `published` (never `created`) | `year`     |
| `container-title`, `volume`, `issue`, `page`  | `container`, `volume`, `issue`, `pages`    |
| `type`                                        | `type` (CSL); `posted-content` is `informal` |
| `updated-by` (`update-to` on its own DOI)     | `updates`: retraction, correction, concern |
| `indexed`                                     | `updated` (the newest is the snapshot's date) |

`since` keeps the works of that year or later (a work without a year is left out); `types`
keeps the Crossref types named (`journal-article`, `proceedings-article`, ...). A file that is
not gzipped `{"items": [...]}` JSON fails the build naming it; an item that is no work (not an
object, no DOI) is skipped, counted and named (its file and position) in the build's summary.
"""

import functools
from collections.abc import Collection, Generator, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from models.audit import Notice
from tasks.identifiers import normalize_arxiv
from tasks.registries.crossref_map import (
    CROSSREF_TO_CSL_TYPE,
    doi_of,
    first_text,
    given_parts,
    name_of,
    nth_text,
    slim_work,
    work_notices,
)
from tasks.snapshots.bounded import MB, read_whole, too_large, too_many, values
from tasks.snapshots.records import notice_date, plain_doi
from tasks.snapshots.schema import (
    WORKS,
    WORKS_TABLE,
    Skipped,
    in_batches,
    tuples_batch,
    uncollected,
)
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

ARXIV_PREFIX = "10.48550/arxiv."
# What one file may expand to: the data file's are ~40 MB of JSON (5,000 works); one that
# expands past this is refused, not held (a gzip bomb).
FILE_LIMIT = 256 * MB
# The items one file may hold, bounded by its commas: each item's raw span is held at once (the
# data file's 5,000 full works hold ~1.4M commas).
ITEMS = 3_000_000
# The JSON values one item may hold; only an item over ITEM_BYTES is counted (one under it
# decodes to a few tens of MB at most). An item past ITEM_LIMIT bytes (a work's largest are a
# few MB) is refused whatever it holds: its strings alone would be held again, decoded.
ITEM_VALUES = 500_000
ITEM_BYTES = MB
ITEM_LIMIT = 16 * MB
# The work item's fields slim_work reads (and `indexed`, the record's date): all others are
# skipped by the decoder.
KEPT = (
    "DOI",
    "title",
    "subtitle",
    "author",
    "container-title",
    "issued",
    "published-print",
    "published-online",
    "published",
    "volume",
    "issue",
    "page",
    "type",
    "updated-by",
    "update-to",
    "indexed",
)
DATED = ("issued", "published-print", "published-online", "published", "indexed")


class _Person(msgspec.Struct):
    """An author as slim_work reads one (ORCID, affiliations and the rest are skipped)."""

    family: Any = None
    given: Any = None
    name: Any = None


class _Dated(msgspec.Struct, rename={"parts": "date-parts"}):
    parts: Any = None


def _work_type(typed: bool) -> Any:
    """The decoded work: with `typed`, authors and dates as the public data file documents them
    (their other fields skipped, a third of the decoding); else any JSON in the fields kept."""

    def kind(name: str) -> Any:
        if typed and name == "author":
            return list[_Person] | None
        return _Dated | None if typed and name in DATED else Any

    return msgspec.defstruct(
        "_TypedWork" if typed else "_Work",
        [(name.replace("-", "_"), kind(name), None) for name in KEPT],
        rename={name.replace("-", "_"): name for name in KEPT},
    )


_TypedWork, _Work = _work_type(True), _work_type(False)


class _File(msgspec.Struct):
    items: list[msgspec.Raw]  # each item decoded apart: a broken one is skipped, not the file


_FILE = msgspec.json.Decoder(_File)
_TYPED_ITEM = msgspec.json.Decoder(_TypedWork)
_ITEM = msgspec.json.Decoder(_Work)
_NAMES = tuple(zip(_Work.__struct_fields__, _Work.__struct_encode_fields__, strict=True))


def read(
    path: Path, since: int | None = None, types: Collection[str] | None = None
) -> Generator[pa.RecordBatch, None, Skipped]:
    """The works in one file of the public data file, in batches of the works schema; returns
    the broken items it skipped."""
    return (yield from in_batches(_rows(_Works(path, since, types)), WORKS, tuples_batch))


def _rows(works: "_Works") -> Generator[tuple[Any, ...], None, Skipped]:
    yield from works
    return works.skipped


class _Works:
    """The rows of one file's works (tuples in the works schema's order); `skipped` counts the
    broken items, once iterated."""

    def __init__(self, path: Path, since: int | None, types: Collection[str] | None) -> None:
        self.path, self.since, self.types = path, since, types
        self.skipped = Skipped()

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        with uncollected():
            text = read_whole(self.path, FILE_LIMIT)
            if text.count(b",") >= ITEMS:
                raise too_many(self.path, "its items array", ITEMS)
            try:
                items = _FILE.decode(text).items
            except msgspec.DecodeError as exc:
                what = f'not a gzipped {{"items": [...]}} JSON file of works ({exc})'
                raise SnapshotFormatError(self.path, what) from None
            since, types = self.since, self.types
            for position, item in enumerate(items):
                if len(item) > ITEM_BYTES:
                    _check_size(self.path, position, item)
                work = _decoded(item)
                doi = getattr(work, "DOI", None)
                if not isinstance(doi, str) or not doi.strip():
                    self.skipped.add(f"{self.path}: item {position} is no work with a DOI")
                    continue
                if types is not None and work.type not in types:
                    continue
                row = _typed_row(work) if isinstance(work, _TypedWork) else _row(_as_dict(work))
                if since is not None and (row[YEAR] is None or row[YEAR] < since):
                    continue
                yield row


YEAR = WORKS.names.index("year")


def _check_size(path: Path, position: int, item: msgspec.Raw) -> None:
    """Refuses the file if its item at `position` would decode to more than a few hundred MB."""
    if len(item) > ITEM_LIMIT:
        raise too_large(path, f"item {position}", ITEM_LIMIT)
    if values(bytes(item)) > ITEM_VALUES:
        raise too_many(path, f"item {position}", ITEM_VALUES)


def _typed_row(work: Any) -> tuple[Any, ...]:
    """The row of a work of the documented shape: slim_work's rules (below, `_row`) read from
    the decoded struct, without the dicts (half the reader's Python)."""
    doi = _doi(work.DOI)
    year = None
    for dated in (work.issued, work.published_print, work.published_online, work.published):
        if dated is not None and (first := given_parts(dated.parts)):
            year = first[0]
            break
    kind = work.type
    authors = work.author
    updated = work.indexed
    return (
        doi,
        doi,
        _arxiv_id(doi),
        None,
        nth_text(work.title, 0),
        nth_text(work.subtitle, 0),
        [name for p in authors if (name := name_of(p.family, p.given, p.name))] or None
        if authors is not None
        else None,
        _year(year),
        first_text(work.container_title),
        None,
        _text(work.volume),
        _text(work.issue),
        _text(work.page),
        CROSSREF_TO_CSL_TYPE.get(str(kind), "article"),
        kind == "posted-content",
        None,
        None,
        None,
        _updates(
            work_notices({"updated-by": work.updated_by, "update-to": work.update_to}, doi)[0]
            if work.updated_by or work.update_to
            else []
        ),
        _date_of(updated.parts) if updated is not None else None,
    )


def _doi(value: str) -> str:
    """crossref_map.doi_of(value), quickly for the plain DOIs nearly every work has."""
    return plain_doi(value) or doi_of(value)


def _decoded(item: msgspec.Raw) -> Any:
    """The item as a typed work; else (another shape) as any JSON in the fields kept; else None."""
    try:
        return _TYPED_ITEM.decode(item)
    except msgspec.ValidationError:
        pass
    try:
        return _ITEM.decode(item)
    except msgspec.DecodeError:
        return None


def _as_dict(work: Any) -> dict[str, Any]:
    return {name: getattr(work, field) for field, name in _NAMES}


def _row(work: dict[str, Any]) -> tuple[Any, ...]:
    slim = slim_work(work)
    doi = slim["doi"]
    return (
        doi,
        doi,
        _arxiv_id(doi),
        None,
        slim["title"],
        slim["subtitle"],
        slim["authors"],
        _year(slim["year"]),
        slim["container"],
        None,
        _text(slim["volume"]),
        _text(slim["issue"]),
        _text(slim["pages"]),
        slim["type"],
        work.get("type") == "posted-content",
        None,
        None,
        None,
        _updates(slim["notices"]),
        _date_parts(work.get("indexed")),
    )


def _arxiv_id(doi: str) -> str | None:
    return normalize_arxiv(doi[len(ARXIV_PREFIX) :]) if doi.startswith(ARXIV_PREFIX) else None


def _year(year: Any) -> int | None:
    return year if isinstance(year, int) and 0 < year < 10_000 else None


def _updates(notices: list[Notice]) -> list[dict[str, Any]] | None:
    return [
        {"type": n.kind, "doi": n.identifier, "date": notice_date(n.date)} for n in notices
    ] or None


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _date_parts(value: Any) -> date | None:
    return _date_of((value or {}).get("date-parts") if isinstance(value, dict) else None)


def _date_of(parts: Any) -> date | None:
    """The date of `date-parts` whose first date is whole (year, month and day)."""
    first = parts[0] if isinstance(parts, list) and parts and isinstance(parts[0], list) else []
    numbers = [p for p in first[:3] if isinstance(p, int)]
    if len(numbers) < 3:
        return None
    try:
        return date(*numbers)
    except ValueError:
        return None


def parts(inputs: Sequence[Path]) -> list[Path]:
    """The files of the public data file (`0.json.gz`, ...), in the order of their numbers."""
    found = [p for p in files_of(inputs) if p.name.endswith((".json.gz", ".json"))]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def builder(since: int | None = None, types: Collection[str] | None = None) -> Builder:
    """The crossref snapshot's builder, keeping the works since a year or of some types only."""
    chosen = sorted(types) if types else None
    return Builder(
        "crossref",
        WORKS_TABLE,
        functools.partial(read, since=since, types=frozenset(chosen) if chosen else None),
        parts,
        options={"since": since, "types": chosen},
    )
