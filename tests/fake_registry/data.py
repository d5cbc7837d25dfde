"""What the fake registry knows: Crossref works, DataCite CSL records, DOI agencies, PubMed
articles, and the real error bodies. Loaded from tests/fixtures/registry/ or built up by hand."""

import gzip
import json
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from defusedxml import ElementTree as SafeET

from tests.fake_registry.ranking import Ranker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "registry"

CROSSREF_AGENCY = {"id": "crossref", "label": "Crossref"}
DATACITE_AGENCY = {"id": "datacite", "label": "DataCite"}


@dataclass(frozen=True)
class PubmedArticle:
    """One stored `<PubmedArticle>` element and the fields esearch ranks on."""

    pmid: str
    xml: str
    title: str
    authors: tuple[str, ...]
    journal: str
    year: str
    doi: str | None

    @classmethod
    def from_xml(cls, xml_text: str) -> "PubmedArticle":
        root = SafeET.fromstring(xml_text)
        if root.tag != "PubmedArticle":
            raise ValueError(f"expected a <PubmedArticle> element, got <{root.tag}>")
        pmid = root.findtext("MedlineCitation/PMID")
        if not pmid:
            raise ValueError("<PubmedArticle> without MedlineCitation/PMID")
        article = root.find("MedlineCitation/Article")
        title_element = article.find("ArticleTitle") if article is not None else None
        title = "".join(title_element.itertext()) if title_element is not None else ""
        authors = tuple(name.text or "" for name in root.iterfind(".//AuthorList/Author/LastName"))
        year = (
            root.findtext(".//JournalIssue/PubDate/Year")
            or (root.findtext(".//JournalIssue/PubDate/MedlineDate") or "")[:4]
        )
        doi = next(
            (
                (element.text or "").lower()
                for element in root.iterfind("PubmedData/ArticleIdList/ArticleId")
                if element.get("IdType") == "doi"
            ),
            None,
        )
        return cls(
            pmid=pmid.strip(),
            xml=xml_text,
            title=title,
            authors=authors,
            journal=root.findtext(".//Journal/Title") or "",
            year=year,
            doi=doi,
        )

    def search_text(self) -> str:
        return " ".join([self.title, *self.authors, self.year, self.journal])


@dataclass(frozen=True)
class _Bundle:
    crossref: dict[str, dict[str, Any]]
    datacite: dict[str, dict[str, Any]]
    agencies: dict[str, dict[str, str]]
    pubmed: dict[str, PubmedArticle]
    synthetic_crossref: dict[str, dict[str, Any]]
    synthetic_pubmed: dict[str, PubmedArticle]


def _read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@cache
def _bundle() -> _Bundle:
    # Parsed once per process; registries copy the dicts shallowly and never mutate records.
    synthetic = json.loads((FIXTURES / "synthetic_retractions.json").read_text())
    pubmed = [
        PubmedArticle.from_xml(row["xml"])
        for row in _read_jsonl_gz(FIXTURES / "pubmed_articles.jsonl.gz")
    ]
    synthetic_pubmed = [PubmedArticle.from_xml(xml) for xml in synthetic["pubmed_articles"]]
    return _Bundle(
        crossref={
            w["DOI"].lower(): w for w in _read_jsonl_gz(FIXTURES / "crossref_works.jsonl.gz")
        },
        datacite={
            doi.lower(): csl
            for doi, csl in json.loads((FIXTURES / "datacite_csl.json").read_text()).items()
        },
        agencies=json.loads((FIXTURES / "crossref_agencies.json").read_text()),
        pubmed={a.pmid: a for a in pubmed},
        synthetic_crossref={w["DOI"].lower(): w for w in synthetic["crossref_works"]},
        synthetic_pubmed={a.pmid: a for a in synthetic_pubmed},
    )


@cache
def error_body(name: str) -> bytes:
    """A real recorded error body from the fixtures, e.g. `crossref_not_found.txt`."""
    return (FIXTURES / name).read_bytes()


def crossref_search_text(work: dict[str, Any]) -> str:
    """Title, author family names, year and container: what query.bibliographic ranks on."""
    parts: list[str] = [*work.get("title", []), *work.get("subtitle", [])]
    parts += [a.get("family") or a.get("name") or "" for a in work.get("author", [])]
    date_parts = (work.get("issued") or {}).get("date-parts") or [[None]]
    if date_parts[0] and date_parts[0][0]:
        parts.append(str(date_parts[0][0]))
    parts += work.get("container-title", [])
    return " ".join(str(part) for part in parts if part)


class RegistryData:
    """The records one fake registry serves. Thread-safe: records may be added while serving."""

    def __init__(self, *, bundled: bool = True, synthetic: bool = True) -> None:
        self._lock = threading.Lock()
        self.crossref: dict[str, dict[str, Any]] = {}
        self.datacite: dict[str, dict[str, Any]] = {}
        self.agencies: dict[str, dict[str, str]] = {}
        self.pubmed: dict[str, PubmedArticle] = {}
        if bundled:
            bundle = _bundle()
            self.crossref.update(bundle.crossref)
            self.datacite.update(bundle.datacite)
            self.agencies.update(bundle.agencies)
            self.pubmed.update(bundle.pubmed)
            if synthetic:
                self.crossref.update(bundle.synthetic_crossref)
                self.pubmed.update(bundle.synthetic_pubmed)
        self._crossref_ranker: Ranker | None = None
        self._pubmed_ranker: Ranker | None = None

    def add_crossref_work(self, work: dict[str, Any]) -> None:
        """Add a work record (the `message` of a `/works/{doi}` answer; needs `DOI`)."""
        with self._lock:
            self.crossref[work["DOI"].lower()] = work
            self._crossref_ranker = None

    def add_datacite_record(self, doi: str, csl: dict[str, Any]) -> None:
        """Add a DataCite DOI whose content negotiation answers with this CSL-JSON."""
        with self._lock:
            self.datacite[doi.lower()] = {**csl, "DOI": csl.get("DOI", doi)}

    def add_pubmed_article(self, xml_text: str) -> str:
        """Add one `<PubmedArticle>...</PubmedArticle>` element; returns its PMID."""
        article = PubmedArticle.from_xml(xml_text)
        with self._lock:
            self.pubmed[article.pmid] = article
            self._pubmed_ranker = None
        return article.pmid

    def agency_of(self, doi: str) -> dict[str, str] | None:
        key = doi.lower()
        if key in self.crossref:
            return CROSSREF_AGENCY
        if key in self.datacite:
            return DATACITE_AGENCY
        return self.agencies.get(key)

    def crossref_ranker(self) -> Ranker:
        with self._lock:
            if self._crossref_ranker is None:
                self._crossref_ranker = Ranker(
                    {doi: crossref_search_text(work) for doi, work in self.crossref.items()}
                )
            return self._crossref_ranker

    def pubmed_ranker(self) -> Ranker:
        with self._lock:
            if self._pubmed_ranker is None:
                self._pubmed_ranker = Ranker(
                    {pmid: article.search_text() for pmid, article in self.pubmed.items()}
                )
            return self._pubmed_ranker
