"""Europe PMC REST search: PMCIDs in batches (`PMCID:PMC1 OR PMCID:PMC2`), biomedical titles,
and the bioRxiv/medRxiv preprints it indexes (source PPR).

`GET {base}/search?query=...&format=json&resultType=core&pageSize=N` answers
`{"hitCount": n, "resultList": {"result": [...]}}`. Core results carry `authorList.author[]`
(lastName, firstName, initials, or collectiveName); the lite `authorString` ("Schoenfeld JD,
Haas-Kogan DA.") is the fallback. Titles end with a period."""

import html
import re
from collections.abc import Sequence
from typing import Any

import httpx

from models.audit import Lookup, RegistryRecord
from models.csl import CSLItem, CSLName
from tasks.identifiers import normalize_doi, normalize_pmcid
from tasks.registries.batches import failed, in_batches, records
from tasks.registries.fields import surname_initials, title_query, without_final_period
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    json_body,
)


def _results(response: httpx.Response) -> list[dict[str, Any]]:
    body = json_body(response)
    result_list = body.get("resultList") if isinstance(body, dict) else None
    results = result_list.get("result") if isinstance(result_list, dict) else None
    if not isinstance(results, list):
        raise InvalidResponse("Europe PMC answer without resultList.result")
    return [r for r in results if isinstance(r, dict)]


def _authors(result: dict[str, Any]) -> list[CSLName]:
    listed = (result.get("authorList") or {}).get("author")
    if isinstance(listed, list) and listed:
        names = []
        for author in listed:
            if not isinstance(author, dict):
                continue
            if author.get("lastName"):
                given = author.get("firstName") or author.get("initials")
                names.append(CSLName.model_validate({"family": author["lastName"], "given": given}))
            elif literal := author.get("collectiveName") or author.get("fullName"):
                names.append(CSLName.model_validate({"literal": literal}))
        return names
    text = str(result.get("authorString") or "")
    return [n for n in map(surname_initials, text.split(",")) if n is not None]


_TAG = re.compile(r"<[^>]+>")


def _plain_abstract(text: Any) -> str | None:
    """Europe PMC's abstractText keeps the publisher's HTML (<h4>, <b>, <sup>)."""
    if not isinstance(text, str):
        return None
    return " ".join(html.unescape(_TAG.sub(" ", text)).split()) or None


def europepmc_result_to_csl(result: dict[str, Any]) -> RegistryRecord:
    """One core (or lite) result -> a record keyed by its PMCID, else SOURCE:id (PPR:PPR123)."""
    pmcid = normalize_pmcid(result.get("pmcid"))
    source, ident = result.get("source"), result.get("id")
    if not pmcid and not (source and ident):
        raise ValueError("Europe PMC result without an id")
    journal_info = result.get("journalInfo") or {}
    journal = journal_info.get("journal") or {}
    preprint = source == "PPR"
    publisher = (result.get("bookOrReportDetails") or {}).get("publisher")
    csl: dict[str, Any] = {
        "id": pmcid or f"{source}:{ident}",
        "type": "article" if preprint else "article-journal",
        "title": without_final_period(result.get("title")),
        "author": [n.to_csl() for n in _authors(result)] or None,
        "container-title": (publisher if preprint else journal.get("title")) or None,
        "container-title-short": journal.get("isoabbreviation") or None,
        "volume": journal_info.get("volume"),
        "issue": journal_info.get("issue"),
        "page": result.get("pageInfo"),
        "DOI": normalize_doi(result.get("doi")),
        "PMID": result.get("pmid"),
        "PMCID": pmcid,
        "abstract": _plain_abstract(result.get("abstractText")),
    }
    year = str(result.get("pubYear") or "")
    if year.isdigit():
        csl["issued"] = {"date-parts": [[int(year)]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    return RegistryRecord(registry="europepmc", identifier=csl["id"], item=item)


class EuropePmcClient:
    name = "europepmc"

    def __init__(self, http: RegistryHttp, *, batch_size: int = 100) -> None:
        self._http = http
        self.batch_size = batch_size

    def _search(self, query: str, rows: int) -> tuple[list[dict[str, Any]], int]:
        params: dict[str, str | int] = {
            "query": query,
            "format": "json",
            "resultType": "core",
            "pageSize": rows,
        }
        reply = self._http.get("/search", _results, params=params)
        return reply.value or [], reply.attempts

    def fetch_pmcids(self, pmcids: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct PMCID ("PMC123"): a record, not held, or an error."""
        wanted = (p for p in map(normalize_pmcid, pmcids) if p)
        return in_batches(wanted, self.batch_size, self._fetch_batch)

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        query = " OR ".join(f"PMCID:{pmcid}" for pmcid in batch)
        try:
            results, attempts = self._search(query, len(batch))
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return failed(batch, exc)
        lookups = {p: Lookup(identifier=p, attempts=attempts) for p in batch}
        for record in records(results, europepmc_result_to_csl):
            if record.identifier in lookups:
                lookups[record.identifier].record = record
        return lookups

    def search(self, title: str, rows: int = 5) -> list[RegistryRecord]:
        """Europe PMC's best matches for a title (journals and preprints), best first."""
        results, _ = self._search(f'TITLE:"{title_query(title)}"', rows)
        return records(results, europepmc_result_to_csl)
