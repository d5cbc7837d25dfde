"""Learned weights: how much each piece of evidence about a pair says "one work", as a small
logistic model fitted on labelled pairs (`uv run python -m bench.fit_dedupe_weights`, on the
train split of DBLP-Scholar only) and kept as data (tasks/data/dedupe_weights.json).

The hand rules (tasks/dedupe/compare.py) are exact where citations are clean; scraped citations
(Google Scholar: venues cut off, titles with a name or venue glued on, years missing, authors
garbled) fail one rule or another while the evidence taken together is plain. The model weighs
it together; the rules' hard stops (other identifiers, numbers, venue kinds, teams) still hold.
"""

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import polars as pl

WEIGHTS_FILE = Path(__file__).resolve().parents[1] / "data" / "dedupe_weights.json"

# Words a scraped title picks up from its citation's other fields ("... sigmod 1998", "proc .
# of", "rutgers university", "( demo )", "best paper award"): extra words of these kinds, numbers
# and one- or two-letter debris do not make another title.
GLUED_WORDS = frozenset(
    (  # noqa: SIM905 (a list of 70 quoted words reads worse)
        "proc proceedings conference conf international intl int acm ieee sigmod vldb pods icde "
        "university univ dept department technical tech report rep demo demonstration tutorial "
        "paper abstract extended panel session editor editors journal workshop symposium www http "
        "edu com pages pp vol in of the and on for a an to with by at et al best award full "
        "version appear submitted publication track system computer science sig mod management "
        "data record"
    ).split()
)


def _extra_words(x: str, y: str) -> pl.Expr:
    """How many words of record x's title record y's lacks, not counting the pair's surnames,
    glued words, numbers and debris."""
    words = [pl.col(f"title_key_{side}").str.split(" ") for side in (x, y)]
    names = pl.concat_list(pl.col("surnames_a").fill_null([]), pl.col("surnames_b").fill_null([]))
    word = pl.element()
    return (
        words[0]
        .list.set_difference(words[1])
        .list.set_difference(names)
        .list.eval(
            word.filter(
                (word.str.len_chars() > 2)
                & ~word.str.contains(r"^\d+$")
                & ~word.is_in(list(GLUED_WORDS))
            )
        )
        .list.len()
        .fill_null(0)
    )


def in_domain(records: pl.DataFrame, a: pl.Series, b: pl.Series) -> pl.Series:
    """Whether the weights decide each pair (rows a[i], b[i] of `records`): the pairs they are
    fitted on, one record or both without a year, and neither giving a volume or pages.
    Citations that place the work in print are decided by the rules, which read volume and
    pages; the training pairs (DBLP-Scholar) give neither, so the weights know nothing of them
    (on Cora they would join a paper to its follow-up by the same authors: "Instance-based
    learning algorithms" and "Noise-tolerant ...")."""
    facts = records.select(
        undated=pl.col("year").is_null(),
        unplaced=pl.col("volume").is_null() & pl.col("pages").is_null(),
    )
    undated, unplaced = facts["undated"], facts["unplaced"]
    return (undated.gather(a) | undated.gather(b)) & unplaced.gather(a) & unplaced.gather(b)


def _flag(condition: pl.Expr) -> pl.Expr:
    return condition.fill_null(False).cast(pl.Float64)


def pair_features() -> dict[str, pl.Expr]:
    """Each piece of evidence as an expression over the compared pairs
    (compare.compared_pairs), in [0, 1] or a small count."""
    col = pl.col
    title = pl.max_horizontal("title_sim", "part_sim").fill_null(0.0)
    shared = col("surnames_a").list.set_intersection("surnames_b").list.len().fill_null(0)
    fewest_authors = pl.min_horizontal(col("surnames_a").list.len(), col("surnames_b").list.len())
    fewest_words = pl.min_horizontal(
        col("title_key_a").str.count_matches(" "), col("title_key_b").str.count_matches(" ")
    )
    extra = [_extra_words("a", "b"), _extra_words("b", "a")]
    return {
        "same_title": _flag(col("title_key_a") == col("title_key_b")),
        "title": title,
        "title_95": _flag(title >= 0.95),
        "title_90": _flag(title >= 0.90),
        "title_80": _flag(title >= 0.80),
        "title_words": col("title_words_sim").fill_null(0.0),
        "short_title": _flag((fewest_words < 3).fill_null(True)),
        "extra_words_fewer": pl.min_horizontal(extra).clip(0, 3).cast(pl.Float64),
        "extra_words_more": pl.max_horizontal(extra).clip(0, 4).cast(pl.Float64),
        "extra_words_any": _flag(pl.max_horizontal(extra) > 0),
        "extra_words_both": _flag(pl.min_horizontal(extra) > 0),
        "first_author": col("author_sim").fill_null(0.0),
        "no_authors": _flag((fewest_authors == 0).fill_null(True)),
        "shared_author": _flag(shared >= 1),
        "shared_authors": _flag(shared >= 2),
        "teams_apart": _flag(col("teams_apart")),
        "venues_alike": _flag(col("venues_alike")),
        "venues_apart": _flag(~col("venues_alike")),
    }


FEATURES = tuple(pair_features())


@dataclass(frozen=True)
class PairWeights:
    intercept: float
    coefficients: tuple[tuple[str, float], ...]  # (feature, weight), one per FEATURES
    threshold: float  # the probability from which a pair is one work

    def probability(self) -> pl.Expr:
        """P(one work) for each compared pair."""
        features = pair_features()
        logit = sum(
            (weight * features[name] for name, weight in self.coefficients),
            pl.lit(self.intercept),
        )
        return 1.0 / (1.0 + (-logit).exp())

    def to_json(self, fitted_on: str) -> str:
        return json.dumps(
            {
                "fitted_on": fitted_on,
                "intercept": self.intercept,
                "coefficients": dict(self.coefficients),
                "threshold": self.threshold,
            },
            indent=2,
        )


@cache
def load_weights(path: Path = WEIGHTS_FILE) -> PairWeights:
    data = json.loads(path.read_text(encoding="utf-8"))
    coefficients = data["coefficients"]
    if set(coefficients) != set(FEATURES):
        raise ValueError(f"{path}: weights for {sorted(coefficients)}, features {FEATURES}")
    return PairWeights(
        intercept=float(data["intercept"]),
        coefficients=tuple((name, float(coefficients[name])) for name in FEATURES),
        threshold=float(data["threshold"]),
    )
