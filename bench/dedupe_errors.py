"""Where dedupe loses DBLP-Scholar's train pairs: its out-of-fold errors, grouped by cause.

`uv run python -m bench.dedupe_errors [--cut P] [--show GROUP]`

Each cross-validation fold of bench/fit_dedupe_weights.py is deduped as its cross-validation
does, with weights fitted on the other folds; every labelled pair the whole dedupe then gets
wrong goes into one group, by where it was lost or wrongly won:

- a true pair blocking never made a candidate; one too unlike to reach the rules (titles below
  every title threshold); one the hand rules parted (not the weights' to decide); one the
  weights scored under the cut; one they scored over it that a hard stop parted; one decided
  alike that clustering (average linkage) kept apart;
- a false pair merged or linked by the weights, or by the rules; one joined only through
  other records.

Counts are of pairs, each false pair once (the weighted F1 beside them counts each as
fit_dedupe_weights does). `--show` prints a group's pairs. The validation split is not read.
"""

import argparse
import sys
from collections import Counter

import polars as pl

from bench.dedupe import versions
from bench.dedupe_sources import (
    DBLP_SCHOLAR,
    DBLP_SCHOLAR_SPLITS,
    Labelled,
    LabelledPair,
    dblp_scholar,
)
from bench.fit_dedupe_weights import (
    FOLDS,
    fit,
    folds_of,
    held_out,
    pair_weights,
    train_rows,
    weighted_f1,
)
from tasks.dedupe import DedupeThresholds, records_frame
from tasks.dedupe.assign import prepared_records
from tasks.dedupe.candidates import candidate_pairs
from tasks.dedupe.cluster import cluster
from tasks.dedupe.compare import LINK, MERGE, compared_pairs, score_pairs
from tasks.dedupe.weights import load_weights

RIGHT = "right"


Grouped = tuple[str, LabelledPair, Labelled, Labelled]


def fold_errors(
    records: list[Labelled], pairs: list[LabelledPair], thresholds: DedupeThresholds
) -> list[Grouped]:
    """(group, pair, DBLP record, Scholar record) of each labelled pair of one fold."""
    prepared = prepared_records(records_frame([r.reference for r in records]), None, thresholds)
    candidates = candidate_pairs(prepared, thresholds.blocking)
    compared, _ = compared_pairs(prepared, candidates, thresholds)
    decided = score_pairs(prepared, candidates, thresholds)
    assignments, links = cluster(prepared, decided, thresholds.linkage)
    work_of = dict(zip(assignments["citation_id"], assignments["work_id"], strict=True))
    linked = versions(links)
    row = {cid: i for i, cid in enumerate(prepared["citation_id"])}
    candidate = set(candidates.select("a", "b").iter_rows())
    learned = {
        (a, b): p
        for a, b, p in compared.filter("modelled").select("a", "b", "learned_p").iter_rows()
    }
    reached = set(compared.select("a", "b").iter_rows())
    alike = set(
        decided.filter(pl.col("decision").is_in([MERGE, LINK])).select("a", "b").iter_rows()
    )
    cut = thresholds.weights.threshold if thresholds.weights else load_weights().threshold
    by_id = {r.reference.citation_id: r for r in records}
    groups: list[Grouped] = []
    for pair in pairs:
        key = (min(row[pair.a], row[pair.b]), max(row[pair.a], row[pair.b]))
        x, y = work_of[pair.a], work_of[pair.b]
        together = x == y or (x, y) in linked or (y, x) in linked
        p = learned.get(key)
        if together == pair.same:
            group = RIGHT
        elif pair.same:
            group = (
                "true: not a candidate" if key not in candidate
                else "true: too unlike to compare" if key not in reached
                else "true: alike, kept apart by linkage" if key in alike
                else "true: parted by the rules" if p is None
                else "true: weights under the cut" if p < cut
                else "true: weights over the cut, a hard stop"
            )  # fmt: skip
        else:
            group = (
                "false: joined through others" if key not in alike
                else "false: merged by the weights" if p is not None and p >= cut
                else "false: merged by the rules"
            )  # fmt: skip
        groups.append((group, pair, by_id[pair.a], by_id[pair.b]))
    return groups


def show(record: Labelled) -> str:
    item = record.reference.item
    authors = "; ".join(name.display() for name in item.author or [])
    return f"{item.title!r} | {authors} | {item.container_title} | {item.year()}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cut", type=float, help="the weights' cut (default: the stored one)")
    parser.add_argument("--show", help="print the pairs of the groups starting so")
    args = parser.parse_args(argv)
    if not DBLP_SCHOLAR.is_dir():
        print(f"no DBLP-Scholar data at {DBLP_SCHOLAR}: nothing to analyse", file=sys.stderr)
        return 2
    split = dblp_scholar(DBLP_SCHOLAR / DBLP_SCHOLAR_SPLITS["train"])
    (x, y, folds), false_weight = train_rows(split)
    cut = args.cut if args.cut is not None else load_weights().threshold
    fold_of = folds_of(split[1])
    groups: list[Grouped] = []
    for fold in range(FOLDS):
        weights = pair_weights(fit(x[folds != fold], y[folds != fold], false_weight), cut)
        groups += fold_errors(*held_out(split, fold_of, fold), DedupeThresholds(weights=weights))
    counts = Counter(group for group, _, _, _ in groups)
    for group, count in sorted(counts.items()):
        print(f"{count:6d}  {group}")
    hits = sum(group == RIGHT and pair.same for group, pair, _, _ in groups)
    true_pairs = sum(pair.same for _, pair, _, _ in groups)
    predicted = hits + sum(n for group, n in counts.items() if group.startswith("false"))
    precision, recall = hits / predicted, hits / true_pairs
    print(
        f"out of fold, all folds pooled, at cut {cut}: precision {precision:.4f}, recall "
        f"{recall:.4f}, weighted F1 "
        f"{weighted_f1(precision, recall, false_weight):.4f} (false pairs counted "
        f"{false_weight:.2f} times)"
    )
    for group, _, a, b in groups:
        if args.show and group.startswith(args.show):
            print(f"--- {group}\n  DBLP:    {show(a)}\n  Scholar: {show(b)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
