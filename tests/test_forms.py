"""Answer-citation forms and reference lists: shapes, links, escaping and page ranges."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.citation import Citation
from tasks.identifiers import is_safe_link
from tasks.render.forms import (
    AnswerSource,
    ListedReference,
    answer_source,
    format_answer,
    format_footnotes,
    format_inline,
    format_structured,
    group_pages,
    link_for,
    listed_references,
    page_label,
    pages_in,
    reference_list,
)
from tasks.score.confidence import calculate_citation_confidence, citation_from_reference
from tests.score_data import deep_review_references

HOSTILE_LABEL = '<script>alert("x")</script> [click](javascript:alert(1))'


class _Links(HTMLParser):
    """Collects the hrefs, list items and script tags of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.items = 0
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items += tag == "li"
        self.scripts += tag == "script"
        self.hrefs += [value or "" for name, value in attrs if name == "href"]


def _parsed(fragment: str) -> _Links:
    parser = _Links()
    parser.feed(fragment)
    return parser


def _sources(count: int) -> list[AnswerSource]:
    return [
        AnswerSource(label=f"Source {n}", source=f"doi:10.1000/s{n}", confidence=0.9 - n / 100)
        for n in range(count)
    ]


# --- pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pages", "grouped", "label"),
    [
        ([1, 2, 3, 5, 7, 8, 9], "1-3, 5, 7-9", "pp. 1-3, 5, 7-9"),
        ([9, 8, 7, 5, 3, 2, 1, 2], "1-3, 5, 7-9", "pp. 1-3, 5, 7-9"),
        ([5], "5", "p. 5"),
        ([4, 5], "4-5", "pp. 4-5"),
        ([0], "", ""),
        ([0, 12], "12", "p. 12"),
        ([], "", ""),
    ],
)
def test_pages_are_grouped_into_ranges(pages: list[int], grouped: str, label: str) -> None:
    assert group_pages(pages) == grouped
    assert page_label(pages) == label


@given(st.lists(st.integers(-3, 200), max_size=40))
def test_grouped_pages_expand_back_to_the_positive_pages(pages: list[int]) -> None:
    expanded: list[int] = []
    for part in filter(None, group_pages(pages).split(", ")):
        first, _, last = part.partition("-")
        expanded.extend(range(int(first), int(last or first) + 1))
    assert expanded == sorted({p for p in pages if p > 0})


@pytest.mark.parametrize(
    ("location", "pages"),
    [
        ("Page 45", [45]),
        ("p. 5", [5]),
        ("pp. 12-14", [12, 13, 14]),
        ("Section 3.2, pages 3, 5–7", [3, 5, 6, 7]),
        ("Figure 4", []),
        ("00:15:30", []),
        (None, []),
        ("pp. 1-99999", [1, 99999]),
    ],
)
def test_pages_are_read_from_locations(location: str | None, pages: list[int]) -> None:
    assert pages_in(location) == pages


# --- links --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "link"),
    [
        ("doi:10.1038/nature14539", "https://doi.org/10.1038/nature14539"),
        ("10.1002/(SICI)1097-0258", "https://doi.org/10.1002/%28sici%291097-0258"),
        ("https://dx.doi.org/10.1038/NATURE14539", "https://doi.org/10.1038/nature14539"),
        ("https://doi.org/gcgk7g", "https://doi.org/gcgk7g"),
        ("PMID: 26958203", "https://pubmed.ncbi.nlm.nih.gov/26958203/"),
        ("PMC4765623", "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC4765623/"),
        ("arXiv:1106.5730v2", "https://arxiv.org/abs/1106.5730"),
        ("https://example.org/a?b=1", "https://example.org/a?b=1"),
        ("file:///data/papers/a.pdf", "file:///data/papers/a.pdf"),
        ("javascript:alert(1)", None),
        ("javascript:alert('10.1038/x')", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("Smith 2020, Nature", None),
        ("", None),
    ],
)
def test_links_for_sources(source: str, link: str | None) -> None:
    assert link_for(source) == link


def test_local_documents_link_as_file_uris(tmp_path: Path) -> None:
    paper = tmp_path / "Smith 2020 (calcium).pdf"
    paper.write_bytes(b"%PDF-1.4\n")
    link = link_for(str(paper))
    assert link == paper.as_uri()
    assert link.startswith("file:///") and " " not in link and "(" not in link


# --- answer forms -----------------------------------------------------------------------------


def test_inline_shows_at_most_n_sources_then_how_many_more() -> None:
    text = format_inline("Margins rose.", _sources(5), max_inline=3)
    assert text == "Margins rose. [Source 0, 90% | Source 1, 89% | Source 2, 88% | ...and 2 more]"
    assert "more" not in format_inline("Margins rose.", _sources(3), max_inline=3)
    assert format_inline("Margins rose.", []) == "Margins rose."


def test_footnotes_number_the_sources_and_link_them() -> None:
    sources = [
        *_sources(2),
        AnswerSource(label="Bad", source="javascript:alert(1)", confidence=0.1),
    ]
    text = format_footnotes("Margins rose.", sources)
    head, notes = text.split("\n\n")
    assert head == "Margins rose.[1][2][3]"
    assert re.findall(r"^\[(\d)\]", notes, re.MULTILINE) == ["1", "2", "3"]
    assert "    https://doi.org/10.1000/s0" in notes
    assert "[3] Bad, n.d., confidence 10%" in notes
    assert "javascript" not in notes


def test_structured_form_is_json_with_safe_links() -> None:
    sources = [
        *_sources(1),
        AnswerSource(label=HOSTILE_LABEL, source="javascript:x", confidence=0.2),
    ]
    data = json.loads(format_structured("Margins rose.", sources))
    assert data["answer"] == "Margins rose."
    assert [c["link"] for c in data["citations"]] == ["https://doi.org/10.1000/s0", None]
    assert data["citations"][1]["label"] == HOSTILE_LABEL


def test_claims_of_real_references_render_with_scored_confidence() -> None:
    references = deep_review_references()[:5]
    citations = [citation_from_reference(ref) for ref in references]
    scores = [calculate_citation_confidence(c) for c in citations]
    sources = [
        answer_source(c, s["overall_confidence"], s["status"])
        for c, s in zip(citations, scores, strict=True)
    ]
    inline = format_answer("Deep learning reads retinal photographs.", sources, "inline")
    first = f"{sources[0].label}, {scores[0]['overall_confidence']:.0%}"
    assert first in inline and "...and 2 more" in inline
    footnotes = format_answer("Claim.", sources, "footnote")
    assert footnotes.count("https://doi.org/") == sum(bool(ref.ids.doi) for ref in references)
    with pytest.raises(ValueError, match="unknown answer style"):
        format_answer("Claim.", sources, "sidenote")  # type: ignore[arg-type]


# --- reference lists ----------------------------------------------------------------------------


def test_reference_list_of_real_references_links_every_identified_work() -> None:
    references = deep_review_references()
    entries = listed_references(citation_from_reference(ref) for ref in references)
    assert len(entries) == len(references)
    parsed = _parsed(reference_list(entries, "html"))
    assert parsed.items == len(entries)
    assert all(is_safe_link(href) for href in parsed.hrefs)
    with_doi = [ref for ref in references if ref.ids.doi]
    for ref in with_doi:
        assert f"https://doi.org/{ref.ids.doi}" in parsed.hrefs
    linked = sum(link_for(entry.source) is not None for entry in entries)
    assert len(parsed.hrefs) == linked
    markdown = reference_list(entries, "markdown")
    assert markdown.startswith("## References\n\n1. [")
    assert len(re.findall(r"^\d+\. ", markdown, re.MULTILINE)) == len(entries)


def test_citations_of_one_work_merge_into_one_entry_with_grouped_pages() -> None:
    citations = [
        Citation(source="doi:10.1038/nature14539", location="pp. 1-3", confidence=0.9),
        Citation(source="https://doi.org/10.1038/NATURE14539", location="Page 5", confidence=0.8),
        Citation(source="10.1038/nature14539", location="Section 2", confidence=0.7),
        Citation(source="doi:10.1038/other", location=None, confidence=0.7),
    ]
    entries = listed_references(citations)
    assert [entry.pages for entry in entries] == [(1, 2, 3, 5), ()]
    plain = reference_list(entries, "plain")
    assert (
        "[1] doi:10.1038/nature14539 (pp. 1-3, 5)\n    https://doi.org/10.1038/nature14539" in plain
    )
    assert "[2] doi:10.1038/other\n" in plain


@pytest.mark.parametrize("fmt", ["markdown", "html", "plain"])
def test_hostile_labels_and_javascript_links_are_never_live(fmt: str) -> None:
    entries = [
        ListedReference(label=HOSTILE_LABEL, source="javascript:alert(document.cookie)"),
        ListedReference(label="A (real) paper", source="doi:10.1038/nature14539", pages=(0,)),
    ]
    text = reference_list(entries, fmt)  # type: ignore[arg-type]
    assert "javascript:alert(document.cookie)" not in text
    if fmt == "html":
        parsed = _parsed(text)
        assert parsed.scripts == 0 and parsed.hrefs == ["https://doi.org/10.1038/nature14539"]
        assert "&lt;script&gt;" in text
    if fmt == "markdown":
        assert "<script>" not in text
        assert "\\[click\\](javascript:alert(1))" in text  # shown, not a link
        assert "[A (real) paper](https://doi.org/10.1038/nature14539)" in text
    if fmt == "plain":
        assert HOSTILE_LABEL in text  # plain text is shown as written
    assert "pp." not in text and "p. 0" not in text  # page 0 is the whole paper


def test_empty_and_unknown_reference_lists() -> None:
    assert reference_list([], "html") == ""
    with pytest.raises(ValueError, match="unknown reference list format"):
        reference_list([ListedReference(label="x")], "latex")  # type: ignore[arg-type]
