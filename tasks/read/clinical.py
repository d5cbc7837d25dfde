"""Clinical agents' AgentResponse: `response`, `citations` (id, title, source, source_type, url,
domain, is_trusted, access_date, snippet, relevance_score) and `highlights` (point, citations,
confidence).

Highlights become claims. Citations are deduplicated by normalised URL, then by title + domain,
the way the agents' own citation list does; every input id of a merged citation still links its
highlights. The agent's `is_trusted` is a claim, kept under the item's `clinical` field: trust is
recomputed from the configured domain list, never taken from the input.
"""

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.audit import Claim, ReadResult, Reference
from models.csl import CSLItem
from tasks.identifiers import normalize_doi, normalize_pmid, normalize_url
from tasks.read.agent_json import (
    csl_date,
    entry_error,
    load_shape,
    reference,
    sniff_json,
    validation_reason,
)
from tasks.read.common import read_each

FORMAT = "clinical"

_CSL_TYPES = {
    "journal": "article-journal",
    "guideline": "report",
    "policy": "report",
    "website": "webpage",
}
# Source types a scholarly registry may hold; others (policies, web pages) are checked only when
# they carry a DOI, PMID or arXiv id.
_SCHOLARLY_TYPES = frozenset({"journal", "article", "review", "study", "preprint"})
_NOT_WORD = re.compile(r"\W+")


class ClinicalCitation(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(..., min_length=1)
    title: str = Field(..., min_length=1)
    source: str | None = None
    source_type: str | None = None
    url: str | None = None
    domain: str | None = None
    is_trusted: bool | None = None
    access_date: str | None = None
    snippet: str | None = None
    relevance_score: float | None = Field(None, ge=0.0, le=1.0)


class Highlight(BaseModel):
    model_config = ConfigDict(extra="allow")

    point: str = Field(..., min_length=1)
    citations: list[str | dict[str, Any]] = Field(default_factory=list)
    confidence: float | None = Field(None, ge=0.0, le=1.0)


class _Pool:
    """Deduplicated citations: the first occurrence stands for all its duplicates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.references: list[Reference] = []
        self._by_key: dict[str, Reference] = {}
        self.by_id: dict[str, Reference] = {}

    def add(self, citation: ClinicalCitation, entry_key: str) -> Reference:
        keys = _dedupe_keys(citation)
        merged = next((self._by_key[k] for k in keys if k in self._by_key), None)
        if merged is None:
            merged = _reference(self.path, citation, entry_key)
            self.references.append(merged)
        else:
            extra: dict[str, Any] = merged.item.model_extra["clinical"]  # type: ignore[index]
            extra.setdefault("merged", []).append(
                {"entry": entry_key, **citation.model_dump(exclude_none=True)}
            )
        for k in keys:
            self._by_key.setdefault(k, merged)
        self.by_id.setdefault(citation.id, merged)
        return merged


def _citations_and_highlights(data: Any) -> tuple[list[Any], list[Any]] | None:
    if not isinstance(data, dict) or not isinstance(data.get("response"), str):
        return None
    citations, highlights = data.get("citations", []), data.get("highlights", [])
    if not isinstance(citations, list) or not isinstance(highlights, list):
        return None
    return citations, highlights


def detect(path: Path, head: str) -> bool:
    data = sniff_json(path, head)
    # `response` + `citations` alone is too common a pair; the agents' schema adds these.
    return _citations_and_highlights(data) is not None and bool(
        {"highlights", "tool_calls", "tools_used"} & set(data)
    )


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, found = load_shape(path, _citations_and_highlights, "a clinical AgentResponse")
    if found is None:
        return result
    citations, highlights = found
    pool = _Pool(path)
    for i, raw in enumerate(citations):
        _add(pool, raw, f"citations[{i}]", result)
    for k, raw in enumerate(highlights):
        _read_highlight(pool, raw, k, result)
    result.references.extend(pool.references)
    return result


def _add(pool: _Pool, raw: Any, key: str, result: ReadResult) -> Reference | None:
    try:
        citation = ClinicalCitation.model_validate(raw)
    except ValidationError as exc:
        result.errors.append(entry_error(pool.path, key, validation_reason(exc)))
        return None
    return pool.add(citation, key)


def _read_highlight(pool: _Pool, raw: Any, k: int, result: ReadResult) -> None:
    key = f"highlights[{k}]"
    try:
        highlight = Highlight.model_validate(raw)
    except ValidationError as exc:
        result.errors.append(entry_error(pool.path, key, validation_reason(exc)))
        return
    claim_id = f"highlight-{k + 1}"
    result.claims.append(
        Claim(
            claim_id=claim_id,
            claim_text=highlight.point,
            stated_strength=highlight.confidence,
            source_file=str(pool.path),
        )
    )
    for m, cited in enumerate(highlight.citations):
        cited_key = f"{key}.citations[{m}]"
        if isinstance(cited, dict):  # a full Citation inline, as the TypeScript schema allows
            ref = pool.by_id.get(str(cited.get("id"))) or _add(pool, cited, cited_key, result)
        else:
            ref = pool.by_id.get(cited)
            if ref is None:
                result.errors.append(
                    entry_error(pool.path, cited_key, f"cites unknown citation id {cited!r}")
                )
        if ref is not None and claim_id not in ref.claim_ids:
            ref.claim_ids.append(claim_id)


def _dedupe_keys(citation: ClinicalCitation) -> list[str]:
    """The normalised URL (a DOI for doi.org links) first, then title + domain."""
    keys = []
    url = citation.url or ""
    if "doi.org/" in url.lower() and (doi := normalize_doi(url)):
        keys.append(f"doi:{doi}")
    elif normalized := normalize_url(url):
        keys.append(f"url:{normalized}")
    title = _NOT_WORD.sub(" ", citation.title.casefold()).strip()
    keys.append(f"title:{title}|{_domain(citation)}")
    return keys


def _domain(citation: ClinicalCitation) -> str:
    domain = citation.domain or urlsplit(citation.url or "").hostname or ""
    return domain.lower().removeprefix("www.")


def _reference(path: Path, citation: ClinicalCitation, entry_key: str) -> Reference:
    kind = (citation.source_type or "").lower()
    journal = kind == "journal"
    item = CSLItem.model_validate(
        {
            "id": citation.id,
            "type": _CSL_TYPES.get(kind, "webpage" if citation.url else "document"),
            "title": citation.title,
            "container-title": citation.source if journal else None,
            "publisher": None if journal else citation.source,
            "URL": citation.url,
            "PMID": normalize_pmid(citation.url),  # a PubMed link names the work
            "accessed": csl_date(citation.access_date),
            "clinical": citation.model_dump(exclude_none=True, exclude={"title", "snippet"}),
        }
    )
    ref = reference(
        item,
        path,
        entry_key,
        snippet=citation.snippet,
        stated_confidence=citation.relevance_score,
    )
    ids = ref.ids
    ref.scholarly = kind in _SCHOLARLY_TYPES or bool(ids.doi or ids.pmid or ids.pmcid or ids.arxiv)
    return ref
