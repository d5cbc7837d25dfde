"""Fit dedupe's learned weights (tasks/dedupe/weights.py) on DBLP-Scholar's train split only.

`uv run python -m bench.fit_dedupe_weights` rewrites tasks/data/dedupe_weights.json.

The labelled train pairs that reach dedupe's rules (candidates not too unlike to compare) give
one row of features each; an L2-regularised logistic regression (Newton's method, numpy) fits
the weights on the pairs they will decide (one record or both without a year), and the threshold
is the probability that gives the best F1 on the same train pairs. The train split was balanced
by dropping false pairs (half its pairs are true; 5,347 of the benchmark's 28,707 labelled pairs
are), so for the threshold each false pair counts as many times as it stands for. The
validation split is never read here: bench.dedupe reports on it.
"""

import sys

import numpy as np
import polars as pl

from bench.dedupe_sources import DBLP_SCHOLAR, DBLP_SCHOLAR_SPLITS, dblp_scholar
from tasks.dedupe import DedupeThresholds, records_frame
from tasks.dedupe.assign import prepared_records
from tasks.dedupe.candidates import candidate_pairs
from tasks.dedupe.compare import compared_pairs
from tasks.dedupe.weights import (
    FEATURES,
    WEIGHTS_FILE,
    PairWeights,
    pair_features,
)

L2 = 0.1  # ridge penalty: keeps rare features' weights small
# DBLP-Scholar as published (Magellan, DeepMatcher, Ditto): 5,347 true of 28,707 labelled pairs.
TRUE_SHARE = 5347 / 28707
NEWTON_STEPS = 50


def train_rows() -> tuple[np.ndarray, np.ndarray, float]:
    """Features and labels of the labelled train pairs the weights decide, and how many times
    each false pair counts (the benchmark's share of true pairs over the split's)."""
    records, pairs = dblp_scholar(DBLP_SCHOLAR / DBLP_SCHOLAR_SPLITS["train"])
    thresholds = DedupeThresholds()
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
    rows = compared.join(labels, on=["a", "b"]).filter("modelled").select("same", **pair_features())
    split_share = float(labels["same"].mean())  # type: ignore[arg-type]
    false_weight = (1 - TRUE_SHARE) / TRUE_SHARE * split_share / (1 - split_share)
    return rows.select(FEATURES).to_numpy(), rows["same"].to_numpy(), false_weight


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Intercept and weights of an L2-regularised logistic regression."""
    x = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        gradient = x.T @ (p - y) + L2 * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + L2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return w


def best_threshold(p: np.ndarray, y: np.ndarray, false_weight: float) -> tuple[float, float]:
    """The probability cut with the best F1 (each false pair counting `false_weight` times),
    and that F1."""
    best = (0.5, 0.0)
    for cut in np.arange(0.30, 0.99, 0.01):
        chosen = p >= cut
        hits = int((chosen & y).sum())
        if not hits:
            continue
        wrong = false_weight * int((chosen & ~y).sum())
        precision, recall = hits / (hits + wrong), hits / int(y.sum())
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best[1]:
            best = (round(float(cut), 2), f1)
    return best


def main() -> int:
    if not DBLP_SCHOLAR.is_dir():
        print(f"no DBLP-Scholar data at {DBLP_SCHOLAR}: nothing to fit", file=sys.stderr)
        return 2
    x, y, false_weight = train_rows()
    w = fit(x, y.astype(float))
    p = 1.0 / (1.0 + np.exp(-(w[0] + x @ w[1:])))
    threshold, f1 = best_threshold(p, y.astype(bool), false_weight)
    weights = PairWeights(
        intercept=round(float(w[0]), 4),
        coefficients=tuple(
            (name, round(float(v), 4)) for name, v in zip(FEATURES, w[1:], strict=True)
        ),
        threshold=threshold,
    )
    fitted_on = (
        f"DBLP-Scholar train split (Ditto), {len(y)} compared labelled pairs the weights "
        f"decide (a year missing, no volume or pages); threshold {threshold} has pairwise "
        f"F1 {f1:.4f} on them (false pairs counted {false_weight:.2f} times)"
    )
    WEIGHTS_FILE.write_text(weights.to_json(fitted_on) + "\n", encoding="utf-8")
    print(f"{fitted_on}\nwrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
