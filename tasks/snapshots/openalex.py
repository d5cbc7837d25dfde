"""The `openalex` snapshot: OpenAlex's works snapshot, as published, as works.

OpenAlex publishes its works (CC0, ~250M) as `data/works/updated_date=YYYY-MM-DD/part_NNN.gz`,
gzipped JSON lines of Work objects, with a `manifest` (JSON) listing every part. Each part is one
input part (tasks/snapshots/store.py), in the order of its `updated_date`, then its number: a work
in a later partition replaces the one of the same id before it, so applying newer partitions to
a snapshot is a build with `extend` and only those parts. Given the snapshot's folder (or its
`data/works`), a build reads the parts its manifest lists: one listed but missing (an unfinished
download) fails it naming the part.

| OpenAlex Work                                 | works                                      |
|-----------------------------------------------|--------------------------------------------|
| `id` (https://openalex.org/W123)              | `id` (W123)                                |
| `doi`, `ids.doi`                              | `doi`                                      |
| `ids.pmid`                                    | `pmid`                                     |
| a location's arXiv page or the arXiv DOI      | `arxiv_id`                                 |
| `display_name` (else `title`)                 | `title`                                    |
| `authorships[].author.display_name` (else     | `authors`, split as dblp's names are       |
| `raw_author_name`)                            |                                            |
| `publication_year`, `type`                    | `year`, `type` (openalex.py's CSL types)   |
| `primary_location.source.display_name`        | `container` (a repository's only if it is  |
|                                               | a preprint server)                         |
| `biblio` volume, issue, first and last page   | `volume`, `issue`, `pages`                 |
| `type` preprint, or a preprint server's copy  | `informal`                                 |
| `is_retracted`                                | `updates`: a retraction                    |
| `updated_date`                                | `updated` (the newest: the snapshot's date) |

Filters keep part of the dump (and make the snapshot not `complete`: its absence never decides):
`since` (the works of that year or later), `types` (OpenAlex's: article, book-chapter, preprint,
...), `sources` (the primary source's id, S123, or its name, case-insensitively). Each line is
decoded by msgspec into the fields kept only (abstracts, references and concepts are skipped); a
line that is no JSON or no work is skipped and counted, a line past LINE bytes or LINE_VALUES
JSON values refuses the file.
"""

import functools
import json
import re
from collections.abc import Collection, Generator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from tasks.identifiers import normalize_arxiv, normalize_doi
from tasks.match.venues import is_preprint_venue
from tasks.registries.openalex import OPENALEX_TO_CSL_TYPE
from tasks.snapshots.bounded import MB, lines, too_many, values
from tasks.snapshots.records import iso_date, name_parts, plain_doi
from tasks.snapshots.schema import (
    WORKS,
    WORKS_TABLE,
    Skipped,
    in_batches,
    tuples_batch,
    uncollected,
)
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

LINE = 64 * MB  # bytes one work's line may hold (OpenAlex's largest are a few MB)
# The JSON values one line may hold (tiny values decode to objects tens of times their bytes);
# only a line over LINE_BYTES is counted (one under it decodes to a few tens of MB at most).
LINE_VALUES = 2_000_000
LINE_BYTES = MB
_PART = re.compile(r"updated_date=(\d{4}-\d{2}-\d{2})/part_(\d+)\.gz$")
# Greedy and first-found: a URL repeating `arxiv.org/abs/` is read once (no lazy run to `$`).
_ARXIV_PAGE = re.compile(r"arxiv\.org/(?:abs|pdf)/([^?#\s]+)", re.IGNORECASE)
_WORK_ID = "https://openalex.org/W"


class _Source(msgspec.Struct):
    id: str | None = None
    display_name: str | None = None
    type: str | None = None


class _Location(msgspec.Struct):
    source: _Source | None = None
    landing_page_url: str | None = None
    pdf_url: str | None = None


class _Author(msgspec.Struct):
    display_name: str | None = None


class _Authorship(msgspec.Struct):
    author: _Author | None = None
    raw_author_name: str | None = None


class _Biblio(msgspec.Struct):
    volume: str | None = None
    issue: str | None = None
    first_page: str | None = None
    last_page: str | None = None


class _Ids(msgspec.Struct):
    doi: str | None = None
    pmid: str | None = None


class _Work(msgspec.Struct):
    id: str | None = None
    doi: str | None = None
    display_name: str | None = None
    title: str | None = None
    publication_year: int | None = None
    type: str | None = None
    authorships: list[_Authorship] | None = None
    primary_location: _Location | None = None
    locations: list[_Location] | None = None
    ids: _Ids | None = None
    biblio: _Biblio | None = None
    is_retracted: bool | None = None
    updated_date: str | None = None


_DECODE = msgspec.json.Decoder(_Work)


def read(
    path: Path,
    since: int | None = None,
    types: Collection[str] | None = None,
    sources: Collection[str] | None = None,
) -> Generator[pa.RecordBatch, None, Skipped]:
    """One part's works in batches of the works schema; returns the lines it skipped, named."""
    return (yield from in_batches(_rows(path, since, types, sources), WORKS, tuples_batch))


def _rows(
    path: Path,
    since: int | None,
    types: Collection[str] | None,
    sources: Collection[str] | None,
) -> Generator[tuple[Any, ...], None, Skipped]:
    skipped = Skipped()
    checked = False
    with uncollected():
        for number, line in enumerate(lines(path, LINE), start=1):
            if len(line) < 8 and not line.strip():  # a blank line (a work's is thousands long)
                continue
            if len(line) > LINE_BYTES and values(line) > LINE_VALUES:
                raise too_many(path, f"line {number}", LINE_VALUES)
            try:
                work = _DECODE.decode(line)
            except msgspec.DecodeError as exc:  # no JSON, or a field of another type
                if not checked:
                    _check(path, number, _id_of(line))
                skipped.add(f"{path}:{number}: {exc}")
                continue
            if not checked:
                _check(path, number, work.id or "no id")
                checked = True
            if not _kept(work, since, types, sources):
                continue
            if (row := _row(work)) is None:
                skipped.add(f"{path}:{number}: no OpenAlex work id ({work.id!r})")
                continue
            yield row
    return skipped


def _id_of(line: bytes) -> Any:
    """The `id` of a line of JSON that is no work of the documented shape (None for no JSON)."""
    try:
        item = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None
    return item.get("id", "no id") if isinstance(item, dict) else "no object"


def _check(path: Path, number: int, work_id: Any) -> None:
    """The file's first work must be OpenAlex's (its id https://openalex.org/W...): else it is
    a file of another format. A line that is no JSON at all is skipped, not checked."""
    if work_id is not None and not str(work_id).startswith(_WORK_ID):
        raise SnapshotFormatError(path, f"line {number} is no OpenAlex work (its id: {work_id!r})")


def _kept(
    work: _Work,
    since: int | None,
    types: Collection[str] | None,
    sources: Collection[str] | None,
) -> bool:
    if since is not None and (work.publication_year or 0) < since:
        return False
    if types is not None and work.type not in types:
        return False
    if sources is None:
        return True
    source = work.primary_location.source if work.primary_location else None
    if source is None:
        return False
    short = (source.id or "").rsplit("/", 1)[-1].lower()
    return short in sources or (source.display_name or "").lower() in sources


def _row(work: _Work) -> tuple[Any, ...] | None:
    """The work's row, in the works schema's column order (openalex.py's rules, as a live
    answer is mapped)."""
    if not (work.id or "").startswith(_WORK_ID):
        return None
    ids = work.ids or _Ids()
    given = work.doi or ids.doi
    doi = (plain_doi(given) or normalize_doi(given)) if given else None
    source = work.primary_location.source if work.primary_location else None
    name = source.display_name if source else None
    repository = source is not None and source.type == "repository"
    preprint_copy = bool(repository and name and is_preprint_venue(name))
    biblio = work.biblio or _Biblio()
    first, last = biblio.first_page, biblio.last_page
    year = work.publication_year
    return (
        work.id.rsplit("/", 1)[-1],  # type: ignore[union-attr]  # checked above
        doi,
        _arxiv_id(work, doi),
        (ids.pmid or "").rsplit("/", 1)[-1] or None,
        work.display_name or work.title,
        None,
        [_split(author) for a in work.authorships or [] if (author := _named(a))] or None,
        year if year is not None and 0 < year < 10_000 else None,
        None if repository and not preprint_copy else name,
        None,
        biblio.volume,
        biblio.issue,
        f"{first}-{last}" if first and last and first != last else first,
        OPENALEX_TO_CSL_TYPE.get(str(work.type), "article"),
        work.type == "preprint" or preprint_copy,
        None,
        None,
        None,
        [{"type": "retraction", "doi": None, "date": None}] if work.is_retracted else None,
        iso_date(work.updated_date),
    )


def _named(authorship: _Authorship) -> str:
    return (authorship.author.display_name if authorship.author else None) or (
        authorship.raw_author_name or ""
    )


@functools.lru_cache(maxsize=1 << 16)
def _split(name: str) -> dict[str, str | None]:
    """A name split once (authors recur across works); the dict is only read."""
    return name_parts(name)


def _arxiv_id(work: _Work, doi: str | None) -> str | None:
    """The arXiv id of the work's arXiv copy: its arXiv DOI, else a location on arxiv.org."""
    if doi and doi.startswith("10.48550/arxiv."):
        return normalize_arxiv(doi)
    for location in work.locations or []:
        for url in (location.landing_page_url, location.pdf_url):
            if url and (found := _ARXIV_PAGE.search(url)):
                return normalize_arxiv(found.group(1).removesuffix(".pdf"))
    return None


def parts(inputs: Sequence[Path]) -> list[Path]:
    """The parts given: each `updated_date=*/part_*.gz` under the folders given (the snapshot's
    own, its data/works, or one partition) and each such file given, by date then number. A
    folder's manifest names the parts it must hold: one missing fails the build."""
    found: set[Path] = set()
    for given in inputs:
        if given.is_dir():
            works = given / "data" / "works" if (given / "data" / "works").is_dir() else given
            found.update(p for p in works.rglob("part_*.gz") if _PART.search(p.as_posix()))
            _check_manifest(works)
        else:
            found.update(p for p in files_of([given]) if _PART.search(p.as_posix()))
    return sorted(found, key=_order)


def _order(path: Path) -> tuple[str, int]:
    match = _PART.search(path.as_posix())
    assert match is not None
    return match.group(1), int(match.group(2))


def _check_manifest(works: Path) -> None:
    manifest = works / "manifest"
    if not manifest.is_file():
        return
    try:
        entries = json.loads(manifest.read_text())["entries"]
        listed = [str(entry["url"]) for entry in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotFormatError(manifest, f"not OpenAlex's manifest ({exc!r})") from None
    for url in listed:
        match = _PART.search(url)
        if match is None:
            raise SnapshotFormatError(manifest, f"lists {url}, no part of the works snapshot")
        part = works / f"updated_date={match.group(1)}" / f"part_{match.group(2)}.gz"
        if not part.is_file():
            raise SnapshotFormatError(part, "listed in the manifest but not there (unfinished?)")


def builder(
    since: int | None = None,
    types: Collection[str] | None = None,
    sources: Collection[str] | None = None,
) -> Builder:
    """The openalex snapshot's builder, keeping the works since a year, of some types or of some
    sources only (any of these: a filtered snapshot)."""
    chosen_types = sorted(types) if types else None
    chosen_sources = sorted(s.lower() for s in sources) if sources else None
    return Builder(
        "openalex",
        WORKS_TABLE,
        functools.partial(
            read,
            since=since,
            types=frozenset(chosen_types) if chosen_types else None,
            sources=frozenset(chosen_sources) if chosen_sources else None,
        ),
        parts,
        options={"since": since, "types": chosen_types, "sources": chosen_sources},
    )
