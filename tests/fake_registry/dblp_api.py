"""DBLP's publication search API: `GET /search/publ/api?q=..&format=json&h=N&f=F`.

DBLP ANDs the query's words as prefixes of the record's words (title, authors, venue); hits
come back as `result.hits.hit[]`, with `hit` left out when none match. Its 429 is an HTML page
with Retry-After."""

from collections.abc import Mapping

from tests.fake_registry.reply import Reply, json_reply, text_reply
from tests.fake_registry.scholarly_data import ScholarlyData

MAX_HITS = 1000
TOO_MANY = (
    "<!DOCTYPE html><html><head><title>429 Too Many Requests</title></head><body>"
    "<h1>Too Many Requests</h1><p>You have sent too many requests in a given amount of time.</p>"
    "</body></html>"
)


def search(data: ScholarlyData, params: Mapping[str, str]) -> Reply:
    if params.get("format") != "json":
        return text_reply("only format=json is served here", 400, "text/plain")
    hits_text, first_text = params.get("h", "30"), params.get("f", "0")
    if not hits_text.isdigit() or not first_text.isdigit():
        return text_reply("bad h or f parameter", 400, "text/plain")
    wanted, first = min(int(hits_text), MAX_HITS), int(first_text)
    query = params.get("q", "")
    keys = data.index("dblp").all_words(query, first + wanted)
    page = [
        {"@score": str(len(keys) - n), "@id": str(n), **data.dblp[key]}
        for n, key in enumerate(keys[first:], start=first)
    ]
    hits: dict[str, object] = {
        "@total": str(len(keys)),
        "@computed": str(len(keys)),
        "@sent": str(len(page)),
        "@first": str(first),
    }
    if page:
        hits["hit"] = page
    result = {
        "query": f"{query}*",
        "status": {"@code": "200", "text": "OK"},
        "time": {"@unit": "msecs", "text": "1.00"},
        "hits": hits,
    }
    return json_reply({"result": result}, content_type="application/json; charset=utf-8")


def too_many() -> Reply:
    reply = text_reply(TOO_MANY, 429, "text/html; charset=utf-8")
    reply.headers["Retry-After"] = "1"
    return reply
