"""arXiv API: ids in batches (`id_list`) and title search, Atom XML parsed without entities.

`GET {base}/api/query?id_list=A,B&max_results=N` answers one `<entry>` per id it holds (none for
an id it does not); a malformed id makes the whole request a 400 whose single entry is an error,
so a refused batch is retried id by id. Records are keyed by the id without version; the
published date is the first version's, which is the year citers of the preprint give. A paper
whose comment says it was withdrawn carries a retraction notice (`withdrawal`)."""

import re
from collections.abc import Sequence
from typing import Any
from xml.etree.ElementTree import Element

import httpx

from models.audit import Lookup, Notice, RegistryRecord
from models.csl import CSLItem
from tasks.identifiers import normalize_arxiv, normalize_doi
from tasks.registries.batches import failed, in_batches, records
from tasks.registries.fields import people, title_query
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    xml_body,
)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
# A paper its authors withdrew says so in its comments ("This paper has been withdrawn by ...").
WITHDRAWN = re.compile(r"\bwithdrawn\b", re.IGNORECASE)


def withdrawal(arxiv_id: str, when: str | None) -> Notice:
    """The notice a withdrawn paper carries: a retraction, as Crossref's `withdrawal` is one, so
    the row, the report and `--fail-on retracted` flag it."""
    return Notice(
        kind="retraction",
        url=f"https://arxiv.org/abs/{arxiv_id}",
        date=when,
        source="arxiv",
        reason="withdrawn by its authors on arXiv",
    )


def _entries(response: httpx.Response) -> list[Element]:
    root = xml_body(response)
    if root.tag != f"{ATOM}feed":
        raise InvalidResponse(f"arXiv answered <{root.tag}>, not an Atom feed")
    entries = root.findall(f"{ATOM}entry")
    if any("/api/errors" in (e.findtext(f"{ATOM}id") or "") for e in entries):
        raise InvalidResponse("arXiv answered with an error entry")
    return entries


def _text(entry: Element, tag: str) -> str | None:
    value = entry.findtext(tag)
    return " ".join(value.split()) if value and value.strip() else None


def arxiv_entry_to_csl(entry: Element) -> RegistryRecord:
    """One Atom `<entry>` -> a preprint record keyed by its arXiv id (no version)."""
    arxiv_id = normalize_arxiv(entry.findtext(f"{ATOM}id"))
    if not arxiv_id:
        raise ValueError("arXiv entry without an arXiv id")
    names = [n for a in entry.findall(f"{ATOM}author") if (n := _text(a, f"{ATOM}name"))]
    published = (entry.findtext(f"{ATOM}published") or "")[:4]
    csl: dict[str, Any] = {
        "id": arxiv_id,
        "type": "article",
        "title": _text(entry, f"{ATOM}title"),
        "author": [n.to_csl() for n in people(names) or []] or None,
        "container-title": "arXiv",
        "DOI": f"10.48550/arXiv.{arxiv_id}",
        "URL": f"https://arxiv.org/abs/{arxiv_id}",
        "note": _text(entry, f"{ARXIV}journal_ref"),
        "abstract": _text(entry, f"{ATOM}summary"),
    }
    if published.isdigit():
        csl["issued"] = {"date-parts": [[int(published)]]}
    item = CSLItem.from_csl({k: v for k, v in csl.items() if v is not None})
    relations = {}
    if doi := normalize_doi(entry.findtext(f"{ARXIV}doi")):
        relations["is-preprint-of"] = [doi]
    record = RegistryRecord(registry="arxiv", identifier=arxiv_id, item=item, relations=relations)
    if WITHDRAWN.search(entry.findtext(f"{ARXIV}comment") or ""):
        record.add_notice(
            withdrawal(arxiv_id, (entry.findtext(f"{ATOM}updated") or "")[:10] or None)
        )
    return record


class ArxivClient:
    name = "arxiv"

    def __init__(self, http: RegistryHttp, *, batch_size: int = 100) -> None:
        self._http = http
        self.batch_size = batch_size

    def fetch_ids(self, ids: Sequence[str]) -> dict[str, Lookup]:
        """One Lookup per distinct arXiv id (normalised, no version)."""
        wanted = (i for i in map(normalize_arxiv, ids) if i)
        return in_batches(wanted, self.batch_size, self._fetch_batch)

    def _fetch_batch(self, batch: list[str]) -> dict[str, Lookup]:
        params: dict[str, str | int] = {"id_list": ",".join(batch), "max_results": len(batch)}
        try:
            reply = self._http.get("/api/query", _entries, params=params)
        except RegistryUnavailable as exc:
            return failed(batch, exc)
        except RegistryRequestError as exc:
            if len(batch) > 1:  # one odd id sinks the batch: ask for each on its own
                return {i: self._fetch_batch([i])[i] for i in batch}
            if exc.status == 400:  # arXiv refuses the id itself: it names no arXiv paper
                return {batch[0]: Lookup(identifier=batch[0], attempts=1)}
            return {batch[0]: Lookup(identifier=batch[0], error=str(exc), attempts=1)}
        lookups = {i: Lookup(identifier=i, attempts=reply.attempts) for i in batch}
        for record in records(reply.value or [], arxiv_entry_to_csl):
            if record.identifier in lookups:
                lookups[record.identifier].record = record
        return lookups

    def search(self, title: str, rows: int = 5) -> list[RegistryRecord]:
        """arXiv's best matches for a title, best first."""
        params: dict[str, str | int] = {
            "search_query": f'ti:"{title_query(title)}"',
            "max_results": rows,
        }
        entries = self._http.get("/api/query", _entries, params=params).value or []
        return records(entries, arxiv_entry_to_csl)
