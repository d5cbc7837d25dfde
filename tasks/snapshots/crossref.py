"""The `crossref` snapshot: Crossref's public data file as works.

The public data file (yearly, ~180M works, ~200 GB) is a folder of gzipped JSON files, each
`{"items": [work, ...]}` holding a few thousand REST API work items. Each file is one input
part (tasks/snapshots/store.py): read whole, so memory is bounded by the largest file, never by
the dump; files are built in parallel by the store's process pool, and a killed build resumes
at the first file not written. msgspec decodes only the fields kept (references, licences and
links are skipped without becoming Python objects); tasks/registries/crossref_map.slim_work maps
them by the same rules as a live answer.

| Crossref                                      | works                                      |
|-----------------------------------------------|--------------------------------------------|
| `DOI`                                         | `id`, `doi` (10.48550/arXiv.X also `arxiv_id`) |
| `title`, `subtitle` (the first of each)       | `title`, `subtitle`, markup removed        |
| `author`                                      | `authors` (organisations as `literal`)     |
| `issued`, else `published-print`, ...         | `year`                                     |
| `container-title`, `volume`, `issue`, `page`  | `container`, `volume`, `issue`, `pages`    |
| `type`                                        | `type` (CSL); `posted-content` is `informal` |
| `updated-by` (`update-to` on its own DOI)     | `updates`: retraction, correction, concern |
| `indexed`                                     | `updated` (the newest is the snapshot's date) |

`since` keeps the works of that year or later (a work without a year is left out); `types`
keeps the Crossref types named (`journal-article`, `proceedings-article`, ...). A file that is
not gzipped `{"items": [...]}` JSON fails the build naming it; an item that is no work (not an
object, no DOI) is skipped and reported with its file and position.
"""

import functools
import gzip
import logging
from collections.abc import Collection, Generator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from tasks.identifiers import normalize_arxiv
from tasks.registries.crossref_map import slim_work
from tasks.snapshots.schema import WORKS, WORKS_TABLE, in_batches
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

log = logging.getLogger(__name__)

ARXIV_PREFIX = "10.48550/arxiv."
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
    "created",
    "volume",
    "issue",
    "page",
    "type",
    "updated-by",
    "update-to",
    "indexed",
)
_Work = msgspec.defstruct(
    "_Work",
    [(name.replace("-", "_"), Any, None) for name in KEPT],
    rename={name.replace("-", "_"): name for name in KEPT},
)


class _File(msgspec.Struct):
    items: list[msgspec.Raw]  # each item decoded apart: a broken one is skipped, not the file


_FILE = msgspec.json.Decoder(_File)
_ITEM = msgspec.json.Decoder(_Work)
_NAMES = tuple(zip(_Work.__struct_fields__, _Work.__struct_encode_fields__, strict=True))


def read(
    path: Path, since: int | None = None, types: Collection[str] | None = None
) -> Generator[pa.RecordBatch, None, int]:
    """The works in one file of the public data file, in batches of the works schema; returns
    how many broken items it skipped."""
    return (yield from in_batches(_works(path, since, types), WORKS))


def _works(
    path: Path, since: int | None, types: Collection[str] | None
) -> Generator[dict[str, Any], None, int]:
    try:
        raw = path.read_bytes()
        items = _FILE.decode(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).items
    except (OSError, EOFError, msgspec.DecodeError) as exc:
        what = f'not a gzipped {{"items": [...]}} JSON file of works ({exc})'
        raise SnapshotFormatError(path, what) from None
    del raw
    skipped = 0
    for position, item in enumerate(items):
        try:
            decoded = _ITEM.decode(item)
        except msgspec.DecodeError:
            decoded = None
        work = {name: getattr(decoded, field) for field, name in _NAMES} if decoded else {}
        if not isinstance(work.get("DOI"), str) or not work["DOI"].strip():
            log.warning("%s: item %d is no work with a DOI; skipped", path, position)
            skipped += 1
            continue
        if types is not None and work.get("type") not in types:
            continue
        row = _row(work)
        if since is not None and (row["year"] is None or row["year"] < since):
            continue
        yield row
    return skipped


def _row(work: dict[str, Any]) -> dict[str, Any]:
    slim = slim_work(work)
    doi = slim["doi"]
    year = slim["year"]
    return {
        "id": doi,
        "doi": doi,
        "arxiv_id": normalize_arxiv(doi[len(ARXIV_PREFIX) :])
        if doi.startswith(ARXIV_PREFIX)
        else None,
        "title": slim["title"],
        "subtitle": slim["subtitle"],
        "authors": slim["authors"],
        "year": year if isinstance(year, int) and 0 < year < 10_000 else None,
        "container": slim["container"],
        "volume": _text(slim["volume"]),
        "issue": _text(slim["issue"]),
        "pages": _text(slim["pages"]),
        "type": slim["type"],
        "informal": work.get("type") == "posted-content",
        "updates": [
            {"type": n.kind, "doi": n.identifier, "date": _date(n.date)} for n in slim["notices"]
        ]
        or None,
        "updated": _date_parts(work.get("indexed")),
    }


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _date(iso: str | None) -> date | None:
    """A notice's date as crossref_map gives it (`2024-01-05`, `2024-01`, `2024`): its first day."""
    if not iso:
        return None
    parts = [int(p) for p in iso.split("-")[:3]] + [1, 1]
    try:
        return date(parts[0], parts[1], parts[2])
    except ValueError:
        return None


def _date_parts(value: Any) -> date | None:
    parts = (value or {}).get("date-parts") if isinstance(value, dict) else None
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
