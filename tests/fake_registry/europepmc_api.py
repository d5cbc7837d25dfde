"""Europe PMC REST: `GET /search?query=..&format=json&resultType=core&pageSize=N`.

Queries are terms joined by OR: `PMCID:PMC123`, `EXT_ID:123` (a PMID or preprint id),
`DOI:10.1/x`, `TITLE:"words"`; other text is matched against titles."""

import re
from collections.abc import Mapping
from typing import Any

from tests.fake_registry.reply import Reply, json_reply
from tests.fake_registry.scholarly_data import ScholarlyData

MAX_PAGE = 1000
TITLE_MATCH = 85.0
_TERM = re.compile(r'^(PMCID|EXT_ID|DOI|TITLE):\s*"?(.*?)"?$', re.IGNORECASE)
_LITE_DROPPED = ("authorList", "journalInfo", "pubTypeList", "bookOrReportDetails")


def _matches(data: ScholarlyData, term: str, limit: int) -> list[dict[str, Any]]:
    match = _TERM.match(term.strip())
    field, value = (match.group(1).upper(), match.group(2)) if match else ("TITLE", term)
    if field == "TITLE":
        keys = data.index("europepmc").best(value, limit, TITLE_MATCH)
        return [data.europepmc[key] for key, _ in keys]
    key = {"PMCID": "pmcid", "EXT_ID": "id", "DOI": "doi"}[field]
    return [r for r in data.europepmc.values() if str(r.get(key, "")).lower() == value.lower()]


def search(data: ScholarlyData, params: Mapping[str, str]) -> Reply:
    if params.get("format", "xml") != "json":
        return json_reply({"error": "only format=json is served here"}, 400)
    page_text = params.get("pageSize", "25")
    if not page_text.isdigit() or not 1 <= int(page_text) <= MAX_PAGE:
        return json_reply({"error": f"pageSize must be between 1 and {MAX_PAGE}"}, 400)
    page_size = int(page_text)
    query = params.get("query", "")
    found: dict[str, dict[str, Any]] = {}
    for term in re.split(r"\s+OR\s+", query):
        for result in _matches(data, term, page_size):
            found.setdefault(f"{result['source']}:{result['id']}", result)
    results = list(found.values())
    if params.get("resultType", "lite") == "lite":
        results = [{k: v for k, v in r.items() if k not in _LITE_DROPPED} for r in results]
    request = {
        "queryString": query,
        "resultType": params.get("resultType", "lite"),
        "cursorMark": "*",
        "pageSize": page_size,
        "sort": "",
        "synonym": False,
    }
    body = {
        "version": "6.9",
        "hitCount": len(results),
        "request": request,
        "resultList": {"result": results[:page_size]},
    }
    return json_reply(body, content_type="application/json;charset=UTF-8")
