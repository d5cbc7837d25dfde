"""The `pubmed` snapshot: PubMed's annual baseline and its daily update files as works.

NLM publishes PubMed as gzipped XML files, `pubmedYYnNNNN.xml.gz`, each a `<PubmedArticleSet>`
of ~30,000 `<PubmedArticle>` (and `<PubmedBookArticle>`) records: the annual baseline, then the
daily update files numbered after it, which add, revise (a record of the same PMID) and delete
(`<DeleteCitation>`) records. Each file is one input part (tasks/snapshots/store.py), in the
order of its number: a later file's record replaces an earlier one of the same PMID, and its
deletions remove them (a row of type DELETED, which the index leaves out). Applying newer update
files to a snapshot is a build with `extend` and only those files.

A record is mapped by the live client's rules (tasks/registries/pubmed_map.py), as an efetch
answer is, its fields read by lxml's own lookups:

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

The XML is streamed (tasks/snapshots/bounded.py) into lxml's pull parser, each record cleared
once read: no DTD loaded, no entity resolved, nothing fetched; a record longer than RECORD is
refused (a bomb, not a record). A file that is not a `<PubmedArticleSet>` or ends before its
close (a truncated download) fails the build naming it; a record without a PMID is skipped and
counted.
"""

import re
from collections.abc import Generator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
from lxml import etree

from tasks.identifiers import normalize_pmid
from tasks.registries.pubmed_map import (
    NOTICE_KINDS,
    RETRACTED_PUBLICATION_UI,
    article_ids,
    elocation_doi,
    pagination_pages,
    pub_date,
    pubmed_article_to_csl,
    ref_source_date,
)
from tasks.snapshots.bounded import MB, chunks, too_large
from tasks.snapshots.records import notice_date
from tasks.snapshots.schema import DELETED, WORKS, WORKS_TABLE, Skipped, in_batches
from tasks.snapshots.store import Builder, SnapshotFormatError, files_of

ROOT = "PubmedArticleSet"
RECORDS = ("PubmedArticle", "PubmedBookArticle")
RECORD = 4 * MB  # bytes one record may hold (PubMed's largest are a few hundred KB); parsed, a
# record of tiny elements is tens of times its bytes
_FILE = re.compile(r"^pubmed\d+n(\d+)\.xml(\.gz)?$")


def read(path: Path) -> Generator[pa.RecordBatch, None, Skipped]:
    """One baseline or update file's records (and deletions), in batches of the works schema;
    returns the broken records it skipped, named."""
    return (yield from in_batches(_rows(path), WORKS))


def _rows(path: Path) -> Generator[dict[str, Any], None, Skipped]:
    skipped = Skipped()
    number = 0  # the record's place in the file
    parser = etree.XMLPullParser(
        events=("end",),
        tag=(*RECORDS, "DeleteCitation"),
        load_dtd=False,
        resolve_entities=False,
        no_network=True,
        remove_comments=True,
    )
    unread = 0  # bytes fed since the last record ended: one record may hold no more than RECORD
    try:
        for chunk in chunks(path):
            parser.feed(chunk)
            unread += len(chunk)
            for _, element in parser.read_events():
                unread = 0
                number += 1
                if element.tag == "DeleteCitation":
                    yield from _deleted(element)
                elif (row := _row(element)) is not None:
                    yield row
                else:
                    skipped.add(f"{path}: record {number} has no PMID, Article or Journal")
                element.clear()
                while element.getprevious() is not None:  # what came before is read: drop it
                    del element.getparent()[0]
            if unread > RECORD:
                raise too_large(path, "a record (or what lies between two)", RECORD)
        root = parser.close()
    except etree.XMLSyntaxError as exc:
        raise SnapshotFormatError(path, f"not a whole PubMed XML file ({exc})") from None
    if root.tag != ROOT:
        raise SnapshotFormatError(path, f"<{root.tag}> is not a <{ROOT}>")
    return skipped


def _deleted(element: Any) -> Generator[dict[str, Any], None, None]:
    for pmid in element.iterfind("PMID"):
        if (text := (pmid.text or "").strip()).isdigit():
            yield {"id": text, "pmid": text, "type": DELETED}


def _row(element: Any) -> dict[str, Any] | None:
    """A `<PubmedArticle>`'s row by pubmed_map's rules, read with lxml's own lookups (the
    mapping to a CSL record, abstract and all, costs more than the XML's parse); a book's by
    pubmed_map itself."""
    citation = element.find("MedlineCitation")
    article = citation.find("Article") if citation is not None else None
    if element.tag != "PubmedArticle" or article is None:
        return _book_row(element)
    pmid = normalize_pmid(citation.findtext("PMID"))
    journal = article.find("Journal")
    if pmid is None or journal is None:
        return None
    issue = journal.find("JournalIssue")
    issued = pub_date(issue.find("PubDate")) if issue is not None else None
    return {
        "id": pmid,
        "doi": article_ids(element.find("PubmedData/ArticleIdList")).get("doi")
        or elocation_doi(article),
        "pmid": pmid,
        "title": _flat(article.find("ArticleTitle")),
        "authors": _authors(article) or None,
        "year": issued["date-parts"][0][0] if issued else None,
        "container": _flat(journal.find("Title")),
        "volume": _flat(issue.find("Volume")) if issue is not None else None,
        "issue": _flat(issue.find("Issue")) if issue is not None else None,
        "pages": pagination_pages(article.find("Pagination")),
        "type": "article-journal",
        "updates": _notices(citation, article) or None,
        "updated": _revised(element),
    }


def _flat(element: Any) -> str | None:
    """An element's text, inline markup (<i>, <sup>) flattened, whitespace collapsed."""
    if element is None:
        return None
    return " ".join("".join(element.itertext()).split()) or None


def _spaced(text: str | None) -> str | None:
    return " ".join(text.split()) or None if text else None


def _authors(article: Any) -> list[dict[str, str | None]]:
    """AuthorList as pubmed_map reads it: valid authors, a collective name as literal."""
    names: list[dict[str, str | None]] = []
    for author in article.iterfind("AuthorList/Author"):
        if author.get("ValidYN", "Y") != "Y":
            continue
        # Names hold no markup: their text, spaces collapsed (as pubmed_map's _text does).
        if family := _spaced(author.findtext("LastName")):
            given = _spaced(author.findtext("ForeName")) or _spaced(author.findtext("Initials"))
            names.append({"family": family, "given": given, "literal": None})
        elif collective := _flat(author.find("CollectiveName")):
            names.append({"family": None, "given": None, "literal": collective})
    return names


def _notices(citation: Any, article: Any) -> list[dict[str, Any]]:
    """Retractions, corrections and concerns PubMed links (CommentsCorrections), by pubmed_map's
    kinds; a Retracted Publication whose notice is not linked, one without identifier."""
    found: dict[tuple[str, str | None], dict[str, Any]] = {}
    for link in citation.iterfind("CommentsCorrectionsList/CommentsCorrections"):
        if (kind := NOTICE_KINDS.get(link.get("RefType", ""))) is None:
            continue
        pmid = normalize_pmid(link.findtext("PMID"))
        when = notice_date(ref_source_date(_flat(link.find("RefSource"))))
        found.setdefault((kind, pmid), {"type": kind, "doi": pmid, "date": when})
    retracted = any(
        kind.get("UI") == RETRACTED_PUBLICATION_UI or _flat(kind) == "Retracted Publication"
        for kind in article.iterfind("PublicationTypeList/PublicationType")
    )
    if retracted and not any(kind == "retraction" for kind, _ in found):
        found[("retraction", None)] = {"type": "retraction", "doi": None, "date": None}
    return list(found.values())


def _book_row(element: Any) -> dict[str, Any] | None:
    try:
        record = pubmed_article_to_csl(element)
    except ValueError:  # no MedlineCitation, Article or Journal: not a record we can read
        return None
    item = record.item
    if not record.identifier:
        return None
    return {
        "id": record.identifier,
        "doi": item.DOI,
        "pmid": record.identifier,
        "title": item.title,
        "authors": [
            {"family": n.family, "given": n.given, "literal": n.literal}
            for n in item.author or []
            if n.family or n.literal
        ]
        or None,
        "year": item.year(),
        "container": item.container_title,
        "type": item.type,
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


def parts(inputs: Sequence[Path]) -> list[Path]:
    """The baseline and update files, in the order of their numbers."""
    found = [p for p in files_of(inputs) if _FILE.match(p.name)]
    return sorted(found, key=lambda p: int(_FILE.match(p.name).group(1)))  # type: ignore[union-attr]


BUILDER = Builder("pubmed", WORKS_TABLE, read, parts)
