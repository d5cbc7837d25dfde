"""Identifier normalisation shared by the readers, the registry clients and dedupe.

Every function returns the canonical form or None: DOIs lower-cased without resolver prefix or
trailing punctuation, PMIDs as digits, PMCIDs as `PMC123`, arXiv ids without version, ISBNs as
ISBN-13 digits, URLs without scheme noise, `www.`, fragments or tracking parameters.
"""

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from models.audit import Identifiers
from models.csl import CSLItem

# Crossref's own advice: 10.NNNN/ followed by anything printable; we stop at whitespace and quotes.
_DOI_IN_TEXT = re.compile(r"\b(10\.\d{4,9}/[^\s\"']+)", re.IGNORECASE)
_DOI_PREFIX = re.compile(
    r"^(?:doi\s*:?\s*|https?://(?:dx\.)?doi\.org/|(?:dx\.)?doi\.org/|info:doi/)", re.IGNORECASE
)
_RESOLVER = re.compile(r"doi\.org/", re.IGNORECASE)
_TRAILING = ".,;:/"
_PAIRS = {")": "(", "]": "[", "}": "{", ">": "<"}

_PMID_IN_TEXT = re.compile(r"\bPMID\s*+:?\s*+(\d{1,9})\b", re.IGNORECASE)
_PMCID = re.compile(r"\bPMC\s*+:?\s*+(\d{1,9})\b", re.IGNORECASE)
_PUBMED_URL = re.compile(
    r"pubmed\.ncbi\.nlm\.nih\.gov/(\d{1,9})|ncbi\.nlm\.nih\.gov/pubmed/(\d{1,9})"
)
_ARXIV_NEW = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(v\d+)?(?![\d])")
# From the start of a run of letters and hyphens only, taken whole: tried from each of a long
# run's characters, the match was quadratic.
_ARXIV_OLD = re.compile(r"(?<![a-z\-])-*+\b([a-z\-]++(?:\.[A-Z]{2})?/\d{7})(v\d+)?\b")
_ARXIV_MARK = re.compile(r"arxiv", re.IGNORECASE)
# arXiv named, or DBLP's name for it (`CoRR abs/1706.03762`): case-sensitive, as `Corr. Sci.` is
# Corrosion Science.
_ARXIV_NAMED = re.compile(r"(?i:arxiv)|\bCoRR\b")
_ISBN_MARK = re.compile(r"isbn", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$")
_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"')\]]+[^\s<>\"')\].,;:]", re.IGNORECASE)
_SAFE_LINK = re.compile(r"^(https?://|doi:|file://)", re.IGNORECASE)
_TRACKING = re.compile(r"^(utm_\w+|fbclid|gclid|mc_cid|mc_eid|ref|ref_src|source|via)$")

# Which identifier names the work when a reference gives several: the DOI (the publisher's own
# name for it), then the PMID, the PMCID, the arXiv id. Routing (tasks/lookup/) asks in this
# order; chunks, re-check keys and source strings follow it.
PRECEDENCE = ("doi", "pmid", "pmcid", "arxiv")


def primary_identifier(ids: Identifiers) -> tuple[str, str] | None:
    """The identifier that names the work, as (kind, value); None if it has none of them."""
    for kind in PRECEDENCE:
        if value := getattr(ids, kind):
            return kind, value
    return None


def normalize_doi(value: str | None) -> str | None:
    """`doi:10.1000/X.`, `https://doi.org/10.1000/x?utm_source=y`, `DOI 10.1000/x`: `10.1000/x`."""
    if not value:
        return None
    text = value.strip()
    if resolver := _RESOLVER.search(text):
        # A resolver URL's query and fragment are the URL's: a DOI's own "?" or "#" is
        # percent-encoded there.
        text = re.split(r"[?#\s]", text[resolver.end() :], maxsplit=1)[0]
    text = unquote(text)
    text = _DOI_PREFIX.sub("", text).strip()
    match = _DOI_IN_TEXT.search(text)
    if not match:
        return None
    doi = match.group(1)
    while doi and (doi[-1] in _TRAILING or _unbalanced_closer(doi)):
        doi = doi[:-1]
    return doi.lower() if "/" in doi else None


def _unbalanced_closer(doi: str) -> bool:
    # "(see 10.1000/xyz)" must lose its ")" but "10.1002/(sici)1097" keeps its brackets.
    last = doi[-1]
    return last in _PAIRS and doi.count(last) > doi.count(_PAIRS[last])


def normalize_pmid(value: str | int | None) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    m = _PUBMED_URL.search(text)
    if m:
        text = m.group(1) or m.group(2)
    text = re.sub(r"^(?:PMID\s*:?\s*)", "", text, flags=re.IGNORECASE).strip()
    if text.isascii() and text.isdigit() and 0 < int(text) < 10**9:
        return str(int(text))
    return None


def normalize_pmcid(value: str | None) -> str | None:
    if not value:
        return None
    m = _PMCID.search(value)
    return f"PMC{int(m.group(1))}" if m else None


def is_arxiv_doi(doi: str | None) -> bool:
    """A DOI arXiv (DataCite) minted for a preprint: `10.48550/arXiv.2101.01234`."""
    return bool(doi) and _ARXIV_DOI.match((doi or "").lower()) is not None


def normalize_arxiv(value: str | None) -> str | None:
    """arXiv ids without version: `arXiv:2101.01234v2` -> `2101.01234`, `hep-th/9901001`."""
    if not value:
        return None
    text = value.strip()
    if m := _ARXIV_DOI.match(text.lower()):
        text = m.group(1)
    if m := _ARXIV_NEW.search(text):
        return m.group(1)
    if m := _ARXIV_OLD.search(text):
        return m.group(1).lower()
    return None


def arxiv_mentioned(*texts: str | None) -> str | None:
    """The arXiv id in the first text that names arXiv (or CoRR) before it: Google Scholar's
    `arXiv preprint arXiv:2207.05221`, DBLP's `CoRR abs/1706.03762`, `arXiv:2207.05221 [cs.LG]`.
    A number with no such mark is no arXiv id (`2014.12345` may be anything)."""
    for text in texts:
        mark = _ARXIV_NAMED.search(text or "")
        if mark and (found := normalize_arxiv((text or "")[mark.end() :])):
            return found
    return None


def normalize_isbn(value: str | None) -> str | None:
    """Any valid ISBN-10 or ISBN-13 -> ISBN-13 digits; invalid checksums -> None."""
    if not value:
        return None
    for candidate in re.findall(r"[\dXx][\d\-\s Xx]{8,20}[\dXx]", value):
        digits = re.sub(r"[^\dXx]", "", candidate).upper()
        if len(digits) == 10 and _isbn10_ok(digits):
            core = "978" + digits[:9]
            return core + _isbn13_check(core)
        if len(digits) == 13 and digits.isdigit() and _isbn13_check(digits[:12]) == digits[12]:
            return digits
    return None


def _isbn10_ok(digits: str) -> bool:
    if not digits[:9].isdigit() or not (digits[9].isdigit() or digits[9] == "X"):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13_check(first12: str) -> str:
    total = sum((1 if i % 2 == 0 else 3) * int(c) for i, c in enumerate(first12))
    return str((10 - total % 10) % 10)


def normalize_url(value: str | None) -> str | None:
    """Canonical URL for comparison: scheme and `www.` dropped, host lower-cased, fragment,
    tracking parameters and trailing slash removed. doi.org URLs are not URLs but DOIs: callers
    should try `normalize_doi` first."""
    if not value:
        return None
    text = value.strip()
    if not re.match(r"^https?://", text, re.IGNORECASE):
        return None
    parts = urlsplit(text)
    host = (parts.hostname or "").lower()
    if not host:
        return None
    host = host.removeprefix("www.")
    port = f":{parts.port}" if parts.port and parts.port not in (80, 443) else ""
    query = urlencode(
        sorted(
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not _TRACKING.match(k.lower())
        )
    )
    path = parts.path.rstrip("/")
    return f"{host}{port}{path}" + (f"?{query}" if query else "")


def is_safe_link(url: str | None) -> bool:
    """Links we are willing to render: http(s), doi: and file: only (never javascript:)."""
    return (
        bool(url) and re.match(r"^(https?://|doi:|file://)", url or "", re.IGNORECASE) is not None
    )


def find_identifiers(text: str) -> Identifiers:
    """The first identifier of each kind written anywhere in a free-text reference or line."""
    doi = normalize_doi(text) if _DOI_IN_TEXT.search(text) else None
    arxiv = None
    if doi and (m := _ARXIV_DOI.match(doi)):
        arxiv = normalize_arxiv(m.group(1))
    elif _ARXIV_MARK.search(text):
        arxiv = normalize_arxiv(_ARXIV_MARK.split(text, maxsplit=1)[1])
    pmid = None
    if m := _PMID_IN_TEXT.search(text):
        pmid = normalize_pmid(m.group(1))
    elif m := _PUBMED_URL.search(text):
        pmid = normalize_pmid(m.group(0))
    pmcid = normalize_pmcid(text) if _PMCID.search(text) else None
    url = None
    for found in _URL_IN_TEXT.findall(text):
        if "doi.org/" not in found.lower():
            url = normalize_url(found)
            break
    isbn = (
        normalize_isbn(_ISBN_MARK.split(text, maxsplit=1)[1]) if _ISBN_MARK.search(text) else None
    )
    return Identifiers(doi=doi, pmid=pmid, pmcid=pmcid, arxiv=arxiv, isbn=isbn, url=url)


# Identifiers written in free text, with their labels: a DOI's "2014", an arXiv id's "1902" or a
# PMID's digits are not the reference's year or pages.
_IDENTIFIER_SPANS = re.compile(
    r"https?://\S+"
    r"|(?:\bdoi\s*+:?\s*+)?\b10\.\d{4,9}/[^\s\"']+"
    r"|\bPMID\s*+:?\s*+\d{1,9}\b"
    r"|\bPMC\s*+:?\s*+\d{1,9}\b"
    r"|\barxiv\b(?:\s*+(?:preprint|e-?print|abs|arxiv))*\s*+[:/]?\s*+"
    r"(?:\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?",
    re.IGNORECASE,
)


def without_identifiers(text: str) -> str:
    """Free text with its URLs, DOIs, PMIDs, PMCIDs and arXiv ids blanked out."""
    return _IDENTIFIER_SPANS.sub(" ", text)


def identifiers_of(item: CSLItem, raw: str | None = None) -> Identifiers:
    """Normalised identifiers from a CSL item's fields, falling back to its free text and URL."""
    found = find_identifiers(raw) if raw else Identifiers()
    url_doi = normalize_doi(item.URL) if item.URL and "doi.org/" in item.URL.lower() else None
    doi = normalize_doi(item.DOI) or url_doi or found.doi
    arxiv = found.arxiv
    if doi and (m := _ARXIV_DOI.match(doi)):
        arxiv = normalize_arxiv(m.group(1))
    if not arxiv and item.URL and "arxiv.org" in item.URL.lower():
        arxiv = normalize_arxiv(item.URL.split("arxiv.org", 1)[1])
    if not arxiv:
        venue = " ".join(p for p in (item.container_title, item.publisher) if p)
        number = getattr(item, "number", None) or ""
        arxiv = arxiv_mentioned(
            venue, f"{venue} {number}", f"{venue} {item.volume or ''}", number, item.note
        )
    return Identifiers(
        doi=doi,
        pmid=normalize_pmid(item.PMID) or found.pmid,
        pmcid=normalize_pmcid(item.PMCID) or found.pmcid,
        arxiv=arxiv,
        isbn=normalize_isbn(item.ISBN) or found.isbn,
        url=None if url_doi else (normalize_url(item.URL) or found.url),
    )
