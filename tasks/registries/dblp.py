"""DBLP publication search: computer-science papers by title (and first author).

`GET {base}/search/publ/api?q=...&format=json&h=N` answers
`{"result": {"hits": {"@total": "2", "hit": [{"info": {...}}, ...]}}}`; `hit` is absent when
nothing matched, and `authors.author` is an object when there is one author. DBLP ends titles
with a period and numbers homonyms ("Wei Wang 0001"); its venues are short ("NeurIPS", "CoRR",
"ICLR"), which the venue table knows. DBLP has no lookup by DOI or arXiv id worth a request."""

from typing import Any

import httpx

from models.audit import RegistryRecord
from models.csl import CSLItem
from tasks.identifiers import normalize_doi
from tasks.registries.batches import records
from tasks.registries.fields import people, plain_words_query, without_final_period
from tasks.registries.http import InvalidResponse, RegistryHttp, json_body

_TYPES = {
    "Journal Articles": "article-journal",
    "Conference and Workshop Papers": "paper-conference",
    "Informal and Other Publications": "article",
    "Books and Theses": "book",
    "Parts in Books or Collections": "chapter",
    "Editorship": "book",
}


def _hits(response: httpx.Response) -> list[dict[str, Any]]:
    body = json_body(response)
    result = body.get("result") if isinstance(body, dict) else None
    hits = result.get("hits") if isinstance(result, dict) else None
    if not isinstance(hits, dict):
        raise InvalidResponse("DBLP answer without result.hits")
    found = hits.get("hit", [])
    if isinstance(found, dict):
        found = [found]
    if not isinstance(found, list):
        raise InvalidResponse("DBLP result.hits.hit is not a list")
    return [
        hit["info"] for hit in found if isinstance(hit, dict) and isinstance(hit.get("info"), dict)
    ]


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def dblp_hit_to_csl(info: dict[str, Any]) -> RegistryRecord:
    """One `hit[].info` object -> a record keyed by its DBLP key ("conf/iclr/VaswaniSP17")."""
    key = str(info.get("key") or info.get("url") or "")
    if not key:
        raise ValueError("DBLP hit without a key")
    authors = [
        a.get("text", "") if isinstance(a, dict) else str(a)
        for a in _listed((info.get("authors") or {}).get("author"))
    ]
    venue = _listed(info.get("venue"))
    year = str(info.get("year") or "")
    csl: dict[str, Any] = {
        "id": key,
        "type": _TYPES.get(str(info.get("type")), "article"),
        "title": without_final_period(info.get("title")),
        "author": [n.to_csl() for n in people(authors) or []] or None,
        "container-title": ", ".join(str(v) for v in venue) or None,
        "volume": info.get("volume"),
        "page": info.get("pages"),
        "DOI": normalize_doi(info.get("doi")),
        "URL": info.get("ee") if isinstance(info.get("ee"), str) else None,
    }
    if year.isdigit():
        csl["issued"] = {"date-parts": [[int(year)]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    return RegistryRecord(registry="dblp", identifier=key, item=item)


class DblpClient:
    name = "dblp"

    def __init__(self, http: RegistryHttp) -> None:
        self._http = http

    def search(self, title: str, rows: int = 5) -> list[RegistryRecord]:
        """DBLP's best hits for a title, best first. DBLP ANDs the words of a query, so no author
        is added: one misspelt surname would hide the paper; nor an accented or TeX word."""
        params: dict[str, str | int] = {"q": plain_words_query(title), "format": "json", "h": rows}
        hits = self._http.get("/search/publ/api", _hits, params=params).value or []
        return records(hits, dblp_hit_to_csl)
