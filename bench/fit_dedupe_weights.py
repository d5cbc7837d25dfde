"""Fit dedupe's learned weights (tasks/dedupe/weights.py) on DBLP-Scholar's train split only.

`uv run python -m bench.fit_dedupe_weights` rewrites tasks/data/dedupe_weights.json.

The labelled train pairs that reach dedupe's rules (candidates not too unlike to compare) give
one row of features each; an L2-regularised logistic regression (Newton's method, numpy) fits
the weights on the pairs they will decide (a year missing or the same on both), and the threshold
is the probability that gives the best F1 of the whole dedupe of the train split. The train
split was balanced by dropping false pairs (half its pairs are true; 5,347 of the benchmark's
28,707 labelled pairs are), so in the fit and in that F1 each false pair counts as many times
as it stands for. The validation split is never read here: bench.dedupe reports on it.
"""

import sys
from dataclasses import replace

import numpy as np
import polars as pl

from bench.dedupe import pair_scores, versions
from bench.dedupe_sources import (
    DBLP_SCHOLAR,
    DBLP_SCHOLAR_SPLITS,
    Labelled,
    LabelledPair,
    dblp_scholar,
)
from tasks.dedupe import DedupeThresholds, assign_works, records_frame
from tasks.dedupe.assign import prepared_records
from tasks.dedupe.candidates import candidate_pairs
from tasks.dedupe.compare import compared_pairs
from tasks.dedupe.weights import (
    FEATURES,
    WEIGHTS_FILE,
    PairWeights,
    pair_features,
    with_scraped_columns,
)

L2 = 1.0  # ridge penalty: keeps rare features' weights small
# DBLP-Scholar as published (Magellan, DeepMatcher, Ditto): 5,347 true of 28,707 labelled pairs.
TRUE_SHARE = 5347 / 28707
NEWTON_STEPS = 50


def train_rows(
    split: tuple[list[Labelled], list[LabelledPair]],
) -> tuple[np.ndarray, np.ndarray, float]:
    """Features and labels of the labelled train pairs the weights decide, and how many times
    each false pair counts (the benchmark's share of true pairs over the split's)."""
    records, pairs = split
    # The pairs to fit on do not depend on the weights: any stand in (the stored ones may be
    # for other features).
    unfitted = PairWeights(0.0, tuple((name, 0.0) for name in FEATURES), threshold=1.0)
    thresholds = DedupeThresholds(weights=unfitted)
    prepared = prepared_records(records_frame([r.reference for r in records]), None, thresholds)
    compared, _ = compared_pairs(
        prepared, candidate_pairs(prepared, thresholds.blocking), thresholds
    )
    row = {cid: i for i, cid in enumerate(prepared["citation_id"])}
    labels = pl.DataFrame(
        [(min(row[p.a], row[p.b]), max(row[p.a], row[p.b]), p.same) for p in pairs],
        schema={"a": pl.Int64, "b": pl.Int64, "same": pl.Boolean},
        orient="row",
    ).unique(["a", "b"])
    rows = with_scraped_columns(
        compared.join(labels, on=["a", "b"]).filter("modelled"), prepared
    ).select("same", **pair_features())
    split_share = float(labels["same"].mean())  # type: ignore[arg-type]
    false_weight = (1 - TRUE_SHARE) / TRUE_SHARE * split_share / (1 - split_share)
    return rows.select(FEATURES).to_numpy(), rows["same"].to_numpy(), false_weight


def fit(x: np.ndarray, y: np.ndarray, false_weight: float) -> np.ndarray:
    """Intercept and weights of an L2-regularised logistic regression, each false pair counting
    `false_weight` times (so that its probabilities are the benchmark's, not the balanced
    split's)."""
    x = np.hstack([np.ones((len(x), 1)), x])
    counts = np.where(y > 0, 1.0, false_weight)
    w = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        gradient = x.T @ (counts * (p - y)) + L2 * w
        hessian = (x * (counts * p * (1 - p))[:, None]).T @ x + L2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return w


def weighted_f1(precision: float, recall: float, false_weight: float) -> float:
    """F1 with each false pair counting `false_weight` times."""
    if not precision or not recall:
        return 0.0
    precision = 1.0 / (1.0 + false_weight * (1.0 / precision - 1.0))
    return 2 * precision * recall / (precision + recall)


def best_threshold(
    weights: PairWeights, split: tuple[list[Labelled], list[LabelledPair]], false_weight: float
) -> tuple[float, float]:
    """The probability cut with the best F1 of the whole dedupe (blocking, rules, clustering)
    on the train split, each false pair counting `false_weight` times, and that F1: a pair the
    weights decide still passes the rules' hard stops and average linkage, so the best cut for
    the pairs alone is not the best for the works."""
    records, pairs = split
    frame = records_frame([r.reference for r in records])
    best = (0.5, 0.0)
    for cut in np.arange(0.30, 0.91, 0.05):
        thresholds = DedupeThresholds(weights=replace(weights, threshold=round(float(cut), 2)))
        result = assign_works(frame, thresholds=thresholds)
        work_of = dict(
            zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True)
        )
        precision, recall, _ = pair_scores(pairs, work_of, versions(result.links))
        f1 = weighted_f1(precision, recall, false_weight)
        if f1 > best[1]:
            best = (round(float(cut), 2), f1)
    return best


def main() -> int:
    if not DBLP_SCHOLAR.is_dir():
        print(f"no DBLP-Scholar data at {DBLP_SCHOLAR}: nothing to fit", file=sys.stderr)
        return 2
    split = dblp_scholar(DBLP_SCHOLAR / DBLP_SCHOLAR_SPLITS["train"])
    x, y, false_weight = train_rows(split)
    w = fit(x, y.astype(float), false_weight)
    fitted = PairWeights(
        intercept=round(float(w[0]), 4),
        coefficients=tuple(
            (name, round(float(v), 4)) for name, v in zip(FEATURES, w[1:], strict=True)
        ),
        threshold=0.5,
    )
    threshold, f1 = best_threshold(fitted, split, false_weight)
    fitted_on = (
        f"DBLP-Scholar train split (Ditto), {len(y)} compared labelled pairs the weights "
        f"decide (a year missing or one year on both, no volume or pages), false pairs counted "
        f"{false_weight:.2f} times; threshold {threshold} gives the train split's dedupe "
        f"F1 {f1:.4f} (false pairs so counted)"
    )
    WEIGHTS_FILE.write_text(
        replace(fitted, threshold=threshold).to_json(fitted_on) + "\n", encoding="utf-8"
    )
    print(f"{fitted_on}\nwrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
