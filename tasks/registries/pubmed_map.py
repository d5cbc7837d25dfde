"""PubMed efetch XML (`<PubmedArticle>`, `<PubmedBookArticle>`) -> RegistryRecord with a CSL item.

Choices:
- title: ArticleTitle as PubMed writes it, trailing period and [brackets] of translated titles
  included; inline markup (<i>, <sup>) is flattened to its text. Comparison normalises
  punctuation, so nothing is lost by keeping the registry's own form here.
- original-title: VernacularTitle, the title in the article's own language (ArticleTitle is
  then PubMed's English translation, in brackets); a citer may give either.
- issued: PubDate Year (Month, Day when given), else the first year of MedlineDate.
- page: MedlinePgn with abbreviated ranges expanded ("123-9" -> "123-129"), else StartPage-EndPage.
- flags: PublicationType "Retracted Publication" (D016441) or CommentsCorrections RetractionIn
  -> retracted; ErratumIn / CorrectedandRepublishedIn -> corrected; ExpressionOfConcernIn ->
  expression_of_concern. The PMIDs of those notices are the notices; every other
  CommentsCorrections kind except Cites goes to relations.
"""

import re
from typing import Any
from xml.etree.ElementTree import Element

from models.audit import Notice, NoticeKind, RegistryRecord
from models.csl import YEARS, CSLItem, month_number
from tasks.identifiers import normalize_doi, normalize_pmcid, normalize_pmid

RETRACTED_PUBLICATION_UI = "D016441"
RETRACTION_REFS = frozenset({"RetractionIn"})
CORRECTION_REFS = frozenset({"ErratumIn", "CorrectedandRepublishedIn"})
CONCERN_REFS = frozenset({"ExpressionOfConcernIn"})
NOTICE_KINDS: dict[str, NoticeKind] = {
    **dict.fromkeys(RETRACTION_REFS, "retraction"),
    **dict.fromkeys(CORRECTION_REFS, "correction"),
    **dict.fromkeys(CONCERN_REFS, "expression_of_concern"),
}

_YEAR = re.compile(rf"\b({YEARS})\b")
_RANGE = re.compile(r"^([A-Za-z]*)(\d+)\s*-\s*([A-Za-z]*)(\d+)$")
_SPACE = re.compile(r"\s+")
_REF_DATE = re.compile(rf"\b({YEARS})(?:\s+([A-Z][a-z]{{2}}))?\b")


def pubmed_article_to_csl(element: Element) -> RegistryRecord:
    """A `<PubmedArticle>` or `<PubmedBookArticle>` element -> RegistryRecord."""
    if element.tag == "PubmedBookArticle":
        return _book_article(element)
    citation = _child(element, "MedlineCitation")
    article = _child(citation, "Article")
    journal = _child(article, "Journal")
    issue = _child(journal, "JournalIssue")
    pmid = normalize_pmid(_text(citation.find("PMID"))) or ""
    ids = article_ids(element.find("PubmedData/ArticleIdList"))
    doi = ids.get("doi") or elocation_doi(article)
    item = _csl_item(
        {
            "id": pmid,
            "type": "article-journal",
            "title": _text(article.find("ArticleTitle")),
            "original-title": _text(article.find("VernacularTitle")),
            "author": _authors(article.find("AuthorList")),
            "container-title": _text(journal.find("Title")),
            "container-title-short": _text(journal.find("ISOAbbreviation")),
            "issued": pub_date(issue.find("PubDate")),
            "volume": _text(issue.find("Volume")),
            "issue": _text(issue.find("Issue")),
            "page": pagination_pages(article.find("Pagination")),
            "ISSN": ", ".join(t for e in journal.findall("ISSN") if (t := _text(e))) or None,
            "DOI": doi,
            "PMID": pmid,
            "PMCID": ids.get("pmc"),
            "language": _text(article.find("Language")),
            "abstract": _abstract(article.find("Abstract")),
        }
    )
    record = RegistryRecord(registry="pubmed", identifier=pmid, item=item)
    _apply_flags(record, article, citation)
    return record


def _book_article(element: Element) -> RegistryRecord:
    document = _child(element, "BookDocument")
    book = _child(document, "Book")
    pmid = normalize_pmid(_text(document.find("PMID"))) or ""
    ids = article_ids(document.find("ArticleIdList"))
    chapter_title = _text(document.find("ArticleTitle"))
    book_title = _text(book.find("BookTitle"))
    item = _csl_item(
        {
            "id": pmid,
            "type": "chapter" if chapter_title else "book",
            "title": chapter_title or book_title,
            "container-title": book_title if chapter_title else None,
            "author": _authors(document.find("AuthorList")) or _authors(book.find("AuthorList")),
            "issued": pub_date(book.find("PubDate")),
            "publisher": _text(book.find("Publisher/PublisherName")),
            "publisher-place": _text(book.find("Publisher/PublisherLocation")),
            "ISBN": _text(book.find("Isbn")),
            "DOI": ids.get("doi"),
            "PMID": pmid,
        }
    )
    return RegistryRecord(registry="pubmed", identifier=pmid, item=item)


def _csl_item(fields: dict[str, Any]) -> CSLItem:
    return CSLItem.from_csl({key: value for key, value in fields.items() if value is not None})


def _child(parent: Element, tag: str) -> Element:
    found = parent.find(tag)
    if found is None:
        raise ValueError(f"PubMed record without <{tag}>")
    return found


def _text(element: Element | None) -> str | None:
    if element is None:
        return None
    text = _SPACE.sub(" ", "".join(element.itertext())).strip()
    return text or None


def _abstract(abstract: Element | None) -> str | None:
    """The abstract's sections (BACKGROUND, METHODS, ...) as one text, labels left out."""
    if abstract is None:
        return None
    return " ".join(t for part in abstract.findall("AbstractText") if (t := _text(part))) or None


def article_ids(id_list: Element | None) -> dict[str, str]:
    ids: dict[str, str] = {}
    for entry in id_list.findall("ArticleId") if id_list is not None else []:
        kind, value = entry.get("IdType", ""), _text(entry)
        if not value or kind in ids:
            continue
        if kind == "doi" and (doi := normalize_doi(value)):
            ids["doi"] = doi
        elif kind == "pmc" and (pmcid := normalize_pmcid(value)):
            ids["pmc"] = pmcid
    return ids


def elocation_doi(article: Element) -> str | None:
    for location in article.findall("ELocationID"):
        if location.get("EIdType") == "doi" and location.get("ValidYN", "Y") == "Y":
            return normalize_doi(_text(location))
    return None


def _authors(author_list: Element | None) -> list[dict[str, str]] | None:
    if author_list is None:
        return None
    names = []
    for author in author_list.findall("Author"):
        if author.get("ValidYN", "Y") != "Y":
            continue
        family = _text(author.find("LastName"))
        if family:
            name = {"family": family}
            if given := _text(author.find("ForeName")) or _text(author.find("Initials")):
                name["given"] = given
            if suffix := _text(author.find("Suffix")):
                name["suffix"] = suffix
            names.append(name)
        elif collective := _text(author.find("CollectiveName")):
            names.append({"literal": collective})
    return names or None


def pub_date(element: Element | None) -> dict[str, Any] | None:
    if element is None:
        return None
    year = _text(element.find("Year"))
    if year and year.isdigit():
        parts = [int(year)]
        month = month_number(_text(element.find("Month")))
        if month:
            parts.append(month)
            day = _text(element.find("Day"))
            if day and day.isdigit():
                parts.append(int(day))
        return {"date-parts": [parts]}
    medline = _text(element.find("MedlineDate"))
    if medline and (match := _YEAR.search(medline)):
        return {"date-parts": [[int(match.group(1))]], "raw": medline}
    return None


def expand_pages(pages: str) -> str:
    """MEDLINE abbreviates page ranges: "123-9" -> "123-129", "1023-34" -> "1023-1034";
    several ranges are expanded one by one ("12-4, 18-9" -> "12-14, 18-19")."""
    parts = []
    for part in pages.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            parts.append(part.strip())
            continue
        prefix, first, last_prefix, last = match.groups()
        if len(last) < len(first):
            last = first[: len(first) - len(last)] + last
        parts.append(f"{prefix}{first}-{last_prefix or prefix}{last}")
    return ", ".join(parts)


def pagination_pages(pagination: Element | None) -> str | None:
    if pagination is None:
        return None
    medline = _text(pagination.find("MedlinePgn"))
    if medline:
        return expand_pages(medline)
    start, end = _text(pagination.find("StartPage")), _text(pagination.find("EndPage"))
    if start and end:
        return f"{start}-{end}"
    return start


def _apply_flags(record: RegistryRecord, article: Element, citation: Element) -> None:
    for publication_type in article.findall("PublicationTypeList/PublicationType"):
        if (
            publication_type.get("UI") == RETRACTED_PUBLICATION_UI
            or _text(publication_type) == "Retracted Publication"
        ):
            record.retracted = True
    for link in citation.findall("CommentsCorrectionsList/CommentsCorrections"):
        ref_type = link.get("RefType", "")
        pmid = normalize_pmid(_text(link.find("PMID")))
        kind = NOTICE_KINDS.get(ref_type)
        if kind is None:
            if pmid and ref_type != "Cites":
                record.relations.setdefault(ref_type, []).append(pmid)
            continue
        record.add_notice(
            Notice(
                kind=kind,
                identifier=pmid,
                url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/" if pmid else None,
                date=ref_source_date(_text(link.find("RefSource"))),
                source="pubmed",
                reason=_text(link.find("Note")),
            )
        )


def ref_source_date(ref_source: str | None) -> str | None:
    """The notice's date from its citation, `Nature. 2020 Jan;577:E5.` -> `2020-01`."""
    match = _REF_DATE.search(ref_source or "")
    if not match:
        return None
    month = month_number(match.group(2))
    return f"{match.group(1)}-{month:02d}" if month else match.group(1)
