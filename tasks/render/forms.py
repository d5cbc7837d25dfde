"""Presentation forms of cited answers and reference lists: strings out, never files.

Answer forms, after the ICE formatter (a crew job's claims, `crew_answers`: the crew_report flow
writes them beside the report):

    inline      `Claim text [Niu et al. 2011, 93% | WHO 2020, 85% | ...and 2 more]`
    footnote    `Claim text[1][2]` then one line per source with date, confidence, status and link
    structured  JSON: {"answer": ..., "citations": [{label, source, date, confidence, …}]}

Reference lists, after the calcium-imaging RAG system: numbered Markdown, HTML or plain text with
hyperlinks (DOI -> https://doi.org/..., PMID -> PubMed, arXiv -> arxiv.org/abs, URLs as given,
`file://` for local documents) and grouped page ranges (`pp. 1-3, 5, 7-9`; page 0, or no page,
means the whole work).

Answer forms are plain text: a caller embedding them in Markdown or HTML escapes them there.

Safety: links are computed from the source at render time and kept only when
`tasks.identifiers.is_safe_link` accepts them (http(s), doi:, file:); anything else, such as
`javascript:`, is shown as text. HTML is always escaped; Markdown text is escaped too, so a label
cannot open a link or inject raw HTML.
"""

import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import polars as pl

from models.citation import Citation
from tasks.frames import reference_from_row, result_from_row
from tasks.identifiers import find_identifiers, is_safe_link, normalize_doi, primary_identifier
from tasks.pages import group_pages
from tasks.score.confidence import citation_from_reference
from tasks.score.trust import is_doi_resolver_link, names_scholarly_identifier

__all__ = [
    "AnswerSource",
    "AnswerStyle",
    "ListFormat",
    "ListedReference",
    "answer_source",
    "citation_label",
    "crew_answers",
    "format_answer",
    "format_footnotes",
    "format_inline",
    "format_structured",
    "group_pages",  # from tasks.pages, shared with the readers
    "link_for",
    "listed_references",
    "page_label",
    "pages_in",
    "reference_list",
]

AnswerStyle = Literal["inline", "footnote", "structured"]
ListFormat = Literal["markdown", "html", "plain"]

DEFAULT_MAX_INLINE = 3
_LABEL_TITLE_CHARS = 60
_DOCUMENT_SUFFIXES = (".pdf", ".doc", ".docx", ".txt", ".epub", ".html", ".htm")
_PAGES = re.compile(r"\b(?:pages?|pp?\.)\s*(\d+(?:\s*(?:[-–—]|,|and|&)\s*\d+)*)", re.IGNORECASE)
_MAX_PAGE_DIGITS = 9  # no work has a billion pages
_PAGE_RANGE = re.compile(r"(\d+)(?:\s*[-–—]\s*(\d+))?")
_MAX_RANGE = 1000  # "pp. 1-99999" is a typo, not a thousand pages to list
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]])")


@dataclass(frozen=True)
class AnswerSource:
    """One source of an answer as a reader sees it."""

    label: str
    source: str
    confidence: float
    date: str | None = None
    status: str | None = None


@dataclass(frozen=True)
class ListedReference:
    """One entry of a reference list: a work, where it is, and which of its pages were used."""

    label: str
    source: str | None = None
    pages: tuple[int, ...] = field(default_factory=tuple)


def _doi_link(doi: str) -> str:
    return "https://doi.org/" + quote(doi, safe="/")


_IDENTIFIER_LINKS: dict[str, Callable[[str], str]] = {
    "doi": _doi_link,
    "pmid": lambda pmid: f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
    "pmcid": lambda pmcid: f"https://www.ncbi.nlm.nih.gov/pmc/articles/{pmcid}/",
    "arxiv": lambda arxiv: f"https://arxiv.org/abs/{arxiv}",
}


def link_for(source: str | None) -> str | None:
    """A safe hyperlink for a cited source, or None when there is none we are willing to render."""
    if not source or not source.strip():
        return None
    text = source.strip()
    link: str | None = None
    if is_doi_resolver_link(text) and (doi := normalize_doi(text)):
        link = _doi_link(doi)  # one link per work, however the DOI URL was written
    elif re.match(r"^(?:https?|file)://", text, re.IGNORECASE):
        link = text
    elif names_scholarly_identifier(text):
        if primary := primary_identifier(find_identifiers(text)):
            kind, value = primary
            link = _IDENTIFIER_LINKS[kind](value)
    elif ":" not in text.split("/", 1)[0] and text.lower().endswith(_DOCUMENT_SUFFIXES):
        link = Path(text).expanduser().absolute().as_uri()
    return link if is_safe_link(link) else None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def citation_label(citation: Citation) -> str:
    """`Author year`, else a shortened title, else the source itself."""
    metadata = citation.metadata or {}
    author = _one_line(str(metadata.get("author") or ""))
    year = metadata.get("year") or str(metadata.get("publication_date") or "")[:4]
    if author:
        return f"{author} {year}".strip()
    title = _one_line(str(metadata.get("title") or ""))
    if title:
        cut = title[:_LABEL_TITLE_CHARS]
        return cut if len(title) <= _LABEL_TITLE_CHARS else cut.rstrip() + "…"
    return _one_line(citation.source)


def answer_source(
    citation: Citation, confidence: float | None = None, status: str | None = None
) -> AnswerSource:
    """A citation as an answer source; `confidence` is the scored one (else the stated one)."""
    metadata = citation.metadata or {}
    date = metadata.get("publication_date") or metadata.get("year")
    return AnswerSource(
        label=citation_label(citation),
        source=citation.source,
        confidence=citation.confidence if confidence is None else confidence,
        date=str(date) if date else None,
        status=status,
    )


def format_inline(
    answer: str, sources: Sequence[AnswerSource], max_inline: int = DEFAULT_MAX_INLINE
) -> str:
    """`answer [label, 90% | label, 85% | ...and N more]`; the answer alone without sources."""
    if not sources:
        return answer
    shown = [f"{_one_line(s.label)}, {s.confidence:.0%}" for s in sources[: max(max_inline, 0)]]
    if len(sources) > len(shown):
        shown.append(f"...and {len(sources) - len(shown)} more")
    return f"{answer} [{' | '.join(shown)}]"


def format_footnotes(answer: str, sources: Sequence[AnswerSource]) -> str:
    """Numbered markers after the answer, then one footnote per source with its link below."""
    if not sources:
        return answer
    markers = "".join(f"[{number}]" for number in range(1, len(sources) + 1))
    notes = []
    for number, source in enumerate(sources, start=1):
        label = _one_line(source.label)
        date = source.date or "n.d."
        # An author-year label already carries the date.
        parts = [label] if label.endswith(date) else [label, date]
        parts.append(f"confidence {source.confidence:.0%}")
        if source.status:
            parts.append(source.status.replace("_", " "))
        note = f"[{number}] " + ", ".join(parts)
        if link := link_for(source.source):
            note += f"\n    {link}"
        notes.append(note)
    return f"{answer}{markers}\n\n" + "\n".join(notes)


def format_structured(answer: str, sources: Sequence[AnswerSource]) -> str:
    """The answer and its sources as JSON, for programs."""
    citations = [
        {
            "label": source.label,
            "source": source.source,
            "date": source.date,
            "confidence": round(source.confidence, 3),
            "status": source.status,
            "link": link_for(source.source),
        }
        for source in sources
    ]
    return json.dumps({"answer": answer, "citations": citations}, ensure_ascii=False, indent=2)


def format_answer(
    answer: str,
    sources: Sequence[AnswerSource],
    style: AnswerStyle = "inline",
    max_inline: int = DEFAULT_MAX_INLINE,
) -> str:
    if style == "inline":
        return format_inline(answer, sources, max_inline)
    if style == "footnote":
        return format_footnotes(answer, sources)
    if style == "structured":
        return format_structured(answer, sources)
    raise ValueError(f"unknown answer style: {style!r}")


def pages_in(location: str | None) -> list[int]:
    """Page numbers a location names: `Page 45`, `p. 5`, `pp. 12-14`, `pages 3, 5-7`."""
    pages: list[int] = []
    for match in _PAGES.finditer(location or ""):
        for start_text, end_text in _PAGE_RANGE.findall(match.group(1)):
            if max(len(start_text), len(end_text)) > _MAX_PAGE_DIGITS:
                continue  # no page: int() refuses past 4,300 digits (an internal error)
            start = int(start_text)
            end = int(end_text) if end_text else start
            if 0 <= end - start <= _MAX_RANGE:
                pages.extend(range(start, end + 1))
            else:
                pages.extend((start, end))
    return pages


def page_label(pages: Iterable[int]) -> str:
    """`p. 5`, `pp. 1-3, 5`, or "" for the whole work (no page, or only page 0)."""
    grouped = group_pages(pages)
    if not grouped:
        return ""
    return f"p. {grouped}" if grouped.isdigit() else f"pp. {grouped}"


def listed_references(citations: Iterable[Citation]) -> list[ListedReference]:
    """One entry per cited work (same link, else same source), in order of first citation,
    with the pages all its citations name."""
    order: list[str] = []
    first: dict[str, Citation] = {}
    pages: dict[str, list[int]] = {}
    for citation in citations:
        key = link_for(citation.source) or citation.source.strip()
        if key not in first:
            order.append(key)
            first[key] = citation
            pages[key] = []
        pages[key].extend(pages_in(citation.location))
    return [
        ListedReference(
            label=citation_label(first[key]),
            source=first[key].source,
            pages=tuple(sorted(set(pages[key]))),
        )
        for key in order
    ]


def _markdown_text(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(_one_line(text), quote=False))


def _markdown_url(url: str) -> str:
    # Brackets, spaces and angle brackets would end or break the (...) of a Markdown link.
    return quote(url, safe=":/?#@!$&'*+,;=%~")


def _with_pages(text: str, entry: ListedReference) -> str:
    pages = page_label(entry.pages)
    return f"{text} ({pages})" if pages else text


def reference_list(
    entries: Sequence[ListedReference], fmt: ListFormat = "markdown", heading: str = "References"
) -> str:
    """A numbered reference list with hyperlinks and page ranges; "" for no entries."""
    if not entries:
        return ""
    if fmt == "markdown":
        lines = [f"## {_markdown_text(heading)}", ""]
        for number, entry in enumerate(entries, start=1):
            text = _markdown_text(entry.label)
            if link := link_for(entry.source):
                text = f"[{text}]({_markdown_url(link)})"
            lines.append(f"{number}. {_with_pages(text, entry)}")
        return "\n".join(lines)
    if fmt == "html":
        lines = [f"<h2>{html.escape(heading)}</h2>", "<ol>"]
        for entry in entries:
            text = html.escape(_one_line(entry.label))
            if link := link_for(entry.source):
                text = f'<a href="{html.escape(link, quote=True)}">{text}</a>'
            lines.append(f"<li>{_with_pages(text, entry)}</li>")
        lines.append("</ol>")
        return "\n".join(lines)
    if fmt == "plain":
        lines = [f"{heading}:", ""]
        for number, entry in enumerate(entries, start=1):
            line = f"[{number}] {_with_pages(_one_line(entry.label), entry)}"
            if link := link_for(entry.source):
                line += f"\n    {link}"
            lines.append(line)
        return "\n".join(lines)
    raise ValueError(f"unknown reference list format: {fmt!r}")


def crew_answers(claims: pl.DataFrame, citations: pl.DataFrame) -> dict[str, str]:
    """A crew job's claims as answers in the three forms, and the list of the works they cite
    (page ranges grouped, `file://` links for local documents): file name -> text. `claims` and
    `citations` are the job's tables (claims.parquet, citations.parquet); each source carries its
    scored confidence and its status."""
    rows = {row["citation_id"]: row for row in citations.iter_rows(named=True)}
    cited = {
        cid: citation_from_reference(reference_from_row(row), result_from_row(row))
        for cid, row in rows.items()
    }
    answers: list[tuple[str, list[AnswerSource]]] = []
    order: list[str] = []
    for claim in claims.iter_rows(named=True):
        ids = [cid for cid in claim["citation_ids"] or [] if cid in cited]
        order.extend(cid for cid in ids if cid not in order)
        sources = [
            answer_source(cited[cid], rows[cid].get("confidence"), rows[cid]["status"])
            for cid in ids
        ]
        answers.append((claim["claim_text"], sources))
    order.extend(cid for cid in rows if cid not in order)  # cited by no claim: listed last
    structured = [json.loads(format_structured(text, sources)) for text, sources in answers]
    return {
        "answers.inline.txt": "\n\n".join(format_inline(t, s) for t, s in answers) + "\n",
        "answers.footnotes.txt": "\n\n".join(format_footnotes(t, s) for t, s in answers) + "\n",
        "answers.json": json.dumps(structured, ensure_ascii=False, indent=2) + "\n",
        "references.cited.md": reference_list(listed_references(cited[c] for c in order)) + "\n",
    }
