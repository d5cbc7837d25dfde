"""Semantic Scholar Graph API: `POST /paper/batch?fields=..` with `{"ids": [...]}` (up to 500;
a list aligned with the ids, `null` where none is held), `GET /paper/search/match?query=..`
(the one best title match, or 404 "Title match not found") and `GET /paper/{id}`."""

import json
from collections.abc import Mapping
from typing import Any

from tests.fake_registry.reply import Reply, json_reply
from tests.fake_registry.scholarly_data import ScholarlyData

MAX_BATCH = 500
# search/match answers only a title it is confident about.
MATCH_SCORE = 80.0
TOO_MANY = {
    "message": "Too Many Requests. Please wait and try again or apply for a key for higher "
    "rate limits. https://www.semanticscholar.org/product/api#api-key-form",
    "code": "429",
}
_EXTERNAL = {"doi": "DOI", "arxiv": "ArXiv", "pmid": "PubMed", "dblp": "DBLP", "mag": "MAG"}


def _fields(paper: dict[str, Any], params: Mapping[str, str]) -> dict[str, Any]:
    wanted = {f for f in params.get("fields", "title").split(",") if f}
    return {"paperId": paper["paperId"], **{k: paper.get(k) for k in wanted if k != "paperId"}}


def find(data: ScholarlyData, identifier: str) -> dict[str, Any] | None:
    """A paper by paperId, CorpusId:N or an external id ("DOI:10.1/x", "ARXIV:2106.01345")."""
    if identifier in data.s2:
        return data.s2[identifier]
    kind, _, value = identifier.partition(":")
    key = "CorpusId" if kind.lower() == "corpusid" else _EXTERNAL.get(kind.lower())
    if key is None or not value:
        return None
    for paper in data.s2.values():
        held = (paper.get("externalIds") or {}).get(key)
        if held is not None and str(held).lower() == value.lower():
            return paper
    return None


def batch(data: ScholarlyData, params: Mapping[str, str], body: bytes) -> Reply:
    try:
        ids = json.loads(body or b"{}").get("ids")
    except (ValueError, AttributeError):
        ids = None
    if not isinstance(ids, list):
        return json_reply({"error": 'Unacceptable JSON body: expected {"ids": [...]}'}, 400)
    if len(ids) > MAX_BATCH:
        return json_reply({"error": f"-ids: Too many ids, max {MAX_BATCH}"}, 400)
    papers = [find(data, str(i)) for i in ids]
    return json_reply([_fields(p, params) if p else None for p in papers])


def match(data: ScholarlyData, params: Mapping[str, str]) -> Reply:
    best = data.index("s2").best(params.get("query", ""), 1, MATCH_SCORE)
    if not best:
        return json_reply({"error": "Title match not found"}, 404)
    key, score = best[0]
    return json_reply({"data": [{**_fields(data.s2[key], params), "matchScore": score}]})


def paper(data: ScholarlyData, identifier: str, params: Mapping[str, str]) -> Reply:
    found = find(data, identifier)
    if found is None:
        return json_reply({"error": f"Paper with id {identifier} not found"}, 404)
    return json_reply(_fields(found, params))


def too_many() -> Reply:
    return json_reply(TOO_MANY, 429)
