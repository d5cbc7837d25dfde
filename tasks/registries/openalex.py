"""OpenAlex works: DOIs in batches (`filter=doi:A|B`, up to 100) and title search
(`filter=title.search:WORDS`). Needs an API key since February 2026 (`api_key=`, added below
the cache like every credential); without one the registry is not asked.

Answers are `{"meta": {...}, "results": [work]}`; a work's DOI is a URL
("https://doi.org/10.1/x"), its venue `primary_location.source.display_name`, its authors
`authorships[].author.display_name`. A source of type `repository` holds a copy: its name is the
record's CSL `archive`, not its venue (which archives name one is policy: tasks/lookup/)."""

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

SELECT = "id,doi,display_name,publication_year,authorships,primary_location,type,biblio"
OPENALEX_TO_CSL_TYPE = {"article": "article-journal", "preprint": "article", "book": "book"}


def _results(response: httpx.Response) -> list[dict[str, Any]]:
    body = json_body(response)
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise InvalidResponse("OpenAlex answer without `results`")
    return [work for work in results if isinstance(work, dict)]


def abstract_from_inverted_index(index: Any) -> str | None:
    """OpenAlex gives abstracts as {word: [positions]}; the words laid back in order."""
    if not isinstance(index, dict):
        return None
    placed = {
        position: word
        for word, positions in index.items()
        if isinstance(positions, list)
        for position in positions
        if isinstance(position, int)
    }
    return " ".join(placed[p] for p in sorted(placed)) or None


def openalex_work_to_csl(work: dict[str, Any]) -> RegistryRecord:
    work_id = str(work.get("id") or "").rsplit("/", 1)[-1]
    if not work_id:
        raise ValueError("OpenAlex work without an id")
    source = ((work.get("primary_location") or {}).get("source")) or {}
    names = [
        (a.get("author") or {}).get("display_name") or a.get("raw_author_name") or ""
        for a in work.get("authorships") or []
        if isinstance(a, dict)
    ]
    biblio = work.get("biblio") or {}
    first, last = biblio.get("first_page"), biblio.get("last_page")
    csl: dict[str, Any] = {
        "id": work_id,
        "type": OPENALEX_TO_CSL_TYPE.get(str(work.get("type")), "article"),
        "title": work.get("display_name") or work.get("title"),
        "author": [n.to_csl() for n in people(names) or []] or None,
        **_venue(source),
        "volume": biblio.get("volume"),
        "issue": biblio.get("issue"),
        "page": f"{first}-{last}" if first and last and first != last else first,
        "DOI": normalize_doi(work.get("doi")),
        "URL": work.get("id"),
        "abstract": abstract_from_inverted_index(work.get("abstract_inverted_index")),
    }
    if isinstance(work.get("publication_year"), int):
        csl["issued"] = {"date-parts": [[work["publication_year"]]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    return RegistryRecord(registry="openalex", identifier=work_id, item=item)


def _venue(source: dict[str, Any]) -> dict[str, str]:
    """The CSL field a work's primary source names: a repository (arXiv, 'CaltechAUTHORS') is the
    `archive` holding a copy, any other source the `container-title`."""
    name = source.get("display_name")
    if not isinstance(name, str):
        return {}
    return {"archive" if source.get("type") == "repository" else "container-title": name}


class OpenAlexClient:
    name = "openalex"

    def __init__(self, http: RegistryHttp, *, batch_size: int = 50) -> None:
        self._http = http
        self.batch_size = batch_size

    def fetch_dois(self, dois: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct DOI (normalised): a record, not held, or an error."""
        wanted = (d for d in map(normalize_doi, dois) if d and "|" not in d)
        return in_batches(wanted, self.batch_size, self._fetch_batch)

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        params: dict[str, str | int] = {
            "filter": "doi:" + "|".join(batch),
            "per_page": len(batch),
            "select": SELECT,
        }
        try:
            reply = self._http.get("/works", _results, params=params)
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return failed(batch, exc)
        lookups = {d: Lookup(identifier=d, attempts=reply.attempts) for d in batch}
        for record in records(reply.value or [], openalex_work_to_csl):
            if record.item.DOI in lookups:
                lookups[record.item.DOI].record = record
        return lookups

    def search(self, title: str, rows: int = 5) -> list[RegistryRecord]:
        """OpenAlex's most relevant works for a title, best first."""
        params: dict[str, str | int] = {
            "filter": f"title.search:{title_query(title)}",
            "per_page": rows,
            "select": SELECT,
        }
        works = self._http.get("/works", _results, params=params).value or []
        return records(works, openalex_work_to_csl)
