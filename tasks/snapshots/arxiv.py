"""The `arxiv` snapshot: arXiv's metadata snapshot (JSON lines), kept fresh by OAI-PMH.

Built from `arxiv-metadata-oai-snapshot.json` (one JSON object a line, as Kaggle distributes
it), then updated with what arXiv's OAI-PMH `ListRecords` (`metadataPrefix=arXiv`) lists since
the snapshot's date: the harvested pages are parts added to the snapshot (store.build with
`extend`), a paper in them replacing its older record.

| arXiv (JSON line / OAI `<arXiv>`)              | works                                     |
|-----------------------------------------------|-------------------------------------------|
| `id` (2404.05961, hep-th/9901001)             | `id`, `arxiv_id` (without version)        |
| `title`, LaTeX and all ($\\alpha$, \\'e)        | `title` as written, whitespace joined     |
| `authors_parsed` / `<keyname>`, `<forenames>` | `authors` (LaTeX accents as letters)      |
| `versions` / `<created>`                      | `year` of v1 (citers' year), `version`    |
| `doi` (the published version's; the first)    | `doi`                                     |
| `comments` "... withdrawn ..."                | `withdrawn`                               |
| `update_date` / OAI header `datestamp`        | `updated` (the newest: the snapshot's date) |

A line that is no JSON, a record without an id or one whose fields have other types than arXiv
writes (a title that is a list, versions that are strings) is skipped, counted and named (its
line and what is wrong) in the build's summary. A file whose records
lack the fields above is another format: the build stops naming it and the field.
"""

import json
import shutil
from collections.abc import Generator
from datetime import date
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
import msgspec
import pyarrow as pa

from tasks.errors import UsageError
from tasks.identifiers import normalize_arxiv, normalize_doi
from tasks.registries.arxiv import WITHDRAWN
from tasks.registries.http import RegistryHttp
from tasks.registries.oai import OAI, OaiError, pages
from tasks.snapshots.bounded import MB, chunks, lines, read_whole
from tasks.snapshots.fetch import Remote, check_space, state_folder, write_json
from tasks.snapshots.records import iso_date
from tasks.snapshots.schema import WORKS, WORKS_TABLE, Skipped, in_batches
from tasks.snapshots.store import Builder, Manifest, SnapshotFormatError, build, current
from tasks.textnorm import strip_markup

FIELDS = ("id", "title", "authors_parsed", "versions", "update_date")
ARXIV_NS = "{http://arxiv.org/OAI/arXiv/}"
OAI_PATH = "/oai2"  # on CITEAUDIT_ARXIV_URL (export.arxiv.org), the host of the query API

# A metadata line is a few KB (a collaboration's thousands of authors: a few hundred); an
# OAI-PMH page of ListRecords, a few MB. Longer ones are refused, never held.
LINE_LIMIT = 8 * MB
PAGE_LIMIT = 64 * MB


def read(path: Path) -> Generator[pa.RecordBatch, None, int | Skipped]:
    """One part: the metadata snapshot (JSON lines, gzipped or not) or a harvested OAI-PMH
    page."""
    xml = next(chunks(path, 64), b"").lstrip().startswith(b"<")
    if xml:
        return (yield from in_batches(_oai_page(path), WORKS))
    return (yield from in_batches(_json_lines(path), WORKS))


class _Version(msgspec.Struct):
    version: str | None = None
    created: str | None = None


class _Line(msgspec.Struct):
    """The fields read of a metadata line, with the types arXiv writes them (others ignored):
    a line with another type in one (a title that is a list) is skipped, naming the field."""

    id: str | None = None
    title: str | None = None
    authors_parsed: list[list[str]] | None = None
    versions: list[_Version] | None = None
    doi: str | None = None
    comments: str | None = None
    update_date: str | None = None


def _json_lines(path: Path) -> Generator[dict[str, Any], None, Skipped]:
    skipped = Skipped()
    checked = False
    for number, line in enumerate(lines(path, LINE_LIMIT), start=1):
        try:
            item = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError:
            skipped.add(f"{path}:{number}: no JSON")
            continue
        if not isinstance(item, dict):
            skipped.add(f"{path}:{number}: not a JSON object")
            continue
        if not checked and item.get("id"):
            if missing := [f for f in FIELDS if f not in item]:
                what = f"line {number} has no {', '.join(missing)}: not arXiv's format"
                raise SnapshotFormatError(path, what)
            checked = True
        try:
            row = _from_json(msgspec.convert(item, _Line))
        except msgspec.ValidationError as exc:
            skipped.add(f"{path}:{number}: {exc}")
            continue
        if row is None:
            skipped.add(f"{path}:{number}: no arXiv id")
            continue
        yield row
    return skipped


def _from_json(item: _Line) -> dict[str, Any] | None:
    arxiv_id = normalize_arxiv(item.id or "")
    if arxiv_id is None:
        return None
    versions = item.versions or []
    first = _rfc2822_year(versions[0].created) if versions else None
    latest = (versions[-1].version or "").lstrip("v") if versions else ""
    authors = [
        _author(parts[0] if parts else "", parts[1] if len(parts) > 1 else "")
        for parts in item.authors_parsed or []
    ]
    return _row(
        arxiv_id,
        item.title,
        [a for a in authors if a],
        first,
        item.doi,
        item.comments,
        iso_date(item.update_date),
        int(latest) if latest.isdigit() else None,
    )


def _oai_page(path: Path) -> Generator[dict[str, Any], None, int]:
    try:
        root = SafeET.fromstring(read_whole(path, PAGE_LIMIT))
    except SafeET.ParseError as exc:
        raise SnapshotFormatError(path, f"not an OAI-PMH page ({exc})") from None
    if root.tag != f"{OAI}OAI-PMH":
        raise SnapshotFormatError(path, f"<{root.tag}> is not an OAI-PMH page")
    skipped = 0
    for record in root.iter(f"{OAI}record"):
        header = record.find(f"{OAI}header")
        if header is not None and header.get("status") == "deleted":
            continue
        metadata = record.find(f"{OAI}metadata/{ARXIV_NS}arXiv")
        stamp = header.findtext(f"{OAI}datestamp") if header is not None else None
        row = _from_oai(metadata, iso_date(stamp)) if metadata is not None else None
        if row is None:
            skipped += 1
        else:
            yield row
    return skipped


def _from_oai(metadata: Element, stamp: date | None) -> dict[str, Any] | None:
    arxiv_id = normalize_arxiv(metadata.findtext(f"{ARXIV_NS}id") or "")
    if arxiv_id is None:
        return None
    created = iso_date(metadata.findtext(f"{ARXIV_NS}created"))
    authors = [
        _author(a.findtext(f"{ARXIV_NS}keyname") or "", a.findtext(f"{ARXIV_NS}forenames") or "")
        for a in metadata.iter(f"{ARXIV_NS}author")
    ]
    return _row(
        arxiv_id,
        metadata.findtext(f"{ARXIV_NS}title"),
        [a for a in authors if a],
        created.year if created else None,
        metadata.findtext(f"{ARXIV_NS}doi"),
        metadata.findtext(f"{ARXIV_NS}comments"),
        stamp,
        None,  # the arXiv format names no versions
    )


def _row(
    arxiv_id: str,
    title: str | None,
    authors: list[dict[str, str | None]],
    year: int | None,
    doi: str | None,
    comments: str | None,
    updated: date | None,
    version: int | None,
) -> dict[str, Any]:
    return {
        "id": arxiv_id,
        "arxiv_id": arxiv_id,
        "doi": normalize_doi((doi or "").split(" ")[0]),
        "title": " ".join((title or "").split()) or None,
        "authors": authors,
        "year": year,
        "container": "arXiv",
        "type": "article",
        "informal": True,
        "withdrawn": bool(comments and WITHDRAWN.search(comments)),
        "version": version,
        "updated": updated,
    }


def _author(family: str, given: str) -> dict[str, str | None] | None:
    """arXiv's parsed name, its LaTeX accents (`Garc\\'ia`) as letters; a name with no
    forenames (a collaboration) is literal."""
    family, given = _plain(family), _plain(given)
    if not family:
        return None
    if not given:
        return {"family": None, "given": None, "literal": family}
    return {"family": family, "given": given, "literal": None}


def _plain(text: str) -> str:
    text = " ".join(text.split())
    return " ".join(strip_markup(text).split()) if "\\" in text or "{" in text else text


def _rfc2822_year(text: str | None) -> int | None:
    try:
        return parsedate_to_datetime(text).year if text else None
    except (TypeError, ValueError):
        return None


BUILDER = Builder("arxiv", WORKS_TABLE, read)


class NoSnapshotToUpdate(UsageError):
    """An update needs a snapshot built from arXiv's metadata snapshot first."""


def update(http: RegistryHttp, root: Path) -> Manifest:
    """Add what arXiv lists as changed since the snapshot's date (OAI-PMH, over `http`: the
    arXiv host's stack and limiter, best without the response cache: pages are read once)."""
    folder = current(root, BUILDER.name)
    if folder is None:
        raise NoSnapshotToUpdate(
            "no arxiv snapshot to update: build it from arXiv's metadata snapshot first"
        )
    manifest = Manifest.read(folder)
    since = date.fromisoformat(manifest.date) if manifest.date else None
    harvested = root / f".{BUILDER.name}.harvest"
    harvest(http, harvested, since)
    if any(harvested.iterdir()):
        manifest = build(BUILDER, [harvested], root, extend=True)
    shutil.rmtree(harvested)
    shutil.rmtree(state_folder(harvested))
    return manifest


def harvest(
    http: RegistryHttp, folder: Path, since: date | None = None, reserve: int | None = None
) -> int:
    """Every page of arXiv's OAI-PMH `ListRecords` (changed since `since`, else all) saved into
    `folder` as page-NNNNN.xml, at arXiv's pace (`http`'s limiter); a harvest killed midway
    goes on from the token of the last page saved. The pages saved by this call. `reserve`:
    the first page's size times the pages the list announces must fit on the disk, less
    these bytes (else NotEnoughSpace, that page alone written)."""
    state_file = state_folder(folder) / "harvest.json"  # beside the pages, not among them
    wanted = since.isoformat() if since else None
    state = json.loads(state_file.read_text()) if state_file.is_file() else None
    if state is not None and state["since"] == wanted and state["done"]:
        return 0
    resume = state is not None and state["since"] == wanted and folder.is_dir()
    if not resume:
        if folder.exists():
            shutil.rmtree(folder)
        state = {"since": wanted, "pages": 0, "token": None, "done": False}
    assert state is not None
    folder.mkdir(parents=True, exist_ok=True)
    saved = 0
    try:
        for page in pages(http, OAI_PATH, "arXiv", since, state["token"]):
            number = state["pages"] + 1
            tmp = state_file.with_name("page.tmp")
            tmp.write_bytes(page.body)
            tmp.replace(folder / f"page-{number:05d}.xml")
            state = {**state, "pages": number, "token": page.token, "done": page.token is None}
            write_json(state_file, state)
            saved += 1
            if number == 1 and reserve is not None and page.listed and page.records:
                ahead = len(page.body) * (page.listed - page.records) // page.records
                check_space(
                    folder, [Remote("", "OAI-PMH pages", ahead)], state_file.parent, reserve
                )
    except OaiError as exc:
        if exc.code != "badResumptionToken" or saved:
            raise
        write_json(state_file, {**state, "since": "expired"})  # its token is gone: anew
        return harvest(http, folder, since, reserve)
    write_json(state_file, {**state, "done": True})
    return saved
