"""Fit dedupe's learned weights (tasks/dedupe/weights.py) on DBLP-Scholar's train split only.

`uv run python -m bench.fit_dedupe_weights` rewrites tasks/data/dedupe_weights.json.

The labelled train pairs that reach dedupe's rules (candidates not too unlike to compare) give
one row of features each; an L2-regularised logistic regression (Newton's method, numpy) fits
the weights on the pairs they will decide (a year missing or the same on both), and the threshold
is the probability that gives the best F1 of the whole dedupe of held-out folds of the train split
(5-fold cross-validation, each fold's weights fitted on the other folds); the stored weights are
then fitted on all of it. The train split was balanced by dropping false pairs (half its pairs are
true; 5,347 of the benchmark's 28,707 labelled pairs are), so in the fit and in that F1 each false
pair counts as many times as it stands for. The validation split is never read here:
bench.dedupe reports on it.
"""

import sys

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
FOLDS = 5
CUTS = tuple(round(float(cut), 2) for cut in np.arange(0.30, 0.91, 0.05))


def train_rows(
    split: tuple[list[Labelled], list[LabelledPair]],
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], float]:
    """Features, labels and cross-validation folds of the labelled train pairs the weights
    decide, and how many times each false pair counts (the benchmark's share of true pairs over
    the split's)."""
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
    fold_of = folds_of(pairs)
    labels = pl.DataFrame(
        [(min(row[p.a], row[p.b]), max(row[p.a], row[p.b]), p.same, fold_of[p.a]) for p in pairs],
        schema={"a": pl.Int64, "b": pl.Int64, "same": pl.Boolean, "fold": pl.Int64},
        orient="row",
    ).unique(["a", "b"])
    rows = with_scraped_columns(
        compared.join(labels, on=["a", "b"]).filter("modelled"), prepared
    ).select("same", "fold", **pair_features())
    split_share = float(labels["same"].mean())  # type: ignore[arg-type]
    false_weight = (1 - TRUE_SHARE) / TRUE_SHARE * split_share / (1 - split_share)
    features = rows.select(FEATURES).to_numpy()
    return (features, rows["same"].to_numpy().astype(float), rows["fold"].to_numpy()), false_weight


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


def folds_of(pairs: list[LabelledPair]) -> dict[str, int]:
    """The cross-validation fold of each DBLP record, dealt round in order of first appearance.
    Folds go by DBLP record, not by connected pairs: those join 43% of the pairs into one
    group. A DBLP record's pairs stay in one fold; a Scholar record may be in two."""
    return {a: i % FOLDS for i, a in enumerate(dict.fromkeys(p.a for p in pairs))}


def held_out(
    split: tuple[list[Labelled], list[LabelledPair]], fold_of: dict[str, int], fold: int
) -> tuple[list[Labelled], list[LabelledPair]]:
    """One fold's labelled pairs and the records they name."""
    records, pairs = split
    kept = [p for p in pairs if fold_of[p.a] == fold]
    named = {key for p in kept for key in (p.a, p.b)}
    return [r for r in records if r.reference.citation_id in named], kept


def pair_weights(w: np.ndarray, threshold: float) -> PairWeights:
    """`fit`'s intercept and weights, rounded as stored, with a probability cut."""
    return PairWeights(
        intercept=round(float(w[0]), 4),
        coefficients=tuple(
            (name, round(float(v), 4)) for name, v in zip(FEATURES, w[1:], strict=True)
        ),
        threshold=threshold,
    )


def dedupe_f1(
    weights: PairWeights, split: tuple[list[Labelled], list[LabelledPair]], false_weight: float
) -> float:
    """F1 of the whole dedupe (blocking, rules, clustering) of a split's records over its
    labelled pairs, each false pair counting `false_weight` times: a pair the weights decide
    still passes the rules' hard stops and average linkage, so the best cut for the pairs alone
    is not the best for the works."""
    records, pairs = split
    result = assign_works(
        records_frame([r.reference for r in records]), thresholds=DedupeThresholds(weights=weights)
    )
    work_of = dict(
        zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True)
    )
    precision, recall, _ = pair_scores(pairs, work_of, versions(result.links))
    return weighted_f1(precision, recall, false_weight)


def cross_validated_threshold(
    split: tuple[list[Labelled], list[LabelledPair]],
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    false_weight: float,
) -> tuple[float, float]:
    """The cut with the best held-out F1 summed over the folds, and that F1's mean. The train
    split's own F1 is flat within one false pair over cuts 0.60-0.80, so its best cut jumped
    with any change; each fold's weights are fitted without its pairs."""
    x, y, folds = rows
    fold_of = folds_of(split[1])
    totals = dict.fromkeys(CUTS, 0.0)
    for fold in range(FOLDS):
        w = fit(x[folds != fold], y[folds != fold], false_weight)
        held = held_out(split, fold_of, fold)
        for cut in CUTS:
            totals[cut] += dedupe_f1(pair_weights(w, cut), held, false_weight)
    print(" ".join(f"{cut}: {total / FOLDS:.4f}" for cut, total in totals.items()))
    best = max(CUTS, key=totals.__getitem__)
    return best, totals[best] / FOLDS


def main() -> int:
    if not DBLP_SCHOLAR.is_dir():
        print(f"no DBLP-Scholar data at {DBLP_SCHOLAR}: nothing to fit", file=sys.stderr)
        return 2
    split = dblp_scholar(DBLP_SCHOLAR / DBLP_SCHOLAR_SPLITS["train"])
    rows, false_weight = train_rows(split)
    threshold, held_out_f1 = cross_validated_threshold(split, rows, false_weight)
    fitted = pair_weights(fit(rows[0], rows[1], false_weight), threshold)
    train_f1 = dedupe_f1(fitted, split, false_weight)
    fitted_on = (
        f"DBLP-Scholar train split (Ditto), {len(rows[1])} compared labelled pairs the weights "
        f"decide (a year missing or one year on both, no volume or pages), false pairs counted "
        f"{false_weight:.2f} times; threshold {threshold} gives the best held-out dedupe F1 of "
        f"{FOLDS}-fold cross-validation on the train split (folds by DBLP record), mean "
        f"{held_out_f1:.4f}, and the train split's dedupe F1 {train_f1:.4f} (false pairs so "
        f"counted)"
    )
    WEIGHTS_FILE.write_text(fitted.to_json(fitted_on) + "\n", encoding="utf-8")
    print(f"{fitted_on}\nwrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
