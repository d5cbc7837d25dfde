"""OAI-PMH harvesting: `ListRecords` pages, one request each, over a registry's HTTP stack.

`GET {path}?verb=ListRecords&metadataPrefix=P&from=YYYY-MM-DD` answers a page of records and a
`<resumptionToken>`; the next page is `?verb=ListRecords&resumptionToken=T`, until a page whose
token is empty (or absent). Nothing changed since `from` is the error `noRecordsMatch`, an answer,
not a failure. A server that wants the harvester to slow down answers 503 with Retry-After
(arXiv's flow control): RegistryHttp waits as told and asks again, within its limiter.
Protocol errors (`badArgument`, `badResumptionToken`, ...) raise OaiError: asking again would
get the same answer.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

import httpx

from tasks.errors import InfrastructureError
from tasks.registries.http import InvalidResponse, RegistryHttp, xml_body

OAI = "{http://www.openarchives.org/OAI/2.0/}"


class OaiError(InfrastructureError):
    """The repository refused the request by OAI-PMH's rules (its error code and message)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"OAI-PMH error {code}: {message}")
        self.code = code


@dataclass(frozen=True)
class Page:
    body: bytes  # the page as the repository sent it
    token: str | None  # resumption token of the next page; None on the last
    empty: bool  # noRecordsMatch: nothing to harvest
    records: int = 0  # on this page
    listed: int | None = None  # in the whole list, as the token's completeListSize says


def _page(response: httpx.Response) -> Page:
    root = xml_body(response)
    if root.tag != f"{OAI}OAI-PMH":
        raise InvalidResponse(f"answered <{root.tag}>, not an OAI-PMH document")
    if (error := root.find(f"{OAI}error")) is not None:
        code = error.get("code", "")
        if code == "noRecordsMatch":
            return Page(response.content, None, True)
        raise OaiError(code, " ".join((error.text or "").split()))
    listed = root.find(f"{OAI}ListRecords")
    if listed is None:
        raise InvalidResponse("OAI-PMH answer without ListRecords")
    resumption = listed.find(f"{OAI}resumptionToken")
    token = (resumption.text or "").strip() if resumption is not None else ""
    size = resumption.get("completeListSize", "") if resumption is not None else ""
    records = len(listed.findall(f"{OAI}record"))
    return Page(
        response.content, token or None, False, records, int(size) if size.isdigit() else None
    )


def pages(
    http: RegistryHttp,
    path: str,
    metadata_prefix: str,
    since: date | None = None,
    token: str | None = None,
) -> Iterator[Page]:
    """Each page of `ListRecords` with the token of the next; from `token` when given (a
    harvest resumed where it stopped)."""
    params: dict[str, str | int] = {"verb": "ListRecords", "metadataPrefix": metadata_prefix}
    if since is not None:
        params["from"] = since.isoformat()
    if token is not None:
        params = {"verb": "ListRecords", "resumptionToken": token}
    while True:
        page = http.get(path, _page, params=params).value
        if page is None or page.empty:
            return
        yield page
        if page.token is None:
            return
        params = {"verb": "ListRecords", "resumptionToken": page.token}
