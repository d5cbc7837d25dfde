"""Dedupe quality on real ground truth: pairwise precision, recall and F1.

`uv run python -m bench.dedupe`

- DBLP-ACM (Leipzig): 2,616 DBLP + 2,294 ACM records deduped as one batch. The ground truth is a
  one-to-one mapping of cross-source pairs: no record is mapped twice, so each source holds each
  work at most once and every pair we put inside one source is a false positive. The main figure
  counts all predicted pairs that way; the cross-source-only figure (what published matchers
  report: they only ever compare across sources) is printed beside it.
- The same, incrementally: DBLP deduped first as a job of its own, ACM as a later job against it.
- Cora, two versions, each deduped as one batch; all pairs inside an entity count:
  - coraLarge (JedAI's 1,879 records, mixed case, a `label` per record): its labels are partly
    wrong (one Pazzani & Kibler paper under four labels, misspelt labels), some records lost
    their titles or venues.
  - JedAI's standard Cora (1,295 records, 112 entities), the one published matchers report on:
    every field lower-cased; the entities are the connected components of its duplicate pairs.
  Each citation is its own reference list (bench/dedupe_sources.py). Beside each figure: how
  many false pairs join citations no field tells apart (labels parting them on knowledge the
  data does not hold), and for coraLarge the F1 had its largest such split been parted.
- DBLP-Scholar (Ditto's train and validation splits: labelled pairs of a DBLP record and a
  scraped Google Scholar record, lower-cased, venues cut off, titles garbled). Each split's
  distinct records are deduped as one batch (DBLP one list, every Scholar record its own); a
  pair is predicted a match as the benchmark defines one: the same work, or works linked
  `version-of` (a conference paper and its journal version are one entry there). Precision,
  recall and F1 over the labelled pairs; the same-work-only figure is printed beside it.
"""

import itertools
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable

import polars as pl

from bench.dedupe_sources import (
    DBLP_SCHOLAR,
    DBLP_SCHOLAR_SPLITS,
    DEDUPE_DATA,
    Labelled,
    LabelledPair,
    cora,
    cora_jedai,
    dblp_acm,
    dblp_scholar,
)
from tasks.dedupe import assign_works, records_frame

Pair = tuple[str, str]


def cluster_pairs(work_of: dict[str, str]) -> set[Pair]:
    members: dict[str, list[str]] = defaultdict(list)
    for citation_id, work_id in work_of.items():
        members[work_id].append(citation_id)
    return {
        (x, y) for group in members.values() for x, y in itertools.combinations(sorted(group), 2)
    }


def scores(predicted: set[Pair], truth: set[Pair]) -> tuple[float, float, float]:
    hits = len(predicted & truth)
    precision = hits / len(predicted) if predicted else 1.0
    recall = hits / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def line(name: str, predicted: set[Pair], truth: set[Pair], seconds: float) -> str:
    p, r, f = scores(predicted, truth)
    return (
        f"{name:<34} precision {p:.4f}  recall {r:.4f}  F1 {f:.4f}  "
        f"(true pairs {len(truth)}, predicted {len(predicted)}, {seconds:.2f} s)"
    )


def dedupe(batches: Iterable[list[Labelled]]) -> dict[str, str]:
    """Work id per citation, each batch deduped against the library of the batches before it."""
    return dedupe_linked(batches)[0]


def dedupe_linked(
    batches: Iterable[list[Labelled]],
) -> tuple[dict[str, str], pl.DataFrame]:
    """Work id per citation and the links between works, each batch deduped against the
    library of the batches before it."""
    library = None
    work_of: dict[str, str] = {}
    links = []
    for batch in batches:
        new = records_frame([r.reference for r in batch])
        result = assign_works(new, library)
        assigned = result.assignments
        work_of.update(zip(assigned["citation_id"], assigned["work_id"], strict=True))
        links.append(result.links)
        rows = result.library_rows(new)
        library = rows if library is None else pl.concat([library, rows])
    return work_of, pl.concat(links)


def bench_dblp_acm() -> None:
    records, truth = dblp_acm()
    ordered = {tuple(sorted(pair)) for pair in truth}
    truth = {(a, b) for a, b in ordered}
    for name, batches in (
        ("DBLP-ACM, one batch", [records]),
        (
            "DBLP-ACM, ACM as a later job",
            [[r for r in records if r.source == s] for s in ("DBLP2", "ACM")],
        ),
    ):
        start = time.perf_counter()
        work_of = dedupe(batches)
        seconds = time.perf_counter() - start
        predicted = cluster_pairs(work_of)
        cross = {(a, b) for a, b in predicted if a.split(":")[0] != b.split(":")[0]}
        within = predicted - cross
        print(line(name, predicted, truth, seconds))
        print(f"{'':<34} of which within one source (all false): {len(within)}; "
              f"cross-source pairs only: F1 {scores(cross, truth)[2]:.4f}")  # fmt: skip


def alike_in_print(records: list[Labelled], pairs: set[Pair]) -> int:
    """How many pairs join citations that agree on title, surnames and year and give no volume,
    pages or container the other contradicts: pairs no reading of the citations can part, so
    their labels part them on knowledge the data does not hold."""
    fields = ("title_key", "surnames", "year", "volume", "pages", "container")
    frame = records_frame([r.reference for r in records]).select("citation_id", *fields)
    keys = {row[0]: row[1:] for row in frame.iter_rows()}

    def alike(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
        return a[:3] == b[:3] and all(
            x is None or y is None or x == y for x, y in zip(a[3:], b[3:], strict=True)
        )

    return sum(alike(keys[a], keys[b]) for a, b in pairs)


# coraLarge's largest split that no field of this copy tells apart: Fahlman & Lebiere's technical
# report (1990a; its report number lost) and their NIPS paper (1990b), one title, one author pair.
UNTOLD_LABELS = frozenset({"fahlman1990a", "fahlman1990b"})


def regrouped(
    records: list[Labelled], work_of: dict[str, str], group: Callable[[Labelled], str]
) -> dict[str, str]:
    """`work_of` with the citations under UNTOLD_LABELS put into groups of their own."""
    regrouped = dict(work_of)
    for r in records:
        if r.truth in UNTOLD_LABELS:
            regrouped[r.reference.citation_id] = "untold:" + group(r)
    return regrouped


def untold_split(records: list[Labelled], work_of: dict[str, str], truth: set[Pair]) -> str:
    """F1 had the untold labels been parted as labelled, and parted by whether a citation gives
    a volume or pages (what a rule would need to do, and is wrong in general)."""
    oracle = regrouped(records, work_of, lambda r: r.truth)
    located = regrouped(
        records, work_of, lambda r: str(bool(r.reference.item.volume or r.reference.item.page))
    )
    return (
        f"F1 with {' and '.join(sorted(UNTOLD_LABELS))} parted as labelled: "
        f"{scores(cluster_pairs(oracle), truth)[2]:.4f}; parted into citations with and "
        f"without volume or pages: {scores(cluster_pairs(located), truth)[2]:.4f}"
    )


def bench_cora() -> None:
    for name, records in (
        ("Cora, one batch", cora()),
        ("Cora (JedAI 1,295), one batch", cora_jedai()),
    ):
        start = time.perf_counter()
        work_of = dedupe([records])
        seconds = time.perf_counter() - start
        truth = cluster_pairs({r.reference.citation_id: r.truth for r in records})
        predicted = cluster_pairs(work_of)
        print(line(name, predicted, truth, seconds))
        alike = alike_in_print(records, predicted - truth)
        print(f"{'':<34} false pairs alike in title, authors and year, with no volume, pages "
              f"or venue apart: {alike}")  # fmt: skip
        if any(r.truth in UNTOLD_LABELS for r in records):
            print(f"{'':<34} {untold_split(records, work_of, truth)}")


def versions(links: pl.DataFrame) -> set[Pair]:
    """The pairs of work ids linked `version-of`."""
    return set(
        links.filter(pl.col("kind") == "version-of").select("work_id_a", "work_id_b").iter_rows()
    )


def pair_scores(
    pairs: list[LabelledPair], work_of: dict[str, str], versions: set[Pair]
) -> tuple[float, float, float]:
    """Precision, recall, F1 over labelled pairs, a pair predicted a match when both records
    are in one work or in works linked as `versions` (pairs of work ids, either order)."""
    predicted = {
        (p.a, p.b)
        for p in pairs
        if (x := work_of[p.a]) == (y := work_of[p.b]) or (x, y) in versions or (y, x) in versions
    }
    return scores(predicted, {(p.a, p.b) for p in pairs if p.same})


def bench_dblp_scholar() -> None:
    if not DBLP_SCHOLAR.is_dir():
        print(f"no DBLP-Scholar data at {DBLP_SCHOLAR}: not measured", file=sys.stderr)
        return
    for split, file in DBLP_SCHOLAR_SPLITS.items():
        records, pairs = dblp_scholar(DBLP_SCHOLAR / file)
        start = time.perf_counter()
        work_of, links = dedupe_linked([records])
        seconds = time.perf_counter() - start
        p, r, f = pair_scores(pairs, work_of, versions(links))
        print(
            f"{'DBLP-Scholar, ' + split:<34} precision {p:.4f}  recall {r:.4f}  F1 {f:.4f}  "
            f"({sum(x.same for x in pairs)} of {len(pairs)} pairs true, {len(records)} records, "
            f"{seconds:.2f} s)"
        )
        print(f"{'':<34} the same work only: F1 {pair_scores(pairs, work_of, set())[2]:.4f}")


def main() -> None:
    if not DEDUPE_DATA.is_dir():
        print(f"no shared data at {DEDUPE_DATA}: nothing to measure")
        return
    bench_dblp_scholar()
    bench_dblp_acm()
    bench_cora()


if __name__ == "__main__":
    main()
    sys.exit(0)
