"""Crossref REST API client: DOIs in batches, bibliographic search, and the agency fallback.

A DOI missing from Crossref is not yet a fabricated DOI: it may be registered at DataCite,
mEDRA, ... So a DOI absent from the batch answer is checked at `/works/{doi}/agency`, and for a
non-Crossref agency its CSL-JSON is fetched by content negotiation at doi.org.
"""

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, Literal
from urllib.parse import quote

import httpx

from models.audit import Lookup, RegistryRecord
from models.csl import CSLItem
from tasks.registries.crossref_map import crossref_work_to_csl
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    failed_lookup,
    json_body,
)

__all__ = ["CrossrefClient", "crossref_work_to_csl"]

CSL_JSON = "application/vnd.citationstyles.csl+json"


def _message(response: httpx.Response) -> Any:
    body = json_body(response)
    if not isinstance(body, dict) or "message" not in body:
        raise InvalidResponse("JSON without a Crossref `message`")
    return body["message"]


def _items(response: httpx.Response) -> list[dict[str, Any]]:
    message = _message(response)
    items = message.get("items") if isinstance(message, dict) else None
    if not isinstance(items, list):
        raise InvalidResponse("Crossref work list without `items`")
    return [item for item in items if isinstance(item, dict) and item.get("DOI")]


def _candidates(response: httpx.Response) -> list[dict[str, Any]]:
    """A search answer: Crossref ranks every work it holds, so it always sends some candidates;
    none at all is a broken answer, not evidence that the work does not exist."""
    items = _items(response)
    if not items:
        raise InvalidResponse("Crossref search answered no candidates at all")
    return items


def _crossref_absent(response: httpx.Response) -> bool:
    """Crossref's own 404 on `/works/{doi}` and `/works/{doi}/agency` (its exact body)."""
    return response.text.strip() == "Resource not found."


def _doi_org_absent(response: httpx.Response) -> bool:
    """doi.org's own "DOI Not Found" page, not a gateway's or proxy's 404."""
    return "DOI Not Found" in response.text


def _work(response: httpx.Response) -> dict[str, Any]:
    message = _message(response)
    if not isinstance(message, dict) or not message.get("DOI"):
        raise InvalidResponse("Crossref work without a DOI")
    return message


def _agency_id(response: httpx.Response) -> str:
    message = _message(response)
    agency = message.get("agency") if isinstance(message, dict) else None
    if not isinstance(agency, dict) or not agency.get("id"):
        raise InvalidResponse("agency answer without an agency id")
    return str(agency["id"]).lower()


def _csl(response: httpx.Response) -> dict[str, Any] | None:
    if response.status_code == 204:  # doi.org: the agency holds no metadata for this DOI
        return None
    body = json_body(response)
    if not isinstance(body, dict):
        raise InvalidResponse("CSL-JSON answer is not an object")
    return body


def _filter_params(dois: Sequence[str]) -> dict[str, str | int]:
    return {"filter": ",".join(f"doi:{doi}" for doi in dois), "rows": len(dois)}


def _path_doi(doi: str) -> str:
    # Keep the prefix/suffix slash readable; escape everything a path or query would misread.
    return quote(doi, safe="/")


class CrossrefClient:
    def __init__(
        self,
        http: RegistryHttp,
        doi_http: RegistryHttp,
        *,
        batch_size: int = 50,
        max_url_chars: int = 4_000,
    ) -> None:
        self._http = http
        self._doi_http = doi_http
        self.batch_size = batch_size
        # Credentials (mailto) are appended below the cache: leave them room.
        self._max_url_chars = max_url_chars - 200

    def fetch_dois(self, dois: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct DOI (keys lower-cased): a record, not found, or an error."""
        wanted = list(dict.fromkeys(doi.strip().lower() for doi in dois if doi.strip()))
        lookups: dict[str, Lookup] = {}
        in_filter = [doi for doi in wanted if "," not in doi]
        for batch in self.batches(in_filter):
            lookups.update(self._fetch_batch(batch))
        for doi in wanted:
            if doi not in lookups:  # a comma cannot go in a filter
                lookups[doi] = self._fetch_single(doi)
        return {doi: lookups[doi] for doi in wanted}

    def batches(self, dois: Sequence[str]) -> Iterator[list[str]]:
        """Groups of at most `batch_size` DOIs whose filter URL stays under the length limit.
        Percent-encoding is character by character, so a batch's URL is its empty filter's URL
        plus each DOI's encoded `doi:…` and the encoded commas between them: linear, where
        building each growing URL was quadratic."""
        batch: list[str] = []
        length = 0
        comma = self._encoded_len(",")
        empty_len = cache(self._empty_url_len)  # by rows: each length built once, not per DOI
        for doi in dois:
            encoded = self._encoded_len(f"doi:{doi}")
            added = encoded + (comma if batch else 0)
            rows = len(batch) + 1
            if batch and (
                rows > self.batch_size or empty_len(rows) + length + added > self._max_url_chars
            ):
                yield batch
                batch, length = [], 0
                added = encoded
            batch.append(doi)
            length += added
        if batch:
            yield batch

    def _empty_url_len(self, rows: int) -> int:
        url = httpx.URL(f"{self._http.base_url}/works", params={"filter": "", "rows": rows})
        return len(str(url))

    def _encoded_len(self, text: str) -> int:
        """How long `text` is once encoded as a query value."""
        return len(str(httpx.URL("http://x/", params={"q": text}))) - len("http://x/?q=")

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        try:
            reply = self._http.get("/works", _items, params=_filter_params(batch))
        except RegistryUnavailable as exc:
            return {doi: failed_lookup(doi, exc, 0) for doi in batch}
        except RegistryRequestError:
            # Crossref refused the filter (an odd DOI): ask for each DOI on its own instead.
            return {doi: self._fetch_single(doi) for doi in batch}
        found = {
            record.identifier: record
            for record in (crossref_work_to_csl(item) for item in reply.value or [])
        }
        return {
            doi: Lookup(identifier=doi, record=found[doi], attempts=reply.attempts)
            if doi in found
            else self._check_agency(doi, reply.attempts)
            for doi in batch
        }

    def _fetch_single(self, doi: str) -> Lookup:
        try:
            reply = self._http.get(f"/works/{_path_doi(doi)}", _work, absent=_crossref_absent)
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return failed_lookup(doi, exc, 0)
        if reply.value is None:
            return self._check_agency(doi, reply.attempts)
        return Lookup(
            identifier=doi, record=crossref_work_to_csl(reply.value), attempts=reply.attempts
        )

    def _check_agency(self, doi: str, attempts_so_far: int) -> Lookup:
        """The DOI is not in Crossref's answer: does it exist elsewhere? (Lookup.attempts
        totals every request made for this DOI.)"""
        try:
            reply = self._http.get(
                f"/works/{_path_doi(doi)}/agency", _agency_id, absent=_crossref_absent
            )
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return failed_lookup(doi, exc, attempts_so_far)
        attempts = attempts_so_far + reply.attempts
        if reply.value is None:
            return Lookup(identifier=doi, attempts=attempts)
        if reply.value == "crossref":
            # Registered at Crossref yet missing from the filter answer (indexing lag).
            try:
                work = self._http.get(f"/works/{_path_doi(doi)}", _work, absent=_crossref_absent)
            except (RegistryUnavailable, RegistryRequestError) as exc:
                return failed_lookup(doi, exc, attempts)
            record = crossref_work_to_csl(work.value) if work.value else _bare(doi, "crossref")
            return Lookup(identifier=doi, record=record, attempts=attempts + work.attempts)
        registry: Literal["datacite", "other-agency"] = (
            "datacite" if reply.value == "datacite" else "other-agency"
        )
        return self._negotiate(doi, registry, attempts)

    def _negotiate(
        self, doi: str, registry: Literal["datacite", "other-agency"], attempts_so_far: int
    ) -> Lookup:
        """CSL-JSON from doi.org. The agency answer proved the DOI exists, so when doi.org answers
        that it has no CSL for it (204, 404, 406) a bare record says so; when we got no usable
        answer (5xx, timeouts, a body we cannot read) nothing was compared: the lookup failed."""
        try:
            reply = self._doi_http.get(
                f"/{_path_doi(doi)}", _csl, headers={"Accept": CSL_JSON}, absent=_doi_org_absent
            )
        except RegistryRequestError as exc:
            if exc.status != 406:
                return failed_lookup(doi, exc, attempts_so_far)
            bare = _bare(doi, registry)
            return Lookup(identifier=doi, record=bare, attempts=attempts_so_far + 1)
        except RegistryUnavailable as exc:
            return failed_lookup(doi, exc, attempts_so_far)
        attempts = attempts_so_far + reply.attempts
        if reply.value is None:
            return Lookup(identifier=doi, record=_bare(doi, registry), attempts=attempts)
        csl = {**reply.value, "id": doi, "DOI": doi}
        try:
            item = CSLItem.from_csl(csl)
        except ValueError as exc:
            error = f"doi.org sent CSL-JSON for {doi} that cannot be read ({type(exc).__name__})"
            return Lookup(identifier=doi, error=error, attempts=attempts)
        record = RegistryRecord(registry=registry, identifier=doi, item=item)
        return Lookup(identifier=doi, record=record, attempts=attempts)

    def search(self, reference: str, rows: int = 5) -> list[RegistryRecord]:
        """Crossref's candidates for a free-text reference, best first (weak ones included)."""
        return self._query({"query.bibliographic": reference, "rows": rows})

    def search_title(self, title: str, author: str | None, rows: int = 5) -> list[RegistryRecord]:
        """Crossref's candidates for a title and first author's surname: `query.bibliographic`
        ranks short titles badly, field queries do not."""
        params: dict[str, str | int] = {"query.title": title, "rows": rows}
        if author:
            params["query.author"] = author
        return self._query(params)

    def _query(self, params: dict[str, str | int]) -> list[RegistryRecord]:
        reply = self._http.get("/works", _candidates, params=params)
        return [crossref_work_to_csl(item) for item in reply.value or []]


def _bare(doi: str, registry: Literal["crossref", "datacite", "other-agency"]) -> RegistryRecord:
    item = CSLItem.from_csl({"id": doi, "DOI": doi})
    return RegistryRecord(registry=registry, identifier=doi, item=item, metadata_missing=True)
