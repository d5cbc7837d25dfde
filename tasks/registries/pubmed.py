"""NCBI E-utilities client: PMIDs by efetch in batches, and esearch + efetch for free text."""

from collections.abc import Iterator, Sequence
from xml.etree.ElementTree import Element

import httpx

from models.audit import Lookup, RegistryRecord
from tasks.identifiers import normalize_pmid
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    failed_lookup,
    xml_body,
)
from tasks.registries.pubmed_map import pubmed_article_to_csl

__all__ = ["PubMedClient", "pubmed_article_to_csl"]

ARTICLE_TAGS = ("PubmedArticle", "PubmedBookArticle")
# A record PubMed surely holds (a 2001 Nature paper), asked alongside ids an efetch answer left
# out: an esearch answer without it is broken, not evidence that the others do not exist.
CANARY_PMID = "11618220"
# Above this many characters of ids, efetch is sent as a form POST (NCBI's advice for long lists).
_GET_IDS_MAX_CHARS = 1_500


def _articles(response: httpx.Response) -> list[Element]:
    root = xml_body(response)
    if root.tag != "PubmedArticleSet":
        # e.g. <eFetchResult><ERROR>...: NCBI trouble, not an answer about the ids.
        raise InvalidResponse(f"efetch answered <{root.tag}>, not <PubmedArticleSet>")
    return [child for child in root if child.tag in ARTICLE_TAGS]


def _search_ids(response: httpx.Response) -> list[str]:
    root = xml_body(response)
    if root.tag != "eSearchResult" or root.find("IdList") is None:
        raise InvalidResponse(f"esearch answered <{root.tag}> without an <IdList>")
    return [pmid for e in root.findall("IdList/Id") if (pmid := normalize_pmid(e.text))]


def _with_canary(response: httpx.Response) -> list[str]:
    ids = _search_ids(response)
    if CANARY_PMID not in ids:
        raise InvalidResponse(f"esearch left out PMID {CANARY_PMID}, which PubMed surely holds")
    return ids


def _article_pmid(element: Element) -> str | None:
    return normalize_pmid(element.findtext("MedlineCitation/PMID") or element.findtext(".//PMID"))


class PubMedClient:
    def __init__(self, http: RegistryHttp, *, batch_size: int = 200) -> None:
        self._http = http
        self.batch_size = batch_size

    def fetch_pmids(self, pmids: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct PMID: a record, not found (absent from efetch and from
        PubMed's index), or an error."""
        wanted = list(dict.fromkeys(p for p in (normalize_pmid(x) for x in pmids) if p))
        lookups: dict[str, Lookup] = {}
        for batch in self._batches(wanted):
            lookups.update(self._fetch_batch(batch))
        return lookups

    def _batches(self, pmids: list[str]) -> Iterator[list[str]]:
        for start in range(0, len(pmids), self.batch_size):
            yield pmids[start : start + self.batch_size]

    def _efetch(self, pmids: Sequence[str]) -> tuple[list[Element], int]:
        form = {"db": "pubmed", "retmode": "xml", "id": ",".join(pmids)}
        if len(form["id"]) > _GET_IDS_MAX_CHARS:
            reply = self._http.post("/efetch.fcgi", _articles, data=form)
        else:
            reply = self._http.get("/efetch.fcgi", _articles, params=form)
        return reply.value or [], reply.attempts

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        """Records from one efetch; ids it left out are then confirmed absent by esearch (with
        the canary) and, where PubMed does list them, fetched one by one."""
        lookups = self._fetch_articles(batch)
        left_out = [p for p, lookup in lookups.items() if not lookup.record and not lookup.error]
        if not left_out:
            return lookups
        try:
            listed = self._listed(left_out)
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return lookups | {p: failed_lookup(p, exc, lookups[p].attempts) for p in left_out}
        for pmid in left_out:
            if pmid not in listed:
                continue  # PubMed's index confirms: no such record
            again = self._fetch_articles([pmid])[pmid]
            again.attempts += lookups[pmid].attempts
            if not again.record and not again.error:
                again.error = "PubMed lists this PMID but efetch gave no record for it"
            lookups[pmid] = again
        return lookups

    def _fetch_articles(self, pmids: list[str]) -> dict[str, Lookup]:
        try:
            articles, attempts = self._efetch(pmids)
        except (RegistryUnavailable, RegistryRequestError) as exc:
            return {p: failed_lookup(p, exc, 0) for p in pmids}
        lookups = {p: Lookup(identifier=p, attempts=attempts) for p in pmids}
        for element in articles:
            pmid = _article_pmid(element)
            if pmid not in lookups:
                continue
            try:
                lookups[pmid].record = pubmed_article_to_csl(element)
            except ValueError as exc:
                lookups[pmid].error = f"malformed PubMed record: {exc}"
        return lookups

    def _listed(self, pmids: list[str]) -> set[str]:
        """Which of `pmids` PubMed's index holds, by one esearch on their UIDs and the canary's;
        an answer without the canary is broken (RegistryUnavailable)."""
        asked = [*pmids, CANARY_PMID]
        params: dict[str, str | int] = {
            "db": "pubmed",
            "term": " OR ".join(f"{pmid}[uid]" for pmid in asked),
            "retmax": len(asked),
        }
        reply = self._http.get("/esearch.fcgi", _with_canary, params=params)
        return set(reply.value or [])

    def search(self, term: str, retmax: int = 5) -> list[RegistryRecord]:
        """PubMed's best matches for a free-text term, in esearch's order (raises
        RegistryUnavailable when either step fails; the caller decides)."""
        params: dict[str, str | int] = {"db": "pubmed", "term": term, "retmax": retmax}
        ids = self._http.get("/esearch.fcgi", _search_ids, params=params).value or []
        if not ids:
            return []
        articles, _ = self._efetch(ids)
        by_pmid = {_article_pmid(e): e for e in articles}
        records = []
        for pmid in ids:
            element = by_pmid.get(pmid)
            if element is None:
                continue
            try:
                records.append(pubmed_article_to_csl(element))
            except ValueError:
                continue  # a malformed candidate is no candidate
        return records
