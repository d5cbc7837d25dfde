"""OpenAlex: `GET /works?filter=doi:A|B&per_page=N` and `GET /works?filter=title.search:WORDS`,
answered `{"meta": {...}, "results": [work]}`; `select=` trims each work to the fields named.
Callers with an `api_key` get 10 req/s; without one the keyless budget is tiny."""

from collections.abc import Mapping
from typing import Any

from tests.fake_registry.reply import Reply, json_reply
from tests.fake_registry.scholarly_data import ScholarlyData

MAX_PER_PAGE = 200
TITLE_MATCH = 75.0


def _bad(message: str) -> Reply:
    return json_reply({"error": "Invalid query parameters error.", "message": message}, 400)


def _doi(value: str) -> str:
    return value.lower().removeprefix("https://doi.org/").strip()


def works(data: ScholarlyData, params: Mapping[str, str]) -> Reply:
    per_page_text = params.get("per_page", "25")
    if not per_page_text.isdigit() or not 1 <= int(per_page_text) <= MAX_PER_PAGE:
        return _bad(f"per_page must be between 1 and {MAX_PER_PAGE}")
    per_page = int(per_page_text)
    found: list[dict[str, Any]] = []
    for part in (p for p in params.get("filter", "").split(",") if p):
        name, _, value = part.partition(":")
        if name == "doi":
            wanted = {_doi(v) for v in value.split("|") if v}
            found = [w for w in data.openalex.values() if _doi(w.get("doi") or "") in wanted]
        elif name in ("title.search", "display_name.search"):
            keys = data.index("openalex").best(value, per_page, TITLE_MATCH)
            found = [data.openalex[key] for key, _ in keys]
        else:
            return _bad(f"{name} is not a valid field")
    select = [f for f in params.get("select", "").split(",") if f]
    results = [{k: w.get(k) for k in select} if select else w for w in found[:per_page]]
    meta = {"count": len(found), "db_response_time_ms": 1, "page": 1, "per_page": per_page}
    return json_reply({"meta": meta, "results": results, "group_by": []})


def too_many() -> Reply:
    return json_reply({"error": "Rate limit exceeded", "message": "Too many requests"}, 429)
