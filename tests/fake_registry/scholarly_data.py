"""What the fake DBLP, arXiv, Semantic Scholar, OpenAlex and Europe PMC hold, in each service's
own record form, and how each finds records by title. Loaded from tests/fixtures/registry/
(built by build_scholarly_fixtures.py) or added by hand."""

import re
import threading
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from rapidfuzz import fuzz, process, utils

from tests.fake_registry.data import FIXTURES, _read_jsonl_gz

_ARXIV_ID = re.compile(r"<id>https?://arxiv\.org/abs/([^<]+?)(?:v\d+)?</id>")
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_NAME = re.compile(r"<name>(.*?)</name>", re.DOTALL)


@dataclass(frozen=True)
class _Bundle:
    dblp: dict[str, dict[str, Any]]
    arxiv: dict[str, str]
    s2: dict[str, dict[str, Any]]
    openalex: dict[str, dict[str, Any]]
    europepmc: dict[str, dict[str, Any]]


def _arxiv_id(entry_xml: str) -> str:
    match = _ARXIV_ID.search(entry_xml)
    if not match:
        raise ValueError("an arXiv <entry> needs <id>http://arxiv.org/abs/ID</id>")
    return match.group(1)


@cache
def _bundle() -> _Bundle:
    # Parsed once per process; each registry copies the dicts shallowly, never the records.
    def rows(name: str) -> list[dict[str, Any]]:
        return _read_jsonl_gz(FIXTURES / f"{name}.jsonl.gz")

    return _Bundle(
        dblp={hit["info"]["key"]: hit for hit in rows("dblp_hits")},
        arxiv={_arxiv_id(row["xml"]): row["xml"] for row in rows("arxiv_entries")},
        s2={paper["paperId"]: paper for paper in rows("s2_papers")},
        openalex={work["id"]: work for work in rows("openalex_works")},
        europepmc={f"{r['source']}:{r['id']}": r for r in rows("europepmc_results")},
    )


class TitleIndex:
    """Records' titles (and authors) for fuzzy title search, rebuilt when records change."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._titles: dict[str, str] = {}

    def put(self, key: str, title: str, authors: str = "") -> None:
        self._titles[key] = utils.default_process(title)
        self._texts[key] = utils.default_process(f"{title} {authors}")

    def best(self, title: str, limit: int, min_score: float) -> list[tuple[str, float]]:
        """Keys whose title is most like `title`, best first, at least `min_score` (0-100)."""
        query = utils.default_process(title)
        if not query or limit <= 0:
            return []
        found = process.extract(
            query, self._titles, scorer=fuzz.token_sort_ratio, limit=limit, score_cutoff=min_score
        )
        return [(str(key), float(score)) for _, score, key in found]

    def all_words(self, query: str, limit: int) -> list[str]:
        """Keys whose title or authors hold a word starting with each query word (DBLP's AND
        of prefixes), ranked by title similarity."""
        wanted = utils.default_process(query).split()
        if not wanted:
            return []
        hits = []
        for key, text in self._texts.items():
            present = text.split()
            if all(any(word.startswith(w) for word in present) for w in wanted):
                hits.append((fuzz.token_sort_ratio(" ".join(wanted), self._titles[key]), key))
        return [key for _, key in sorted(hits, key=lambda hit: (-hit[0], hit[1]))[:limit]]


@dataclass
class ScholarlyData:
    """Records per service, keyed as each service keys them."""

    bundled: bool = True
    dblp: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> hit
    arxiv: dict[str, str] = field(default_factory=dict)  # id without version -> <entry> XML
    s2: dict[str, dict[str, Any]] = field(default_factory=dict)  # paperId -> paper
    openalex: dict[str, dict[str, Any]] = field(default_factory=dict)  # W-id URL -> work
    europepmc: dict[str, dict[str, Any]] = field(default_factory=dict)  # SOURCE:id -> result
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _indexes: dict[str, TitleIndex] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.bundled:
            return
        bundle = _bundle()
        self.dblp.update(bundle.dblp)
        self.arxiv.update(bundle.arxiv)
        self.s2.update(bundle.s2)
        self.openalex.update(bundle.openalex)
        self.europepmc.update(bundle.europepmc)

    def add_dblp_hit(self, hit: dict[str, Any]) -> None:
        """A `result.hits.hit[]` element (needs `info.key`)."""
        with self._lock:
            self.dblp[hit["info"]["key"]] = hit
            self._indexes.pop("dblp", None)

    def add_arxiv_entry(self, entry_xml: str) -> str:
        """An Atom `<entry>...</entry>`; returns its arXiv id (without version)."""
        arxiv_id = _arxiv_id(entry_xml)
        with self._lock:
            self.arxiv[arxiv_id] = entry_xml
            self._indexes.pop("arxiv", None)
        return arxiv_id

    def add_s2_paper(self, paper: dict[str, Any]) -> None:
        with self._lock:
            self.s2[paper["paperId"]] = paper
            self._indexes.pop("s2", None)

    def add_openalex_work(self, work: dict[str, Any]) -> None:
        with self._lock:
            self.openalex[work["id"]] = work
            self._indexes.pop("openalex", None)

    def add_europepmc_result(self, result: dict[str, Any]) -> None:
        with self._lock:
            self.europepmc[f"{result['source']}:{result['id']}"] = result
            self._indexes.pop("europepmc", None)

    def index(self, service: str) -> TitleIndex:
        with self._lock:
            if service not in self._indexes:
                self._indexes[service] = self._build(service)
            return self._indexes[service]

    def _build(self, service: str) -> TitleIndex:
        index = TitleIndex()
        if service == "dblp":
            for key, hit in self.dblp.items():
                info = hit["info"]
                authors = (info.get("authors") or {}).get("author") or []
                authors = authors if isinstance(authors, list) else [authors]
                names = " ".join(a.get("text", "") if isinstance(a, dict) else a for a in authors)
                index.put(key, str(info.get("title") or ""), names)
        elif service == "arxiv":
            for key, xml in self.arxiv.items():
                title = _TITLE.search(xml)
                index.put(key, title.group(1) if title else "", " ".join(_NAME.findall(xml)))
        elif service == "s2":
            for key, paper in self.s2.items():
                index.put(key, str(paper.get("title") or ""))
        elif service == "openalex":
            for key, work in self.openalex.items():
                index.put(key, str(work.get("display_name") or work.get("title") or ""))
        elif service == "europepmc":
            for key, result in self.europepmc.items():
                index.put(key, str(result.get("title") or ""))
        return index
