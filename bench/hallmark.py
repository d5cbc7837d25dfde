"""HALLMARK benchmark: how well citeaudit flags hallucinated citations.

    uv run python -m bench.hallmark [--show-errors]

A fake registry (tests/fake_registry, started empty) learns the VALID entries of the HALLMARK dev
split as Crossref works: title, authors, venue, year, and the entry's DOI; an entry without DOI is
registered under its arXiv DOI if it names an arXiv id, else under a generated test DOI
(10.5555/hallmark.KEY) that the citing side never sees. Then every entry, valid or hallucinated, is
read as BibTeX from its `fields` and audited by `lookup_references` over real HTTP.

Flagged = mismatch, not_found or unmatched. Printed: precision, recall, F1 and false-positive
rate of flagging HALLUCINATED entries, recall per hallucination type, and status counts.
"""

import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from models.audit import Reference, Status, ValidationResult
from models.csl import CSLItem, named
from tasks.identifiers import identifiers_of
from tasks.lookup import lookup_references
from tasks.read.bibtex import read_bibtex
from tasks.registries import Registries
from tests.fake_registry import FakeRegistry

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hallucination"
SPLIT = DATA / "hallmark_dev_public.jsonl"
FLAGGED = frozenset({Status.MISMATCH, Status.NOT_FOUND, Status.UNMATCHED})
CHUNK = 50


def load_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def as_bibtex(entries: list[dict[str, Any]]) -> str:
    """The entries' fields as one BibTeX file, keyed by their HALLMARK keys."""
    blocks = []
    for entry in entries:
        fields = ",\n".join(
            f"  {name} = {{{balanced(value)}}}" for name, value in entry["fields"].items()
        )
        blocks.append(f"@{entry['bibtex_type']}{{{entry['bibtex_key']},\n{fields}\n}}")
    return "\n\n".join(blocks) + "\n"


def balanced(value: str) -> str:
    """Some HALLMARK values are cut off inside LaTeX (`Sch{\\"o`): close what was left open, drop
    stray closers, so one entry cannot swallow the next."""
    depth, kept = 0, []
    for char in value:
        if char == "}" and depth == 0:
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        kept.append(char)
    return "".join(kept) + "}" * depth


def crossref_work(item: CSLItem, doi: str, bibtex_type: str) -> dict[str, Any]:
    """A Crossref `/works` message for what the registry knows of a valid entry."""
    work: dict[str, Any] = {
        "DOI": doi,
        "type": "journal-article" if bibtex_type == "article" else "proceedings-article",
        "title": [item.title] if item.title else [],
        "author": [
            {"given": n.given, "family": n.family} if n.family else {"name": n.literal}
            for n in named(item.author)
        ],
    }
    if item.container_title:
        work["container-title"] = [item.container_title]
    if (year := item.year()) is not None:
        work["issued"] = {"date-parts": [[year]]}
    return work


def registry_doi(ref: Reference) -> str:
    """The DOI the registry knows the work by (see the module docstring)."""
    ids = identifiers_of(ref.item, ref.raw)
    if ids.doi:
        return ids.doi
    if ids.arxiv:
        return f"10.48550/arxiv.{ids.arxiv}"
    return f"10.5555/hallmark.{ref.provenance.entry_key.lower()}"


def registry_works(
    refs: list[Reference], entries: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """One work per DOI from the VALID entries; where two valid entries share a DOI (a full and an
    "and others" author list), the registry holds the fuller one, as a real registry would."""
    works: dict[str, dict[str, Any]] = {}
    for ref in refs:
        entry = entries[ref.provenance.entry_key]
        if entry["label"] != "VALID":
            continue
        work = crossref_work(ref.item, registry_doi(ref), entry["bibtex_type"])
        known = works.get(work["DOI"])
        if known is None or len(work["author"]) > len(known["author"]):
            works[work["DOI"]] = work
    return list(works.values())


def read_references(entries: list[dict[str, Any]]) -> list[Reference]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hallmark.bib"
        path.write_text(as_bibtex(entries), encoding="utf-8")
        result = read_bibtex([path])
    if result.errors:
        print(f"{len(result.errors)} entries could not be read, e.g. {result.errors[0].reason}")
    for ref in result.references:
        ref.citation_id = ref.provenance.entry_key
    return result.references


def audit(refs: list[Reference], registry: FakeRegistry) -> dict[str, ValidationResult]:
    settings = registry.settings(
        crossref_max_rate=1000.0,
        crossref_max_in_flight=8,
        pubmed_max_rate=1000.0,
        doi_max_rate=1000.0,
    )
    results: dict[str, ValidationResult] = {}
    with Registries.from_settings(settings) as registries:
        for start in range(0, len(refs), CHUNK):
            chunk = refs[start : start + CHUNK]
            for result in lookup_references(chunk, registries):
                results[result.citation_id] = result
    return results


def report(entries: list[dict[str, Any]], results: dict[str, ValidationResult], show: bool) -> None:
    counts: Counter[tuple[str, str]] = Counter()
    by_type: dict[str, list[bool]] = defaultdict(list)
    tp = fp = fn = tn = 0
    for entry in entries:
        result = results[entry["bibtex_key"]]
        flagged = result.status in FLAGGED
        hallucinated = entry["label"] == "HALLUCINATED"
        counts[(entry["label"], result.status.value)] += 1
        if hallucinated:
            by_type[entry.get("hallucination_type") or "unknown"].append(flagged)
            tp, fn = tp + flagged, fn + (not flagged)
        else:
            fp, tn = fp + flagged, tn + (not flagged)
        if show and flagged != hallucinated:
            kind = entry.get("hallucination_type") or "VALID"
            print(f"[{kind}] {result.status.value}: {result.reason}\n    {entry['fields']}")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    fpr = fp / (fp + tn) if fp + tn else 0.0
    print(f"HALLMARK dev_public: {len(entries)} entries ({tp + fn} hallucinated, {fp + tn} valid)")
    print(f"precision {precision:.3f}  recall {recall:.3f}  F1 {f1:.3f}  FPR {fpr:.3f}")
    print(f"TP {tp}  FP {fp}  FN {fn}  TN {tn}\n")
    print(f"{'hallucination type':<26}{'n':>5}{'recall':>9}")
    for kind, flags in sorted(by_type.items(), key=lambda kv: sum(kv[1]) / len(kv[1])):
        print(f"{kind:<26}{len(flags):>5}{sum(flags) / len(flags):>9.3f}")
    print("\nstatus counts")
    for (label, status), n in sorted(counts.items()):
        print(f"  {label:<13}{status:<11}{n:>5}")


def main(argv: list[str]) -> int:
    if not SPLIT.exists():
        print(f"HALLMARK data not found at {SPLIT}: nothing to benchmark.")
        return 0
    entries = load_entries(SPLIT)
    refs = read_references(entries)
    label = {e["bibtex_key"]: e for e in entries}
    with FakeRegistry.empty(rate_limits=False) as registry:
        # A local server: advertise no meaningful limit, or the clients pace themselves to 5/s.
        registry.set_crossref_limit(10_000, 16)
        registry.set_pubmed_limit(10_000)
        for work in registry_works(refs, label):
            registry.add_crossref_work(work)
        results = audit(refs, registry)
    missing = [e for e in entries if e["bibtex_key"] not in results]
    for entry in missing:  # an entry the reader could not read is not flagged
        results[entry["bibtex_key"]] = ValidationResult.model_validate(
            {"citation_id": entry["bibtex_key"], "status": "unverified", "reason": "unreadable"}
        )
    report(entries, results, show="--show-errors" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
