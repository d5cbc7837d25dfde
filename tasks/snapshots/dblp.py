"""The `dblp` snapshot: dblp.xml.gz (with its dblp.dtd beside it) as works.

dblp's dump is one XML file of 7M+ records, ISO-8859-1 with the DTD's named entities (`&ouml;`),
so the DTD must be loaded to read it. It is read in pieces of about PIECE bytes of XML, each cut
after a record's closing tag (records do not nest) and parsed as a document of its own (the
dump's own header and `<dblp>`, its records, `</dblp>`): memory stays flat whatever the file's
size, and the store's workers parse pieces side by side (parsing is most of a build's time).
Within a piece, lxml's iterparse clears each record once read.

| dblp                                  | works                                           |
|---------------------------------------|-------------------------------------------------|
| `key`, `mdate`                        | `id`, `updated` (the newest is the dump's date)   |
| `<title>` with `<i>`, `<sub>`, `<sup>`, `<tt>` | its text, without dblp's closing period |
| `<author>` "Wei Wang 0001"            | family Wang, given Wei (homonym number dropped) |
| `<journal>` / `<booktitle>`           | `container` (dblp's short form: "NeurIPS")        |
| `<crossref>` conf/nips/2017           | `parent`; its proceedings' title: `container_full` |
| `<ee>` doi.org / arxiv.org links      | `doi`, `arxiv_id`                               |
| CoRR `<volume>abs/2404.05961`          | `arxiv_id`                                      |
| `publtype="informal"` (or "informal publication") | `informal`                          |
| `www` (person pages), `person`, `data` | skipped: no works                              |

A DTD that declares record types or drops fields this reader does not know is a dump of another
format: the build stops naming dblp.dtd and what changed. A dump that ends before its
`</dblp>` (a truncated download) stops it too, as does one using an entity its DTD does not
declare (`J&foobar;rgen`), and one that names any external entity
but the dblp.dtd beside it (a `SYSTEM "file:///..."` entity would read a local file into the
snapshot): no other file is ever read, by the dump or by its DTD.
"""

import io
import re
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from lxml import etree

from tasks.identifiers import is_arxiv_doi, normalize_arxiv, normalize_doi
from tasks.snapshots.bounded import chunks, too_large
from tasks.snapshots.records import iso_date, name_parts
from tasks.snapshots.schema import WORKS, WORKS_TABLE, in_batches
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

TYPES = {
    "article": "article-journal",
    "inproceedings": "paper-conference",
    "proceedings": "book",
    "book": "book",
    "incollection": "chapter",
    "phdthesis": "thesis",
    "mastersthesis": "thesis",
}
SKIPPED = {"www", "person", "data"}  # records that are no works
FIELDS = {"author", "title", "booktitle", "journal", "volume", "number", "pages", "year", "ee"}
FIELDS |= {"crossref"}

_CORR = re.compile(r"^abs/(.+)$")


PIECE = 1 << 24  # bytes of XML per piece: ~28,000 records of ~600 bytes
RECORD = 1 << 23  # bytes one record may hold (dblp's largest are a few KB)
# A record ends with its closing tag (the records a build skips too: a piece may end with one).
_ENDS = tuple(f"</{tag}>".encode() for tag in [*TYPES, *SKIPPED])
_ROOT, _ROOT_END = b"<dblp>", b"</dblp>"
_DOCTYPE = b'<!DOCTYPE dblp SYSTEM "dblp.dtd"><dblp/>'  # what loads the DTD alone


@dataclass(frozen=True)
class Piece:
    """Whole records of the dump, to be parsed as a document of their own."""

    path: Path  # the dump, named in errors
    dtd: Path
    header: bytes  # the dump's XML declaration, DOCTYPE and <dblp>
    records: bytes


def read(path: Path) -> Generator[pa.RecordBatch, None, int]:
    """The works in one dblp.xml(.gz), in batches; its dblp.dtd must be beside it. Returns
    how many records were left out (no title)."""
    skipped = 0
    for piece in pieces(path):
        skipped += yield from read_piece(piece)
    return skipped


def pieces(path: Path) -> Iterator[Piece]:
    """The dump cut into pieces of whole records; one holding no record's end within RECORD
    bytes past a piece is refused (memory stays bounded whatever the dump expands to)."""
    dtd = path.parent / "dblp.dtd"
    check_dtd(dtd, path)
    stream = chunks(path, PIECE)
    held = next(stream, b"")
    root = held.find(_ROOT)
    if root < 0:
        raise SnapshotFormatError(path, "no <dblp> element where the dump begins")
    header, held = held[: root + len(_ROOT)], held[root + len(_ROOT) :]
    for more in stream:
        held += more
        if cut := _last_record_end(held):
            yield Piece(path, dtd, header, held[:cut])
            held = held[cut:]
        if len(held) > PIECE + RECORD:
            raise too_large(path, "a record (or what lies between two)", RECORD)
    rest = held.strip()
    if not rest.endswith(_ROOT_END):
        what = "not well-formed XML (it ends before </dblp>); a truncated download?"
        raise SnapshotFormatError(path, what)
    if rest := rest[: -len(_ROOT_END)].strip():
        yield Piece(path, dtd, header, rest)


def _last_record_end(held: bytes) -> int:
    """Where the last whole record in `held` ends (0 if none does)."""
    at = len(held)
    while (at := held.rfind(b"</", 0, at)) >= 0:
        for end in _ENDS:
            if held.startswith(end, at):
                return at + len(end)
    return 0


def read_piece(piece: Piece) -> Generator[pa.RecordBatch, None, int]:
    """The works of one piece, in batches; returns how many were left out (no title)."""
    document = io.BytesIO(piece.header + piece.records + _ROOT_END)
    events = etree.iterparse(
        document,
        events=("end",),
        tag=list(TYPES),
        load_dtd=True,  # the named entities (&ouml;) are declared there
        resolve_entities=True,
        no_network=True,
        huge_tree=True,
    )
    events.resolvers.add(_Beside(piece.dtd, piece.path))
    return (yield from in_batches(_records(piece.path, events), WORKS))


class _Beside(etree.Resolver):
    """The dump's DTD is the dblp.dtd beside it, whatever path its DOCTYPE names; any other
    external entity (a local file, a URL) refuses the dump: lxml would otherwise read it."""

    def __init__(self, dtd: Path, dump: Path) -> None:
        super().__init__()
        self._dtd = str(dtd)
        self._dump = dump

    def resolve(self, system_url: str, public_id: str, context: Any) -> Any:
        if system_url and system_url.endswith("dblp.dtd"):
            return self.resolve_filename(self._dtd, context)
        what = f"refused: it names an external entity ({system_url or public_id}), not dblp.dtd"
        raise SnapshotFormatError(self._dump, what)


def _records(path: Path, events: Any) -> Generator[dict[str, Any], None, int]:
    skipped = 0
    try:
        for _, element in events:
            row = record(element)
            element.clear(keep_tail=False)
            while element.getprevious() is not None:  # what came before is read: drop it
                del element.getparent()[0]
            if row is None:
                skipped += 1
            else:
                yield row
    except etree.XMLSyntaxError as exc:
        _undeclared(path, events)
        what = f"not well-formed XML ({exc}); a truncated download?"
        raise SnapshotFormatError(path, what) from None
    _undeclared(path, events)
    return skipped


_UNDECLARED = {etree.ErrorTypes.WAR_UNDECLARED_ENTITY, etree.ErrorTypes.ERR_UNDECLARED_ENTITY}


def _undeclared(path: Path, events: Any) -> None:
    """Refuse the dump if it uses an entity dblp.dtd does not declare (`J&foobar;rgen`): libxml2
    may only warn of one and leave the text garbled around it."""
    for entry in events.error_log:
        if entry.type in _UNDECLARED:
            what = f"{entry.message}: an entity dblp.dtd does not declare; not dblp's XML"
            raise SnapshotFormatError(path, what)


def check_dtd(dtd: Path, xml: Path) -> None:
    """Stop unless `dtd` declares the dump format this reader knows."""
    if not dtd.is_file():
        raise SnapshotFormatError(xml, f"no dblp.dtd beside it ({dtd}): download both")
    # Loaded as the dump loads it, through _Beside: the DTD's own entities read no other file.
    parser = etree.XMLParser(load_dtd=True, no_network=True, resolve_entities=True)
    parser.resolvers.add(_Beside(dtd, xml))
    try:
        declared = etree.fromstring(_DOCTYPE, parser).getroottree().docinfo.externalDTD
    except etree.XMLSyntaxError as exc:
        raise SnapshotFormatError(dtd, f"not a DTD ({exc})") from None
    if declared is None:
        raise SnapshotFormatError(dtd, "not a DTD")
    elements = {e.name: e for e in declared.iterelements()}
    if "dblp" not in elements:
        raise SnapshotFormatError(dtd, "declares no <dblp> element")
    records = _names(elements["dblp"].content)
    if new := sorted(records - set(TYPES) - SKIPPED):
        raise SnapshotFormatError(dtd, f"new record types {', '.join(new)}")
    if missing := sorted(FIELDS - set(elements)):
        raise SnapshotFormatError(dtd, f"no longer declares {', '.join(missing)}")


def _names(content: Any) -> set[str]:
    """The element names a DTD content model allows."""
    if content is None:
        return set()
    found = {content.name} if content.name else set()
    return found | _names(content.left) | _names(content.right)


def record(element: Any) -> dict[str, Any] | None:
    """One dblp record as a works row; None for one without a title."""
    fields: dict[str, list[str]] = {}
    authors = []
    title = None
    for child in element:
        tag = child.tag
        if tag == "title":
            title = _title(child)
        elif tag == "author":
            authors.append(name_parts(child.text or ""))
        elif isinstance(tag, str):
            fields.setdefault(tag, []).append((child.text or "").strip())
    if not title:
        return None
    first = {tag: values[0] for tag, values in fields.items() if values and values[0]}
    doi = arxiv = None
    for link in fields.get("ee", []):
        if "doi.org/" in link and doi is None:
            doi = normalize_doi(link)
        elif "arxiv.org/" in link and arxiv is None:
            arxiv = normalize_arxiv(link)
    if arxiv is None and is_arxiv_doi(doi):
        arxiv = normalize_arxiv(doi)
    volume = first.get("volume")
    if first.get("journal") == "CoRR" and volume and (corr := _CORR.match(volume)):
        arxiv = arxiv or normalize_arxiv(corr.group(1))
    year = first.get("year", "")
    publtype = element.get("publtype") or ""
    return {
        "id": element.get("key"),
        "doi": doi,
        "arxiv_id": arxiv,
        "title": title,
        "authors": authors,
        "year": int(year) if year.isdigit() and len(year) == 4 else None,
        "container": first.get("journal") or first.get("booktitle"),
        "volume": volume,
        "issue": first.get("number"),
        "pages": first.get("pages"),
        "type": TYPES[element.tag] if not publtype.startswith("informal") else "article",
        "informal": publtype.startswith("informal"),
        "parent": first.get("crossref"),
        "updated": iso_date(element.get("mdate")),
    }


def _title(element: Any) -> str | None:
    """The title's text, markup (`<i>`, `<sub>`, ...) flattened, dblp's closing period dropped."""
    text = " ".join("".join(element.itertext()).split())
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return text or None


def parts(inputs: Sequence[Path]) -> list[Path]:
    """The dump files given (dblp.xml.gz, or a folder holding it): its dblp.dtd is no part."""
    return [p for p in files_of(inputs) if p.name.endswith((".xml", ".xml.gz"))]


BUILDER = Builder("dblp", WORKS_TABLE, read, parts, pieces=pieces, read_piece=read_piece)
