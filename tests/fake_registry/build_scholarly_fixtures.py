"""Regenerate the DBLP, arXiv, Semantic Scholar, OpenAlex and Europe PMC fixtures of the fake
registry, and the 9 ICLR-2026 bibliographies, from the recorded answers in ../shared/data.

Run from the repo root: `uv run python -m tests.fake_registry.build_scholarly_fixtures`.
Deterministic (sorted, gzip mtime 0). See tests/fixtures/registry/README.md for what each holds.
"""

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from tests.fake_registry.build_fixtures import write_jsonl_gz

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "registries"
OUT = REPO / "tests" / "fixtures" / "registry"
ICLR_OUT = REPO / "tests" / "fixtures" / "reflists" / "iclr2026"

_ENTRY = re.compile(r"<entry>.*?</entry>", re.DOTALL)
_ARXIV_ID = re.compile(r"<id>https?://arxiv\.org/abs/([^<]+?)(v\d+)?</id>")
_ARXIV_URL = re.compile(r"arxiv\.org/abs/(\d{4}\.\d{4,5})")
# What a work answer needs to be checked against a citation; the rest (abstracts, reference
# lists, affiliations, open-access details) is most of the bytes and is left out, as `select=`
# and `fields=` would leave it out of a real answer.
S2_KEYS = ("paperId", "externalIds", "title", "authors", "year", "venue", "journal", "url")
OPENALEX_KEYS = ("id", "doi", "display_name", "title", "publication_year", "type", "ids", "biblio")
EUROPEPMC_DROPPED = (
    "abstractText",
    "affiliation",
    "meshHeadingList",
    "fullTextUrlList",
    "keywordList",
    "chemicalList",
    "grantsList",
    "commentCorrectionList",
)


def _json_files(folder: Path) -> list[Any]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def dblp_hits() -> list[dict[str, Any]]:
    hits: dict[str, dict[str, Any]] = {}
    for answer in _json_files(SHARED / "refchecker" / "api_cache" / "dblp"):
        for hit in answer if isinstance(answer, list) else []:
            hits[hit["info"]["key"]] = {k: v for k, v in hit.items() if k != "@score"}
    return [hits[key] for key in sorted(hits)]


def s2_papers() -> list[dict[str, Any]]:
    papers: dict[str, dict[str, Any]] = {}
    for answer in _json_files(SHARED / "refchecker" / "api_cache" / "semantic_scholar"):
        found = answer if isinstance(answer, list) else [answer, *(answer.get("data") or [])]
        for paper in found:
            if isinstance(paper, dict) and paper.get("paperId"):
                kept = {k: paper[k] for k in S2_KEYS if k in paper}
                if len(kept) >= len(papers.get(paper["paperId"], {})):
                    papers[paper["paperId"]] = kept
    return [papers[key] for key in sorted(papers)]


def openalex_works() -> list[dict[str, Any]]:
    works: dict[str, dict[str, Any]] = {}
    for answer in _json_files(SHARED / "refchecker" / "api_cache" / "openalex"):
        for work in answer if isinstance(answer, list) else [answer]:
            if not isinstance(work, dict) or not work.get("id"):
                continue
            kept = {k: work[k] for k in OPENALEX_KEYS if k in work}
            kept["authorships"] = [
                {
                    "author_position": a.get("author_position"),
                    "author": {"display_name": (a.get("author") or {}).get("display_name")},
                    "raw_author_name": a.get("raw_author_name"),
                }
                for a in work.get("authorships") or []
            ]
            source = (work.get("primary_location") or {}).get("source") or {}
            kept["primary_location"] = {
                "source": {k: source[k] for k in ("id", "display_name", "type") if k in source}
                or None
            }
            works[work["id"]] = kept
    return [works[key] for key in sorted(works)]


def _atom_entry(arxiv_id: str, title: str, authors: list[str], year: int) -> str:
    names = "".join(
        f"\n    <author>\n      <name>{escape(name)}</name>\n    </author>" for name in authors
    )
    return (
        f"<entry>\n    <id>http://arxiv.org/abs/{arxiv_id}v1</id>\n"
        f"    <title>{escape(title)}</title>\n"
        f"    <published>{year}-01-01T00:00:00Z</published>\n"
        f'    <link href="https://arxiv.org/abs/{arxiv_id}v1" rel="alternate" '
        f'type="text/html"/>{names}\n  </entry>'
    )


def _recorded_preprints(papers: list[dict[str, Any]]) -> Iterator[tuple[str, str, list[str], int]]:
    """(arXiv id, title, authors, year) of the preprints other registries' recorded answers
    describe: Semantic Scholar papers with an ArXiv id, DBLP's CoRR records (arXiv DOIs) and
    OpenAlex works with an arXiv location."""
    for paper in papers:
        arxiv_id = (paper.get("externalIds") or {}).get("ArXiv")
        if arxiv_id and paper.get("title"):
            names = [a["name"] for a in paper.get("authors") or [] if a.get("name")]
            yield arxiv_id, paper["title"], names, paper.get("year") or 2000
    for hit in dblp_hits():
        info = hit["info"]
        doi = str(info.get("doi") or "").lower()
        if doi.startswith("10.48550/arxiv.") and str(info.get("year", "")).isdigit():
            authors = (info.get("authors") or {}).get("author") or []
            authors = authors if isinstance(authors, list) else [authors]
            names = [re.sub(r"\s+\d{4}$", "", a.get("text", "")) for a in authors]
            title = str(info.get("title") or "").removesuffix(".")
            yield doi.removeprefix("10.48550/arxiv."), title, names, int(info["year"])
    for answer in _json_files(SHARED / "refchecker" / "api_cache" / "openalex"):
        for work in answer if isinstance(answer, list) else [answer]:
            if not isinstance(work, dict) or not work.get("display_name"):
                continue
            for location in work.get("locations") or []:
                if m := _ARXIV_URL.search(str(location.get("landing_page_url") or "")):
                    names = [
                        (a.get("author") or {}).get("display_name") or ""
                        for a in work.get("authorships") or []
                    ]
                    yield m.group(1), work["display_name"], names, work.get("publication_year")
                    break


def arxiv_entries(papers: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Recorded Atom entries (arxiv.py's golden files), then DERIVED entries for the preprints
    that the other registries' recorded answers describe (no arXiv answer was recorded for the
    ICLR references): title, authors and year as the first of them gives them."""
    entries: dict[str, str] = {}
    for answer in _json_files(SHARED / "arxiv"):
        if answer["status_code"] != 200:
            continue
        for text in _ENTRY.findall(answer["body"]):
            if m := _ARXIV_ID.search(text):
                entries.setdefault(m.group(1), text)
    for arxiv_id, title, authors, year in _recorded_preprints(papers):
        if arxiv_id not in entries and title:
            entries[arxiv_id] = _atom_entry(arxiv_id, title, authors, year or 2000)
    return [{"id": key, "xml": entries[key]} for key in sorted(entries)]


def europepmc_results() -> list[dict[str, Any]]:
    body = json.loads((SHARED / "europepmc" / "search_cancer_core.json").read_text())
    results = []
    for result in body["resultList"]["result"]:
        results.append({k: v for k, v in result.items() if k not in EUROPEPMC_DROPPED})
    return sorted(results, key=lambda r: r["id"])


def iclr_crossref_works() -> list[dict[str, Any]]:
    """RefChecker's Crossref answers (partial records, recorded with `select=`)."""
    works: dict[str, dict[str, Any]] = {}
    for answer in _json_files(SHARED / "refchecker" / "api_cache" / "crossref"):
        for work in answer if isinstance(answer, list) else [answer]:
            if isinstance(work, dict) and work.get("DOI"):
                works[work["DOI"].lower()] = {k: v for k, v in work.items() if k != "link"}
    return [works[key] for key in sorted(works)]


def _name(text: str) -> dict[str, str]:
    """ "Phillip Y. Lee" -> given "Phillip Y.", family "Lee"; one word stays a literal name."""
    *given, family = text.split()
    return {"given": " ".join(given), "family": family} if given else {"literal": family}


def iclr_bibliography(references: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RefChecker's extracted references as CSL-JSON: title, authors, year, venue, DOI, URL."""
    items = []
    for n, ref in enumerate(references, start=1):
        authors = [
            a for a in ref.get("authors") or [] if a and a.lower() not in ("et al", "others")
        ]
        item: dict[str, Any] = {
            "id": f"ref{n}",
            "type": "article" if ref.get("type") == "arxiv" else "paper-conference",
            "title": ref.get("title") or None,
            "author": [_name(a) for a in authors] or None,
            "container-title": ref.get("venue") or None,
            "DOI": ref.get("doi") or None,
            "URL": ref.get("url") or None,
        }
        if ref.get("year"):
            item["issued"] = {"date-parts": [[int(ref["year"])]]}
        items.append({k: v for k, v in item.items() if v is not None})
    return items


def main() -> int:
    if not SHARED.exists():
        print(f"{SHARED} not found: nothing to build")
        return 1
    papers = s2_papers()
    write_jsonl_gz(OUT / "dblp_hits.jsonl.gz", dblp_hits())
    write_jsonl_gz(OUT / "s2_papers.jsonl.gz", papers)
    write_jsonl_gz(OUT / "openalex_works.jsonl.gz", openalex_works())
    write_jsonl_gz(OUT / "arxiv_entries.jsonl.gz", arxiv_entries(papers))
    write_jsonl_gz(OUT / "europepmc_results.jsonl.gz", europepmc_results())
    write_jsonl_gz(OUT / "iclr_crossref_works.jsonl.gz", iclr_crossref_works())
    ICLR_OUT.mkdir(parents=True, exist_ok=True)
    for path in sorted((SHARED / "refchecker" / "bibliographies").glob("*.json")):
        items = iclr_bibliography(json.loads(path.read_text()))
        (ICLR_OUT / path.name).write_text(json.dumps(items, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
