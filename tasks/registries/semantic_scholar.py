"""Semantic Scholar Graph API: ids in `POST /paper/batch` (up to 500) and titles by
`GET /paper/search/match`.

The batch answers a list aligned with the ids asked, `null` where it holds none; search/match
answers `{"data": [paper]}` with its single best match, or 404 "Title match not found". Venues
are full names ("Neural Information Processing Systems"), authors "Given Family" or initials
("R. Socher")."""

from collections.abc import Sequence
from typing import Any

import httpx

from models.audit import Lookup, RegistryRecord
from models.csl import CSLItem
from tasks.identifiers import normalize_doi
from tasks.registries.batches import failed, in_batches, records
from tasks.registries.fields import people, title_query
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    json_body,
)

FIELDS = "title,authors,year,venue,journal,externalIds,publicationDate,abstract"
# The id forms the batch endpoint reads: "DOI:10.1/x", "ARXIV:2106.01345", "PMID:123".
ID_PREFIXES = {"doi": "DOI", "arxiv": "ARXIV", "pmid": "PMID", "pmcid": "PMCID"}


def _batch(response: httpx.Response) -> list[dict[str, Any] | None]:
    body = json_body(response)
    if not isinstance(body, list):
        raise InvalidResponse("Semantic Scholar batch answer is not a list")
    return [paper if isinstance(paper, dict) else None for paper in body]


def _matches(response: httpx.Response) -> list[dict[str, Any]]:
    body = json_body(response)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise InvalidResponse("Semantic Scholar search answer without `data`")
    return [paper for paper in data if isinstance(paper, dict)]


def _no_match(response: httpx.Response) -> bool:
    """Semantic Scholar's own 404 for a title it cannot match, not a gateway's."""
    return "Title match not found" in response.text


def s2_paper_to_csl(paper: dict[str, Any]) -> RegistryRecord:
    paper_id = paper.get("paperId")
    if not paper_id:
        raise ValueError("Semantic Scholar paper without paperId")
    external = paper.get("externalIds") or {}
    journal = paper.get("journal") or {}
    venue = paper.get("venue") or journal.get("name")
    names = [a.get("name") or "" for a in paper.get("authors") or [] if isinstance(a, dict)]
    csl: dict[str, Any] = {
        "id": paper_id,
        "type": "article" if not venue or "arxiv" in venue.lower() else "paper-conference",
        "title": paper.get("title"),
        "author": [n.to_csl() for n in people(names) or []] or None,
        "container-title": venue or None,
        "volume": journal.get("volume"),
        "page": (journal.get("pages") or "").strip() or None,
        "DOI": normalize_doi(external.get("DOI")),
        "PMID": external.get("PubMed"),
        "URL": f"https://www.semanticscholar.org/paper/{paper_id}",
        "abstract": paper.get("abstract") or None,
    }
    if isinstance(paper.get("year"), int):
        csl["issued"] = {"date-parts": [[paper["year"]]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    return RegistryRecord(registry="semantic_scholar", identifier=str(paper_id), item=item)


class SemanticScholarClient:
    name = "semantic_scholar"

    def __init__(self, http: RegistryHttp, *, batch_size: int = 500) -> None:
        self._http = http
        self.batch_size = batch_size

    def fetch_ids(self, ids: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct batch id ("DOI:10.1/x", "ARXIV:2106.01345", ...)."""
        return in_batches(ids, self.batch_size, self._fetch_batch)

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        try:
            reply = self._http.post(
                "/paper/batch", _batch, params={"fields": FIELDS}, json={"ids": batch}
            )
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return failed(batch, exc)
        papers = reply.value or []
        if len(papers) != len(batch):
            error = "Semantic Scholar answered a batch of another length than asked"
            return {i: Lookup(identifier=i, error=error, attempts=reply.attempts) for i in batch}
        lookups = {}
        for identifier, paper in zip(batch, papers, strict=True):
            lookup = Lookup(identifier=identifier, attempts=reply.attempts)
            if paper is not None:
                try:
                    lookup.record = s2_paper_to_csl(paper)
                except ValueError as exc:
                    lookup.error = f"malformed Semantic Scholar record: {exc}"
            lookups[identifier] = lookup
        return lookups

    def search(self, title: str, rows: int = 1) -> list[RegistryRecord]:
        """Semantic Scholar's best title match (it gives one), or none."""
        params: dict[str, str | int] = {"query": title_query(title), "fields": FIELDS}
        reply = self._http.get("/paper/search/match", _matches, params=params, absent=_no_match)
        papers = reply.value or []
        return records(papers[:rows], s2_paper_to_csl)
