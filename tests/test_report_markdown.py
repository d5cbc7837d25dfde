"""report.md renders as the text it reports, in a permissive Markdown renderer: a claim's image
and `javascript:` links, raw HTML in a title and a DOI holding `"><img onerror=…>` stay text;
the only links are the report's own, to http(s) targets."""

import html
import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tasks.report import ReportData, render_markdown
from tasks.report.links import safe_url
from tasks.report.markdown import markdown_code, markdown_from_html, markdown_text
from tests.report_data import citation, citations

IMAGE = "![pwn](javascript:alert(1))"
LINK = "[click](javascript:alert(2))"
RAW = "<img src=x onerror=alert(3)>"
EVIL_DOI = '10.1234/x"><img src=x onerror=alert(4)>'


def permissive() -> MarkdownIt:
    """CommonMark with tables, and no link check of its own: what a careless viewer does."""
    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = lambda url: True
    return md


def rendered(markdown: str) -> str:
    return permissive().render(markdown)


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def hostile_report() -> str:
    cited = citations(
        citation(entry_key="evil-md", status="unmatched", claimed_title=f"{IMAGE}{LINK}{RAW}"),
        citation(entry_key="evil-doi", status="unverified", doi=EVIL_DOI, reason="offline"),
    )
    claims = pl.DataFrame(
        {
            "claim_id": ["c1"],
            "claim_text": [f"A claim {IMAGE} with {LINK} and {RAW} [1]."],
            "citation_ids": [["evil-md"]],
            "strength": [0.0],
            "unsupported": [True],
            "verified_count": [0],
            "citation_count": [1],
        }
    )
    # pandoc citeproc's HTML for the unverified DOI: the href escaped for HTML, not for Markdown
    entry = (
        'Smith, J. (2020). <em>Evil DOI</em>. <a href="https://doi.org/10.1234/x&quot;&gt;'
        '&lt;img src=x onerror=alert(4)&gt;">https://doi.org/10.1234/x&quot;&gt;&lt;img src=x '
        "onerror=alert(4)&gt;</a>"
    )
    data = ReportData(
        job_id="hostile",
        citations=cited,
        claims=claims,
        style="apa",
        bibliography_html=[entry, '<a href="javascript:alert(5)">click me</a>'],
    )
    return render_markdown(data)


def test_hostile_markdown_in_fields_is_shown_never_run() -> None:
    page = rendered(hostile_report())
    assert "<img" not in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith("https://doi.org/") for h in hrefs)
    assert not re.search(r"javascript:", " ".join(hrefs))
    text = text_of(page)
    for shown in (IMAGE, LINK, RAW, EVIL_DOI, "click me"):
        assert shown in text
    assert "Evil DOI" in re.findall(r"<em>([^<]*)</em>", page)


def test_only_http_https_and_doi_targets_become_links() -> None:
    assert safe_url("https://example.org/a b") == "https://example.org/a%20b"
    assert safe_url("doi:10.1000/x(1)") == "https://doi.org/10.1000/x%281%29"
    assert safe_url('http://x.org/"><img>') == "http://x.org/%22%3E%3Cimg%3E"
    unsafe_targets = ["javascript:alert(1)", " JaVaScRiPt:x", "java\tscript:x", "data:text/html,x"]
    unsafe_targets += ["vbscript:x", "//evil.org/x", "/relative", "file:///etc/passwd", ""]
    for unsafe in unsafe_targets:
        assert safe_url(unsafe) is None, unsafe
    assert markdown_from_html('<a href="data:text/html,x">data</a>') == "data"


# Printable ASCII (every Markdown metacharacter) and letters of other scripts.
TEXT = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("éß模糊ДΩ"),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_escaped_text_renders_as_exactly_itself(value: str) -> None:
    expected = " ".join(value.split())
    page = rendered(markdown_text(value)) if expected else ""
    assert "<a " not in page and "<img" not in page
    assert text_of(page) == expected


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_a_code_span_shows_exactly_its_value(value: str) -> None:
    expected = " ".join(value.split())
    page = rendered(markdown_code(value)) if expected else ""
    assert "<a " not in page and "<img" not in page
    assert text_of(page) == expected
