"""Real citations for the reliability tests and throughput benchmarks, built from the fake
registry's bundled records (tests/fixtures/registry/): references that claim what the record
says, bare identifiers, fabricated ones, and synthetic copies of real works under new DOIs."""

import copy
import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

from models.audit import Identifiers, Provenance, Reference
from models.csl import CSLItem
from tasks.registries.crossref_map import crossref_work_to_csl

REGISTRY_FIXTURES = Path(__file__).parent / "fixtures" / "registry"
# Crossref's test prefix: never a real work.
SYNTHETIC_PREFIX = "10.5555/citeaudit.synthetic."
FABRICATED_PREFIX = "10.5555/citeaudit.fabricated."
FABRICATED_PMID_BASE = 98_000_000


def _jsonl_gz(name: str) -> list[dict[str, Any]]:
    with gzip.open(REGISTRY_FIXTURES / name, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@cache
def bundled_works() -> tuple[dict[str, Any], ...]:
    """The fake's real Crossref work records (only those with a title, so claims can agree)."""
    return tuple(w for w in _jsonl_gz("crossref_works.jsonl.gz") if w.get("title"))


@cache
def bundled_pmids() -> tuple[str, ...]:
    return tuple(row["pmid"] for row in _jsonl_gz("pubmed_articles.jsonl.gz"))


def synthetic_works(count: int) -> list[dict[str, Any]]:
    """`count` works copied from the bundled ones under new DOIs in the test prefix (for
    `FakeRegistry.add_crossref_work`): real metadata, distinct identifiers."""
    works = bundled_works()
    out = []
    for n in range(count):
        work = copy.deepcopy(works[n % len(works)])
        work["DOI"] = f"{SYNTHETIC_PREFIX}{n}"
        work["URL"] = f"https://doi.org/{work['DOI']}"
        out.append(work)
    return out


def reference(key: str, item: CSLItem, ids: Identifiers, source: str = "refs.bib") -> Reference:
    return Reference(
        citation_id=key,
        item=item,
        provenance=Provenance(source_file=source, entry_key=key),
        ids=ids,
    )


def claiming_reference(work: dict[str, Any], key: str) -> Reference:
    """A reference that claims exactly what the registry record says, with its DOI."""
    record = crossref_work_to_csl(work)
    item = record.item.model_copy(update={"id": key})
    return reference(key, item, Identifiers(doi=record.identifier))


def bare_id_reference(key: str, *, doi: str | None = None, pmid: str | None = None) -> Reference:
    item = CSLItem.model_validate({"id": key, "DOI": doi, "PMID": pmid})
    return reference(key, item, Identifiers(doi=doi, pmid=pmid))


def mixed_references(n_dois: int, n_pmids: int, n_fabricated: int) -> list[Reference]:
    """Real DOIs with their claimed metadata (some with a wrong title, to get mismatches), bare
    real PMIDs, and fabricated DOIs and PMIDs, interleaved."""
    refs: list[Reference] = []
    for n, work in enumerate(bundled_works()[:n_dois]):
        ref = claiming_reference(work, f"doi-{n}")
        if n % 10 == 9:  # a different paper's title: mismatch
            other = crossref_work_to_csl(bundled_works()[n - 1]).item.title
            ref = ref.model_copy(update={"item": ref.item.model_copy(update={"title": other})})
        refs.append(ref)
    refs += [bare_id_reference(f"pmid-{p}", pmid=p) for p in bundled_pmids()[:n_pmids]]
    for n in range(n_fabricated):
        refs.append(bare_id_reference(f"fab-doi-{n}", doi=f"{FABRICATED_PREFIX}{n}"))
        refs.append(bare_id_reference(f"fab-pmid-{n}", pmid=str(FABRICATED_PMID_BASE + n)))
    return refs


def write_doi_list(path: Path, dois: list[str]) -> Path:
    """A plain-text input: one DOI per line (the plaintext reader's format)."""
    path.write_text("".join(f"doi:{d}\n" for d in dois), encoding="utf-8")
    return path
