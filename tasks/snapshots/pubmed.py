"""The `pubmed` snapshot: PubMed's annual baseline and its daily update files as works.

NLM publishes PubMed as gzipped XML files, `pubmedYYnNNNN.xml.gz`, each a `<PubmedArticleSet>`
of ~30,000 `<PubmedArticle>` (and `<PubmedBookArticle>`) records: the annual baseline, then the
daily update files numbered after it, which add, revise (a record of the same PMID) and delete
(`<DeleteCitation>`) records. Each file is one input part (tasks/snapshots/store.py), in the
order of its number: a later file's record replaces an earlier one of the same PMID, and its
deletions remove them (a row of type DELETED, which the index leaves out). Applying newer update
files to a snapshot is a build with `extend` and only those files.

A record is mapped by the live client's rules (tasks/registries/pubmed_map.py), as an efetch
answer is:

| PubMed                                        | works                                      |
|-----------------------------------------------|--------------------------------------------|
| `MedlineCitation/PMID`                        | `id`, `pmid`                               |
| `ArticleIdList` doi (else `ELocationID` doi)  | `doi`                                      |
| `ArticleTitle` (inline markup as text)        | `title`                                    |
| `AuthorList` (`CollectiveName` as `literal`)  | `authors`                                  |
| `PubDate` Year, else MedlineDate's first year | `year`                                     |
| `Journal/Title`, `Volume`, `Issue`, pages     | `container`, `volume`, `issue`, `pages`    |
| `CommentsCorrections` RetractionIn, ErratumIn, | `updates`: retraction, correction,         |
| ExpressionOfConcernIn; PublicationType        | concern (`doi`: the notice's PMID)         |
| Retracted Publication                         |                                            |
| `DateRevised` (else `DateCompleted`)          | `updated` (the newest: the snapshot's date) |

The XML is read by lxml's iterparse, each record cleared once read: no DTD loaded, no entity
resolved, nothing fetched. A file that is not a `<PubmedArticleSet>` or ends before its close (a
truncated download) fails the build naming it; a record without a PMID is skipped and counted.
"""

import gzip
import re
from collections.abc import Generator, Sequence
from datetime import date
from pathlib import Path
from typing import IO, Any, cast

import pyarrow as pa
from lxml import etree

from models.audit import RegistryRecord
from tasks.registries.pubmed_map import pubmed_article_to_csl
from tasks.snapshots.records import notice_date
from tasks.snapshots.schema import DELETED, WORKS, WORKS_TABLE, in_batches
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

ROOT = "PubmedArticleSet"
RECORDS = ("PubmedArticle", "PubmedBookArticle")
_FILE = re.compile(r"^pubmed\d+n(\d+)\.xml(\.gz)?$")


def open_dump(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped if it is gzipped."""
    with path.open("rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    return cast(IO[bytes], gzip.open(path, "rb")) if gzipped else path.open("rb")


def read(path: Path) -> Generator[pa.RecordBatch, None, int]:
    """One baseline or update file's records (and deletions), in batches of the works schema;
    returns how many broken records it skipped."""
    return (yield from in_batches(_rows(path), WORKS))


def _rows(path: Path) -> Generator[dict[str, Any], None, int]:
    skipped = 0
    with open_dump(path) as stream:
        events = etree.iterparse(
            stream,
            events=("end",),
            tag=(*RECORDS, "DeleteCitation"),
            load_dtd=False,
            resolve_entities=False,
            no_network=True,
            remove_comments=True,
        )
        try:
            for _, element in events:
                if element.tag == "DeleteCitation":
                    yield from _deleted(element)
                elif (row := _row(element)) is not None:
                    yield row
                else:
                    skipped += 1
                element.clear()
                while element.getprevious() is not None:  # what came before is read: drop it
                    del element.getparent()[0]
            root = events.root
        except (etree.XMLSyntaxError, EOFError, OSError) as exc:
            raise SnapshotFormatError(path, f"not a whole PubMed XML file ({exc})") from None
    if root is None or root.tag != ROOT:
        tag = root.tag if root is not None else "nothing"
        raise SnapshotFormatError(path, f"<{tag}> is not a <{ROOT}>")
    return skipped


def _deleted(element: Any) -> Generator[dict[str, Any], None, None]:
    for pmid in element.iterfind("PMID"):
        if (text := (pmid.text or "").strip()).isdigit():
            yield {"id": text, "pmid": text, "type": DELETED}


def _row(element: Any) -> dict[str, Any] | None:
    try:
        record = pubmed_article_to_csl(element)
    except ValueError:  # no MedlineCitation, Article or Journal: not a record we can read
        return None
    pmid = record.identifier
    if not pmid:
        return None
    item = record.item
    authors = [
        {"family": None, "given": None, "literal": name.literal}
        if name.literal
        else {"family": name.family, "given": name.given, "literal": None}
        for name in item.author or []
        if name.literal or name.family
    ]
    return {
        "id": pmid,
        "doi": item.DOI,
        "pmid": pmid,
        "title": item.title,
        "authors": authors or None,
        "year": item.year(),
        "container": item.container_title,
        "volume": item.volume,
        "issue": item.issue,
        "pages": item.page,
        "type": item.type,
        "updates": _updates(record),
        "updated": _revised(element),
    }


def _revised(element: Any) -> date | None:
    """The record's DateRevised (else DateCompleted): the day PubMed last changed it."""
    citation = element.find("MedlineCitation")
    if citation is None:
        return None
    for tag in ("DateRevised", "DateCompleted"):
        found = citation.find(tag)
        if found is not None:
            try:
                return date(*(int(found.findtext(p) or "") for p in ("Year", "Month", "Day")))
            except ValueError:
                continue
    return None


def _updates(record: RegistryRecord) -> list[dict[str, Any]] | None:
    """The record's notices; a Retracted Publication whose notice PubMed does not link, one
    without identifier."""
    updates = [
        {"type": n.kind, "doi": n.identifier, "date": notice_date(n.date)} for n in record.notices
    ]
    if record.retracted and not any(u["type"] == "retraction" for u in updates):
        updates.append({"type": "retraction", "doi": None, "date": None})
    return updates or None


def parts(inputs: Sequence[Path]) -> list[Path]:
    """The baseline and update files, in the order of their numbers."""
    found = [p for p in files_of(inputs) if _FILE.match(p.name)]
    return sorted(found, key=lambda p: int(_FILE.match(p.name).group(1)))  # type: ignore[union-attr]


BUILDER = Builder("pubmed", WORKS_TABLE, read, parts)
