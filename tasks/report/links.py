"""Links a report may carry.

A link is written only for a safe scheme (http, https; `doi:` becomes https://doi.org/), with
every character that could end its destination or attribute percent-encoded; anything else is
shown as text. Identifiers (DOI, PMID, arXiv id) link to their resolvers."""

import re
from urllib.parse import quote, urlsplit

SAFE_SCHEMES = ("http", "https")
# Kept as they are in a destination: RFC 3986 reserved and unreserved characters, minus the ones
# that end a Markdown destination or an HTML attribute (`(`, `)`, `<`, `>`, `"`, space, `\`).
_URL_SAFE = ":/?#[]@!$&'*+,;=%~-._"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def safe_url(url: str | None) -> str | None:
    """`url` as a link target when its scheme is safe, percent-encoded; otherwise None.
    `javascript:`, `data:`, `vbscript:`, relative and scheme-less targets are never links."""
    if not url:
        return None
    text = _CONTROL.sub("", url).strip()  # browsers drop tabs and newlines: "java\tscript:"
    if text.lower().startswith("doi:"):
        return doi_url(text[4:])
    parts = urlsplit(text)
    if parts.scheme.lower() not in SAFE_SCHEMES or not parts.netloc:
        return None
    return quote(text, safe=_URL_SAFE)


def doi_url(doi: str | None) -> str | None:
    doi = (doi or "").strip()
    return f"https://doi.org/{quote(doi, safe='/:;=@!$&*+,~-._')}" if doi else None


def pmid_url(pmid: str | None) -> str | None:
    pmid = (pmid or "").strip()
    return f"https://pubmed.ncbi.nlm.nih.gov/{quote(pmid, safe='')}/" if pmid else None


def arxiv_url(arxiv: str | None) -> str | None:
    arxiv = (arxiv or "").strip()
    return f"https://arxiv.org/abs/{quote(arxiv, safe='/.-_')}" if arxiv else None


IDENTIFIER_URLS = {"doi": doi_url, "pmid": pmid_url, "arxiv": arxiv_url}
