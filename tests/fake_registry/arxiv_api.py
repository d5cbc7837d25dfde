"""arXiv's query API: `GET /api/query?id_list=A,B&max_results=N` and
`GET /api/query?search_query=ti:"WORDS"&max_results=N`, answered in Atom.

An id it does not hold is simply absent from the feed; a malformed id makes the request a 400
whose one entry is an error (as recorded); one request every three seconds."""

import re
from collections.abc import Mapping
from xml.sax.saxutils import escape

from tests.fake_registry.reply import Reply, text_reply
from tests.fake_registry.scholarly_data import ScholarlyData

ATOM = "application/atom+xml; charset=utf-8"
_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?$")
_FIELD = re.compile(r'(ti|au|all|abs):("([^"]*)"|\S+)')
MAX_RESULTS = 2000
# A phrase search on titles: a title this much like the phrase counts as holding it.
TITLE_MATCH = 85.0


def _feed(entries: list[str], query: str, total: int | None = None) -> str:
    count = len(entries) if total is None else total
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
        f"  <id>https://arxiv.org/api/fake</id>\n"
        f"  <title>arXiv Query: {escape(query)}</title>\n"
        f"  <opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>\n"
        f"  <opensearch:totalResults>{count}</opensearch:totalResults>\n"
        "  <opensearch:startIndex>0</opensearch:startIndex>\n  "
        + "\n  ".join(entries)
        + "\n</feed>\n"
    )


def _error(bad_id: str) -> Reply:
    entry = (
        f"<entry>\n    <id>https://arxiv.org/api/errors#incorrect_id_format_for_{bad_id}</id>\n"
        "    <title>Error</title>\n"
        f"    <summary>incorrect id format for {escape(bad_id)}</summary>\n"
        "    <author>\n      <name>arXiv api core</name>\n    </author>\n  </entry>"
    )
    return text_reply(_feed([entry], f"id_list={bad_id}"), 400, ATOM)


def query(data: ScholarlyData, params: Mapping[str, str]) -> Reply:
    max_text = params.get("max_results", "10")
    if not max_text.isdigit() or int(max_text) > MAX_RESULTS:
        return text_reply("max_results must be an integer up to 2000", 400, "text/plain")
    limit = int(max_text)
    ids = [i.strip() for i in params.get("id_list", "").split(",") if i.strip()]
    if ids:
        entries = []
        for arxiv_id in ids:
            match = _ID.match(arxiv_id)
            if not match:
                return _error(arxiv_id)
            if (entry := data.arxiv.get(match.group(1))) is not None:
                entries.append(entry)
        return text_reply(_feed(entries[:limit], f"id_list={','.join(ids)}"), 200, ATOM)
    search = params.get("search_query", "")
    phrases = [
        m.group(3) if m.group(3) is not None else m.group(2) for m in _FIELD.finditer(search)
    ]
    title = " ".join(phrases) or search
    keys = [key for key, _ in data.index("arxiv").best(title, limit, TITLE_MATCH)]
    return text_reply(_feed([data.arxiv[key] for key in keys], search), 200, ATOM)
