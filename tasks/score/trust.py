"""Which cited sources come from trusted scholarly and health publishers.

The list is a data file shipped with the package (`tasks/data/trusted_domains.txt`); set
`CITEAUDIT_TRUSTED_DOMAINS=/path/to/list.txt` (same format) to replace it. Rules:

- an entry matches its own host and every subdomain: `nih.gov` trusts `www.ncbi.nlm.nih.gov`;
  matching is on whole labels, so `nih.gov.evil.com` and `evilnature.com` are not trusted;
- an entry with a leading dot (`.gov`, `.ac.uk`) reads the same way, as a suffix of labels;
- DOI, PMID, PMCID and arXiv identifiers (`doi:10.1038/x`, `10.1038/x`, `PMID: 123`, `PMC123`,
  `arXiv:2101.01234`) are trusted: they name registered scholarly records;
- links with credentials or backslashes in the authority (`https://nih.gov@evil.com`,
  `https://evil.com\\@nih.gov`) are never trusted: browsers and parsers disagree on their host;
- any other scheme (`javascript:`, `data:`, `file:`, `mailto:`) is never trusted.
"""

import os
import re
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from tasks.identifiers import find_identifiers

TRUSTED_DOMAINS_ENV = "CITEAUDIT_TRUSTED_DOMAINS"
DEFAULT_TRUSTED_DOMAINS_FILE = Path(__file__).resolve().parents[1] / "data" / "trusted_domains.txt"

_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_IDENTIFIER_SCHEMES = {"doi", "pmid", "pmcid", "pmc", "arxiv", "info"}
_ENTRY = re.compile(r"^\.?(?:[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?$")
# A link written without a scheme: "www.nature.com" or "nature.com/articles/x" (a path is
# required without "www." so that a file name such as "paper.pdf" is not read as a host).
_BARE_HOST = re.compile(
    r"^(?:www\.(?:[a-z0-9\-]+\.)+[a-z]{2,}(?=[/:?#]|$)|(?:[a-z0-9\-]+\.)+[a-z]{2,}(?=/))",
    re.IGNORECASE,
)


def parse_domain_list(text: str, origin: str = "<text>") -> frozenset[str]:
    """Entries of a trusted-domain file, lower-cased, without leading dot or trailing dot.

    A malformed line is a configuration error and raises ValueError naming the line: a typo
    silently dropped would quietly distrust a whole publisher."""
    entries: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip().lower().rstrip(".")
        if not entry:
            continue
        if not _ENTRY.match(entry):
            raise ValueError(f"{origin}:{number}: not a domain or .suffix: {line.strip()!r}")
        entries.add(entry.lstrip("."))
    return frozenset(entries)


@lru_cache(maxsize=8)
def _read_domain_file(path: Path, mtime_ns: int) -> frozenset[str]:
    # mtime_ns is part of the cache key so an edited file is read again.
    return parse_domain_list(path.read_text(encoding="utf-8"), origin=str(path))


def load_trusted_domains(path: str | Path | None = None) -> frozenset[str]:
    """The trusted domains from `path`, else from $CITEAUDIT_TRUSTED_DOMAINS, else the default."""
    chosen = Path(path or os.environ.get(TRUSTED_DOMAINS_ENV) or DEFAULT_TRUSTED_DOMAINS_FILE)
    return _read_domain_file(chosen, chosen.stat().st_mtime_ns)


def host_of(url_or_source: str) -> str | None:
    """The host a web source points at, or None when it names no safe http(s) host."""
    text = url_or_source.strip()
    scheme = _SCHEME.match(text)
    if scheme is None and _BARE_HOST.match(text):
        text = "http://" + text
    elif scheme is None or scheme.group(1).lower() not in ("http", "https"):
        return None
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:  # e.g. an invalid bracketed IPv6 authority
        return None
    if not host or "@" in parts.netloc or "\\" in parts.netloc:
        return None
    return host.rstrip(".")


def host_is_trusted(host: str, domains: Collection[str]) -> bool:
    """Whole-label suffix match: `a.b.nih.gov` is under `nih.gov`; `nih.gov.evil.com` is not."""
    labels = host.lower().rstrip(".").split(".")
    return any(".".join(labels[i:]) in domains for i in range(len(labels)))


def is_doi_resolver_link(source: str) -> bool:
    """True for links on doi.org (or dx.doi.org), whatever DOI form follows, shortDOIs included."""
    host = host_of(source)
    return host is not None and host_is_trusted(host, {"doi.org"})


def names_scholarly_identifier(source: str) -> bool:
    """True when a non-web source names a DOI, PMID, PMCID or arXiv id."""
    text = source.strip()
    scheme = _SCHEME.match(text)
    if scheme and scheme.group(1).lower() not in _IDENTIFIER_SCHEMES:
        return False
    found = find_identifiers(text)
    return bool(found.doi or found.pmid or found.pmcid or found.arxiv)


def is_trusted(url_or_source: str, domains: Collection[str] | None = None) -> bool:
    """Whether a cited source is a scholarly identifier or a link to a trusted domain."""
    trusted = load_trusted_domains() if domains is None else domains
    host = host_of(url_or_source)
    if host is not None:
        return host_is_trusted(host, trusted)
    # Web links whose host we refused to read fall through here and fail the scheme check.
    return names_scholarly_identifier(url_or_source)
