"""HALLMARK benchmark: how well citeaudit flags hallucinated citations.

    uv run python -m bench.hallmark [--show-errors]

Every entry of the HALLMARK dev split, valid or hallucinated, is read as BibTeX from its `fields`
and audited by a `Checker` (tasks/lookup) over real HTTP against the fake registry
(tests/fake_registry), which learns the VALID entries in three set-ups:

verbatim     Crossref and PubMed only (CITEAUDIT_REGISTRIES=crossref,pubmed); Crossref holds
             every valid entry: title, authors, venue, year, under its DOI, else its arXiv DOI,
             else a test DOI 10.5555/hallmark.KEY the citing side never sees. No real registry
             holds every valid entry: this is the ceiling, and the figure of earlier sessions.
realistic    each registry holds what it really holds, in its own form:
             - Crossref: the entries with a registered DOI that is not an arXiv DOI;
             - DBLP: every valid entry at a CS venue (all of them here), titles ending in a
               period, short venues as cited ("NeurIPS", "J. Mach. Learn. Res."), every fifth
               author with a homonym number ("Wei Wang 0001");
             - arXiv: every entry with an arXiv id, and about half of the others (by key hash) as
               preprints under a made-up arXiv id (a third dated a year before the paper);
             - Semantic Scholar and OpenAlex: all but about one in twenty (a different twenty
               each), under full venue names (the venue table's canonical name);
             - the true originals the explanations reveal: a near_miss_title's original title
               (DBLP and Semantic Scholar), a preprint_as_published's paper as an arXiv preprint.
             Run with S2_API_KEY and OPENALEX_API_KEY, without them (OpenAlex is then not
             asked; Semantic Scholar is asked keyless), and asking Crossref and PubMed only,
             as citeaudit did before it knew the others; and keyless with Semantic Scholar
             refusing every request. Client pacing is lifted (a local server).
snapshots    bench/hallmark_snapshots.py: the realistic coverage written as the dumps' files,
             built into local snapshots, asked with no network and with S2 refusing (#30).

Flagged = mismatch, not_found or unmatched. Printed per set-up: precision, recall, F1 and
false-positive rate of flagging HALLUCINATED entries, recall per hallucination type, status
counts, and requests per citation per registry (the fake's own request log), overall and for the
citations without identifier.
"""

import hashlib
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from models.audit import Reference, Status, ValidationResult
from models.csl import CSLItem, named
from tasks.identifiers import identifiers_of
from tasks.lookup.checker import Checker
from tasks.lookup.snapshots import LocalSnapshots
from tasks.match.venues import venue_of
from tasks.read.bibtex import read_bibtex
from tests.fake_registry import FakeRegistry

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hallucination"
SPLIT = DATA / "hallmark_dev_public.jsonl"
FLAGGED = frozenset({Status.MISMATCH, Status.NOT_FOUND, Status.UNMATCHED})
CHUNK = 50
CONFERENCE_PAPER = "Conference and Workshop Papers"
FAST = {
    f"{name}_max_rate": 10_000.0
    for name in ("crossref", "pubmed", "doi", "dblp", "arxiv", "s2", "openalex", "europepmc")
}
KEYS = {"s2_api_key": "bench-s2-key", "openalex_api_key": "bench-openalex-key"}
ONLY_OLD = {"registries": "crossref,pubmed"}
# The fake's service names, as the request log writes them, to registry names.
SERVICES = {
    "crossref": "crossref",
    "doi": "crossref",
    "eutils": "pubmed",
    "dblp": "dblp",
    "arxiv": "arxiv",
    "s2": "semantic_scholar",
    "openalex": "openalex",
    "europepmc": "europepmc",
}


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


# --- what the registries hold -----------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """One real work as the benchmark's registries know it."""

    key: str
    item: CSLItem
    bibtex_type: str
    doi: str | None
    arxiv: str | None


def valid_works(refs: list[Reference], entries: dict[str, dict[str, Any]]) -> list[Work]:
    """One work per valid entry; of two valid entries citing one DOI (a full and an "and others"
    author list) the registries hold the fuller one, as a real registry would."""
    works: dict[str, Work] = {}
    for ref in refs:
        entry = entries[ref.provenance.entry_key]
        if entry["label"] != "VALID":
            continue
        ids = identifiers_of(ref.item, ref.raw)
        work = Work(ref.provenance.entry_key, ref.item, entry["bibtex_type"], ids.doi, ids.arxiv)
        same = work.doi or work.arxiv or work.key
        known = works.get(same)
        if known is None or len(named(work.item.author)) > len(named(known.item.author)):
            works[same] = work
    return list(works.values())


def registry_doi(work: Work) -> str:
    if work.doi:
        return work.doi
    if work.arxiv:
        return f"10.48550/arxiv.{work.arxiv}"
    return f"10.5555/hallmark.{work.key.lower()}"


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


def _bucket(key: str, salt: str, buckets: int) -> int:
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest(), 16) % buckets


def _full_names(item: CSLItem, homonyms: bool = False) -> list[str]:
    names = []
    for n, name in enumerate(named(item.author)):
        text = " ".join(p for p in (name.given, name.family) if p) or name.literal or ""
        names.append(f"{text} 0001" if homonyms and n % 5 == 4 else text)
    return names


def _full_venue(item: CSLItem) -> str | None:
    venue = venue_of(item.container_title)
    return venue.name if venue else item.container_title


def dblp_hit(key: str, item: CSLItem, bibtex_type: str, doi: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "authors": {"author": [{"@pid": "0", "text": n} for n in _full_names(item, True)]},
        "title": f"{item.title}.",
        "venue": item.container_title or "",
        "year": str(item.year() or ""),
        "type": "Journal Articles"
        if bibtex_type == "article"
        else "Conference and Workshop Papers",
        "key": f"bench/{key}",
    }
    if doi:
        info["doi"] = doi.upper()
    return {"info": info, "url": f"URL#{key}"}


def arxiv_entry(arxiv_id: str, item: CSLItem, year: int | None) -> str:
    authors = "".join(f"<author><name>{_xml(n)}</name></author>" for n in _full_names(item))
    return (
        f"<entry><id>http://arxiv.org/abs/{arxiv_id}v2</id><title>{_xml(item.title or '')}"
        f"</title><published>{year or 2000}-03-01T00:00:00Z</published>{authors}</entry>"
    )


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def made_up_arxiv_id(key: str, year: int | None) -> str:
    n = _bucket(key, "arxiv-id", 10**5)
    return f"{(year or 2020) % 100:02d}{n % 12 + 1:02d}.{n:05d}"


def s2_paper(key: str, item: CSLItem, doi: str | None, arxiv: str | None) -> dict[str, Any]:
    external: dict[str, Any] = {"CorpusId": _bucket(key, "corpus", 10**8)}
    if doi:
        external["DOI"] = doi
    if arxiv:
        external["ArXiv"] = arxiv
    return {
        "paperId": hashlib.sha1(key.encode()).hexdigest(),
        "externalIds": external,
        "title": item.title,
        "authors": [{"name": n} for n in _full_names(item)],
        "year": item.year(),
        "venue": _full_venue(item) or "",
        "journal": {"name": _full_venue(item)} if item.container_title else None,
    }


def openalex_work(key: str, item: CSLItem, doi: str | None) -> dict[str, Any]:
    work_id = f"https://openalex.org/W{_bucket(key, 'openalex', 10**10)}"
    return {
        "id": work_id,
        "doi": f"https://doi.org/{doi}" if doi else None,
        "display_name": item.title,
        "title": item.title,
        "publication_year": item.year(),
        "type": "article",
        "authorships": [
            {"author": {"display_name": n}, "raw_author_name": n} for n in _full_names(item)
        ],
        "primary_location": {"source": {"display_name": _full_venue(item)}},
    }


def fill_verbatim(fake: FakeRegistry, works: list[Work]) -> None:
    for work in works:
        fake.add_crossref_work(crossref_work(work.item, registry_doi(work), work.bibtex_type))


def fill_realistic(fake: FakeRegistry, works: list[Work], entries: list[dict[str, Any]]) -> None:
    for work in works:
        item, key = work.item, work.key
        if work.doi and not work.doi.startswith("10.48550/"):
            fake.add_crossref_work(crossref_work(item, work.doi, work.bibtex_type))
        fake.scholarly.add_dblp_hit(dblp_hit(key, item, work.bibtex_type, work.doi))
        year = item.year()
        if work.arxiv:
            fake.scholarly.add_arxiv_entry(arxiv_entry(work.arxiv, item, year))
        elif _bucket(key, "arxiv", 2) == 0:
            earlier = year - 1 if year and _bucket(key, "year", 3) == 0 else year
            fake.scholarly.add_arxiv_entry(arxiv_entry(made_up_arxiv_id(key, year), item, earlier))
        if _bucket(key, "s2", 20):
            fake.scholarly.add_s2_paper(s2_paper(key, item, work.doi, work.arxiv))
        if _bucket(key, "openalex", 20):
            fake.scholarly.add_openalex_work(openalex_work(key, item, work.doi))
    for original in true_originals(entries):
        add_original(fake, original)


def fill_s2_down(fake: FakeRegistry, works: list[Work], entries: list[dict[str, Any]]) -> None:
    """The realistic registries, Semantic Scholar answering every request 503 (as a keyless
    caller may find its shared pool): what it would have decided stays unverified."""
    fill_realistic(fake, works, entries)
    fake.inject_fault("unavailable", rate=1.0, service="s2")


def true_originals(entries: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, fields) of the real works behind hallucinations whose explanation reveals them."""
    for entry in entries:
        kind = entry.get("hallucination_type")
        explanation = entry.get("explanation") or ""
        if kind == "near_miss_title" and "(original: '" in explanation:
            title = explanation.split("(original: '", 1)[1].rsplit("')", 1)[0]
            yield kind, {**entry["fields"], "title": title, "key": entry["bibtex_key"]}
        elif kind == "preprint_as_published":
            yield kind, {**entry["fields"], "key": entry["bibtex_key"]}


def add_original(fake: FakeRegistry, original: tuple[str, dict[str, Any]]) -> None:
    kind, fields = original
    [ref] = read_references(
        [{"bibtex_key": fields["key"], "bibtex_type": "inproceedings", "fields": fields}]
    )
    key = f"original-{fields['key']}"
    if kind == "near_miss_title":
        fake.scholarly.add_dblp_hit(dblp_hit(key, ref.item, "inproceedings", None))
        fake.scholarly.add_s2_paper(s2_paper(key, ref.item, None, None))
    else:  # the paper exists, as a preprint only
        arxiv_id = made_up_arxiv_id(key, ref.item.year())
        fake.scholarly.add_arxiv_entry(arxiv_entry(arxiv_id, ref.item, ref.item.year()))


# --- running and reporting --------------------------------------------------------------------


@contextmanager
def fake_registry() -> Iterator[FakeRegistry]:
    with FakeRegistry.empty(rate_limits=False) as registry:
        # A local server: advertise no meaningful limit, or the clients pace themselves to 5/s.
        registry.set_crossref_limit(10_000, 16)
        registry.set_pubmed_limit(10_000)
        yield registry


def audit(
    refs: list[Reference],
    registry: FakeRegistry,
    *,
    snapshots: LocalSnapshots | None = None,
    **settings: Any,
) -> dict[str, ValidationResult]:
    """The references looked up in the fake's registries (the local `snapshots` first)."""
    options = {"crossref_max_in_flight": 8, **FAST, "s2_api_key": None, "openalex_api_key": None}
    with Checker(registry.settings(**{**options, **settings}), snapshots=snapshots) as checker:
        return look_up(refs, lambda chunk: [c.result for c in checker.check(chunk)])


def look_up(
    refs: list[Reference], lookup: Callable[[list[Reference]], list[ValidationResult]]
) -> dict[str, ValidationResult]:
    """The references looked up a chunk at a time, by citation id."""
    results: dict[str, ValidationResult] = {}
    for start in range(0, len(refs), CHUNK):
        for result in lookup(refs[start : start + CHUNK]):
            results[result.citation_id] = result
    return results


def with_unread(
    entries: list[dict[str, Any]], results: dict[str, ValidationResult]
) -> dict[str, ValidationResult]:
    """An entry the reader could not read is not flagged: unverified."""
    for entry in entries:
        results.setdefault(
            entry["bibtex_key"],
            ValidationResult.model_validate(
                {"citation_id": entry["bibtex_key"], "status": "unverified"}
            ),
        )
    return results


@dataclass(frozen=True)
class Figures:
    precision: float
    recall: float
    f1: float
    fpr: float


def report(
    entries: list[dict[str, Any]], results: dict[str, ValidationResult], show: bool
) -> Figures:
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
    print(f"{len(entries)} entries ({tp + fn} hallucinated, {fp + tn} valid)")
    print(f"precision {precision:.3f}  recall {recall:.3f}  F1 {f1:.3f}  FPR {fpr:.3f}")
    print(f"TP {tp}  FP {fp}  FN {fn}  TN {tn}")
    print(f"goals F1 >= 0.95: {'met' if f1 >= 0.95 else 'MISSED'};", end=" ")
    print(f"FPR <= 0.03: {'met' if fpr <= 0.03 else 'MISSED'}\n")
    print(f"{'hallucination type':<26}{'n':>5}{'recall':>9}")
    for kind, flags in sorted(by_type.items(), key=lambda kv: sum(kv[1]) / len(kv[1])):
        print(f"{kind:<26}{len(flags):>5}{sum(flags) / len(flags):>9.3f}")
    print("\nstatus counts")
    for (label, status), n in sorted(counts.items()):
        print(f"  {label:<13}{status:<11}{n:>5}")
    print_error_classes(entries, results)
    return Figures(precision, recall, f1, fpr)


def print_error_classes(
    entries: list[dict[str, Any]], results: dict[str, ValidationResult], top: int = 10
) -> None:
    """The biggest classes of errors: (entry type, status, who decided), with one reason each."""
    classes: Counter[tuple[str, str, str]] = Counter()
    example: dict[tuple[str, str, str], str] = {}
    for entry in entries:
        result = results[entry["bibtex_key"]]
        if (result.status in FLAGGED) == (entry["label"] == "HALLUCINATED"):
            continue
        kind = entry.get("hallucination_type") or "VALID"
        cls = (kind, result.status.value, result.registry or "-")
        classes[cls] += 1
        example.setdefault(cls, (result.reason or "")[:160])
    if not classes:
        return
    print("\nbiggest error classes (type, status, decided by): count, a reason")
    for cls, n in classes.most_common(top):
        print(f"  {n:>4}  {' / '.join(cls)}\n        {example[cls]}")


def report_requests(
    refs: list[Reference], results: dict[str, ValidationResult], registry: FakeRegistry
) -> float:
    """Requests per citation per registry from the fake's log; and, for the citations without
    identifier, from what each result says it cost. Returns requests per ID-less citation."""
    sent = Counter(SERVICES.get(r.service, r.service) for r in registry.log)
    print(f"\nrequests per citation (all {len(refs)}, the fake's request log):")
    for name, n in sorted(sent.items()):
        print(f"  {name:<17}{n / len(refs):>7.3f}")
    print(f"  {'all registries':<17}{sum(sent.values()) / len(refs):>7.3f}")
    idless = [r for r in refs if not identifiers_of(r.item, r.raw).any()]
    spent: Counter[str] = Counter()
    for ref in idless:
        spent.update(results[ref.citation_id].requests)
    total = sum(spent.values()) / len(idless) if idless else 0.0
    print(f"requests per citation without identifier ({len(idless)}):")
    for name, n in sorted(spent.items()):
        print(f"  {name:<17}{n / len(idless):>7.3f}")
    goal = "met" if total <= 3 else "MISSED"
    print(f"  {'all registries':<17}{total:>7.3f}   goal <= 3: {goal}")
    decided = Counter(r.registry or "-" for r in results.values())
    print("decided by: " + ", ".join(f"{k} {v}" for k, v in decided.most_common()))
    return total


def run(
    title: str,
    entries: list[dict[str, Any]],
    refs: list[Reference],
    fill: Any,
    show: bool,
    *,
    snapshots: LocalSnapshots | None = None,
    **settings: Any,
) -> Figures:
    print(f"\n=== {title} ===")
    with fake_registry() as registry:
        fill(registry)
        results = with_unread(entries, audit(refs, registry, snapshots=snapshots, **settings))
        figures = report(entries, results, show)
        report_requests(refs, results, registry)
    return figures


def main(argv: list[str]) -> int:
    if not SPLIT.exists():
        print(f"HALLMARK data not found at {SPLIT}: nothing to benchmark.")
        return 0
    show = "--show-errors" in argv
    entries = load_entries(SPLIT)
    refs = read_references(entries)
    label = {e["bibtex_key"]: e for e in entries}
    works = valid_works(refs, label)
    print(f"HALLMARK dev_public: {len(entries)} entries, {len(works)} distinct valid works")
    run(
        "verbatim: Crossref holds every valid entry (Crossref and PubMed asked)",
        entries,
        refs,
        lambda fake: fill_verbatim(fake, works),
        show,
        registries="crossref,pubmed",
    )
    setups: tuple[tuple[str, dict[str, Any]], ...] = (
        ("realistic registries, with S2 and OpenAlex keys", KEYS),
        ("realistic registries, without keys (OpenAlex not asked, S2 keyless)", {}),
        ("realistic registries, Crossref and PubMed only (as before issue 13)", ONLY_OLD),
    )
    for title, options in setups:
        fill = partial(fill_realistic, works=works, entries=entries)
        run(title, entries, refs, fill, show, **options)
    run(
        "realistic registries, without keys, Semantic Scholar's shared pool refusing everything",
        entries,
        refs,
        partial(fill_s2_down, works=works, entries=entries),
        show,
        max_attempts=1,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
