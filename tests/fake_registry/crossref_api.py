"""Crossref REST API (`/works`) and DOI content negotiation answers, shaped like the recordings
in shared/data/crossref (envelopes, 404 bodies and content types)."""

from collections.abc import Mapping
from typing import Any

from tests.fake_registry.csl_json import crossref_work_to_csl
from tests.fake_registry.data import RegistryData, error_body
from tests.fake_registry.reply import Reply, json_reply, text_reply

CSL_TYPES = ("application/vnd.citationstyles.csl+json", "application/citeproc+json")
MAX_ROWS = 1000  # Crossref refuses more with a validation-failure
DEFAULT_ROWS = 20
QUERY_FIELDS = (
    "query.bibliographic",
    "query",
    "query.title",
    "query.author",
    "query.container-title",
)


def not_found(content_type: str = "text/plain") -> Reply:
    # The agency endpoint sends the same text labelled as JSON, as recorded.
    return text_reply(error_body("crossref_not_found.txt"), 404, content_type)


def _envelope(message_type: str, message: Any) -> dict[str, Any]:
    return {
        "status": "ok",
        "message-type": message_type,
        "message-version": "1.0.0",
        "message": message,
    }


def _validation_failure(value: str, problem: str) -> Reply:
    failure = {"type": "integer-not-valid", "value": value, "message": problem}
    body = {"status": "failed", "message-type": "validation-failure", "message": [failure]}
    return json_reply(body, 400, "application/json;charset=utf-8")


def work(data: RegistryData, doi: str) -> Reply:
    record = data.crossref.get(doi.lower())
    if record is None:
        return not_found()
    return json_reply(_envelope("work", record))


def agency(data: RegistryData, doi: str) -> Reply:
    found = data.agency_of(doi)
    if found is None:
        return not_found("application/json;charset=utf-8")
    return json_reply(
        _envelope("work-agency", {"DOI": doi.lower(), "agency": found}),
        content_type="application/json;charset=utf-8",
    )


def filter_dois(filter_text: str) -> list[str]:
    """`doi:10.1/a,doi:10.1/B,type:x` -> ["10.1/a", "10.1/b"] (other filters are ignored)."""
    dois: list[str] = []
    for clause in filter_text.split(","):
        name, _, value = clause.partition(":")
        if name.strip() == "doi" and value.strip():
            dois.append(value.strip().lower())
    return list(dict.fromkeys(dois))


def works(data: RegistryData, params: Mapping[str, str]) -> Reply:
    """`/works?filter=doi:..` and `/works?query.bibliographic=..`, with rows, offset, select."""
    rows_text, offset_text = params.get("rows", str(DEFAULT_ROWS)), params.get("offset", "0")
    for text in (rows_text, offset_text):
        if not text.isdigit():
            return _validation_failure(text, f"Integer specified as {text} but must be positive. ")
    rows, offset = int(rows_text), int(offset_text)
    if rows > MAX_ROWS:
        problem = f"Integer specified as {rows} but must be a positive integer less than or equal"
        return _validation_failure(rows_text, f"{problem} to {MAX_ROWS}. ")
    wanted = filter_dois(params.get("filter", ""))
    query = " ".join(params[name] for name in QUERY_FIELDS if params.get(name))
    if query:
        # Crossref ranks every record it holds: weak candidates still come back.
        ranked = data.crossref_ranker().rank(
            query, limit=len(data.crossref) if wanted else offset + rows
        )
        if wanted:
            ranked = [(doi, score) for doi, score in ranked if doi in wanted]
        total = len(ranked) if wanted else len(data.crossref)
        page = [{**data.crossref[doi], "score": score} for doi, score in ranked[offset:]]
    else:
        found = [doi for doi in wanted if doi in data.crossref] if wanted else list(data.crossref)
        if since := _from_index_date(params.get("filter", "")):
            found = [doi for doi in found if _indexed(data.crossref[doi]) >= since]
        if (cursor := params.get("cursor")) is not None:
            if cursor != "*" and not cursor.startswith("c"):
                return _validation_failure(cursor, "Cursor is not valid. ")
            offset = 0 if cursor == "*" else int(cursor[1:])
        total = len(found)
        page = [{**data.crossref[doi], "score": 1.0} for doi in found[offset : offset + rows]]
    page = page[:rows]
    if select := params.get("select"):
        fields = set(select.split(","))
        page = [{k: v for k, v in item.items() if k in fields} for item in page]
    message = {
        "facets": {},
        "total-results": total,
        "items": page,
        "items-per-page": rows,
        "query": {"start-index": offset, "search-terms": query or None},
    }
    if params.get("cursor") is not None:  # deep paging: a cursor to the next page, always
        message["next-cursor"] = f"c{offset + rows}"
    return json_reply(_envelope("work-list", message))


def _from_index_date(filter_text: str) -> str | None:
    """`from-index-date:2026-11-01` -> "2026-11-01" (the works indexed on or after that day)."""
    for clause in filter_text.split(","):
        name, _, value = clause.partition(":")
        if name.strip() == "from-index-date" and value.strip():
            return value.strip()
    return None


def _indexed(work: dict[str, Any]) -> str:
    return str((work.get("indexed") or {}).get("date-time", ""))[:10]


def content_negotiation(data: RegistryData, doi: str, accept: str) -> Reply:
    """doi.org: CSL-JSON when asked for it, else a redirect to the landing page; the real
    doi.org 404 page for unknown DOIs. (doi.org redirects CSL requests to the agency; we answer
    directly, as a client following redirects would see.)"""
    key = doi.lower()
    crossref, datacite = data.crossref.get(key), data.datacite.get(key)
    if crossref is None and datacite is None:
        page = error_body("doi_not_found.html").decode("utf-8").replace("10.1126/foo", doi)
        return text_reply(page, 404, "text/html;charset=utf-8")
    csl = crossref_work_to_csl(crossref) if crossref is not None else dict(datacite or {})
    if any(kind in accept for kind in CSL_TYPES):
        return json_reply(csl, content_type="application/vnd.citationstyles.csl+json")
    landing = (crossref or {}).get("resource", {}).get("primary", {}).get("URL") or csl.get("URL")
    reply = text_reply(f"<a href='{landing}'>Found</a>.", 302, "text/html;charset=utf-8")
    reply.headers["Location"] = str(landing)
    return reply
