"""arXiv's OAI-PMH interface: `GET /oai2?verb=ListRecords&metadataPrefix=arXiv&from=YYYY-MM-DD`,
then `?verb=ListRecords&resumptionToken=T`, answered in OAI-PMH 2.0 XML with arXiv's own
metadata format (`<arXiv xmlns="http://arxiv.org/OAI/arXiv/">`).

The records are the fake's arXiv entries (the recorded Atom answers and those derived from the
other registries), each written in the arXiv format: `<created>` from the first version's
`published`, `<updated>` and the header's `datestamp` from `updated`, authors split into keyname
and forenames at the last space. Records are listed by datestamp, `PAGE_SIZE` a page; the token
is `FROM|OFFSET` as arXiv's is `ID|OFFSET`. Errors are OAI-PMH's: `noRecordsMatch`,
`badResumptionToken`, `badArgument`, `cannotDisseminateFormat`, `badVerb`. Flow control (503 with
Retry-After) is the `unavailable` fault; the arXiv pool's limit applies as to the query API.
"""

import re
from collections.abc import Mapping
from xml.etree import ElementTree as ET  # our own recorded entries, not untrusted input
from xml.sax.saxutils import escape

from tests.fake_registry.reply import Reply, text_reply
from tests.fake_registry.scholarly_data import ScholarlyData

XML = "text/xml; charset=utf-8"
PAGE_SIZE = 100
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV_ATOM = "{http://arxiv.org/schemas/atom}"
_ENTRY = '<entry xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">'
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID = re.compile(r"/abs/(.+?)(?:v\d+)?$")


def _document(params: Mapping[str, str], body: str) -> str:
    attrs = "".join(f' {k}="{escape(v)}"' for k, v in sorted(params.items()) if k != "verb")
    verb = f' verb="{escape(params["verb"])}"' if params.get("verb") else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ '
        'http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">\n'
        "<responseDate>2026-11-28T00:00:00Z</responseDate>\n"
        f"<request{verb}{attrs}>http://export.arxiv.org/oai2</request>\n{body}\n</OAI-PMH>\n"
    )


def _error(params: Mapping[str, str], code: str, message: str) -> Reply:
    error = f'<error code="{code}">{escape(message)}</error>'
    return text_reply(_document(params, error), 200, XML)


def _record(entry_xml: str) -> tuple[str, str, str]:
    """(datestamp, id, `<record>`) of one Atom entry."""
    entry = ET.fromstring(entry_xml.replace("<entry>", _ENTRY, 1))
    match = _ID.search(entry.findtext(f"{ATOM}id") or "")
    arxiv_id = match.group(1) if match else ""
    published = (entry.findtext(f"{ATOM}published") or "")[:10]
    updated = (entry.findtext(f"{ATOM}updated") or published)[:10]
    authors = []
    for author in entry.findall(f"{ATOM}author"):
        forenames, _, keyname = (author.findtext(f"{ATOM}name") or "").rpartition(" ")
        given = f"<forenames>{escape(forenames)}</forenames>" if forenames else ""
        authors.append(f"<author><keyname>{escape(keyname)}</keyname>{given}</author>")
    optional = ""
    for tag, source in (
        ("comments", f"{ARXIV_ATOM}comment"),
        ("journal-ref", f"{ARXIV_ATOM}journal_ref"),
        ("doi", f"{ARXIV_ATOM}doi"),
    ):
        if value := entry.findtext(source):
            optional += f"<{tag}>{escape(value)}</{tag}>"
    categories = " ".join(c.get("term", "") for c in entry.findall(f"{ATOM}category"))
    record = (
        f"<record><header><identifier>oai:arXiv.org:{arxiv_id}</identifier>"
        f"<datestamp>{updated}</datestamp></header><metadata>"
        '<arXiv xmlns="http://arxiv.org/OAI/arXiv/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://arxiv.org/OAI/arXiv/ http://arxiv.org/OAI/arXiv.xsd">'
        f"<id>{escape(arxiv_id)}</id><created>{published}</created>"
        + (f"<updated>{updated}</updated>" if updated != published else "")
        + f"<authors>{''.join(authors)}</authors>"
        f"<title>{escape(entry.findtext(f'{ATOM}title') or '')}</title>"
        f"<categories>{escape(categories)}</categories>{optional}"
        f"<abstract>{escape(entry.findtext(f'{ATOM}summary') or '')}</abstract>"
        "</arXiv></metadata></record>"
    )
    return updated, arxiv_id, record


def list_records(data: ScholarlyData, params: Mapping[str, str], page_size: int) -> Reply:
    if params.get("verb") != "ListRecords":
        return _error(params, "badVerb", "Illegal verb")
    token = params.get("resumptionToken")
    if token is not None:
        if set(params) != {"verb", "resumptionToken"}:
            return _error(params, "badArgument", "resumptionToken is an exclusive argument")
        since, _, offset_text = token.partition("|")
        if not offset_text.isdigit() or (since and not _DAY.match(since)):
            return _error(params, "badResumptionToken", f"Invalid resumption token {token}")
        offset = int(offset_text)
    else:
        if params.get("metadataPrefix") != "arXiv":
            prefix = params.get("metadataPrefix", "")
            return _error(params, "cannotDisseminateFormat", f"Unknown format {prefix}")
        since = params.get("from", "")
        if since and not _DAY.match(since):
            return _error(params, "badArgument", f"Illegal from date {since}")
        offset = 0
    records = sorted(_record(xml) for xml in data.arxiv.values())
    listed = [r for r in records if r[0] >= since]
    if not listed:
        return _error(params, "noRecordsMatch", "No records match")
    page = listed[offset : offset + page_size]
    following = offset + page_size
    next_token = f"{since}|{following}" if following < len(listed) else ""
    body = (
        "<ListRecords>\n"
        + "\n".join(r[2] for r in page)
        + f'\n<resumptionToken cursor="{offset}" completeListSize="{len(listed)}">'
        f"{next_token}</resumptionToken>\n</ListRecords>"
    )
    return text_reply(_document(params, body), 200, XML)
