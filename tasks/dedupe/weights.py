"""Learned weights: how much each piece of evidence about a pair says "one work", as a small
logistic model fitted on labelled pairs (`uv run python -m bench.fit_dedupe_weights`, on the
train split of DBLP-Scholar only) and kept as data (tasks/data/dedupe_weights.json).

The hand rules (tasks/dedupe/compare.py) are exact where citations are clean; scraped citations
(Google Scholar: venues cut off, titles with a name or venue glued on, years missing, authors
garbled) fail one rule or another while the evidence taken together is plain. The model weighs
it together; the rules' hard stops (other identifiers, numbers, venue kinds, teams) still hold.
"""

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import polars as pl
from rapidfuzz import fuzz, process

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


# A misspelt name ("bemsten" for Bernstein, "rossopoulos") or a scraped one ("ksnigries") is the
# same person from this surname similarity; glued words of a title are names from it too.
NAME_ALIKE = 75


def _glued(word: str, names: list[str]) -> bool:
    """Whether a title word may be something a scraped title picked up from the citation's
    other fields: debris, a number, a venue word, or one of the pair's surnames (misspelt)."""
    return (
        len(word) <= 2
        or word.isdigit()
        or word in GLUED_WORDS
        or process.extractOne(word, names, scorer=fuzz.ratio, score_cutoff=NAME_ALIKE) is not None
    )


def _trimmed(title: str, names: list[str]) -> str:
    """The title without the glued words at its head and tail ("h darwen cj date the third
    manifesto", "don t scrap it wrap it ... vldb 97")."""
    words = title.split(" ")
    start, end = 0, len(words)
    while start < end and _glued(words[start], names):
        start += 1
    while end > start and _glued(words[end - 1], names):
        end -= 1
    return " ".join(words[start:end])


def _author_share(a: list[str], b: list[str]) -> float:
    """The share of the shorter author list whose surnames the other list holds, misspelt or
    not."""
    short, other = sorted((list(set(a)), list(set(b))), key=len)
    if not short:
        return 0.0
    found = sum(
        process.extractOne(name, other, scorer=fuzz.ratio, score_cutoff=NAME_ALIKE) is not None
        for name in short
    )
    return found / len(short)


_LETTER = re.compile(r"[^\W\d_]")


def _monograms(authors: str | None) -> list[tuple[str, str]]:
    """Each author's first given and first family letter ("b yi" -> ("b", "y"))."""
    letters = []
    for name in (authors or "").split("; "):
        # Words split at spaces only: "byoung-kee" is one family name.
        firsts = [found[0] for word in name.lower().split() if (found := _LETTER.search(word))]
        if len(firsts) >= 2:
            letters.append((firsts[0], firsts[-1]))
    return letters


def _swapped_share(a: str | None, b: str | None) -> float:
    """The share of the shorter author list whose name at the same place in the other list has
    the given and family names swapped: Scholar files "Byoung-Kee Yi" as "y byoung-kee" where
    DBLP has "b yi", so the surnames ("yi", "byoungkee") share nothing."""
    x, y = _monograms(a), _monograms(b)
    fewest = min(len(x), len(y))
    if not fewest:
        return 0.0
    swapped = sum(
        given == other_family and family == other_given and given != family
        for (given, family), (other_given, other_family) in zip(x, y, strict=False)
    )
    # one mirrored pair of initials ('j smith' and 's jones') is chance, not a swap
    return swapped / fewest if swapped >= 2 else 0.0


def with_scraped_columns(pairs: pl.DataFrame, records: pl.DataFrame) -> pl.DataFrame:
    """The compared pairs (rows a, b of `records`) with what the weights read name by name and
    word by word (few pairs: only those they decide): `trimmed_title_sim`, the titles'
    similarity without the glued words at their ends, `trimmed_words`, the shorter trimmed
    title's length, `author_share`, how much of the shorter author list the other holds, and
    `swapped_share`, how much of it the other holds with given and family names swapped."""
    trimmed_sim, trimmed_words, share, swapped = [], [], [], []
    authors = {f"authors_{side}": records["authors"].gather(pairs[side]) for side in ("a", "b")}
    for title_a, title_b, names_a, names_b, authors_a, authors_b in pairs.select(
        "title_key_a", "title_key_b", "surnames_a", "surnames_b", **authors
    ).iter_rows():
        names = [n for n in (names_a or []) + (names_b or []) if len(n) > 3]
        x, y = (_trimmed(t or "", names) for t in (title_a, title_b))
        trimmed_sim.append(max(fuzz.ratio(x, y), fuzz.token_sort_ratio(x, y)) / 100)
        trimmed_words.append(min(len(x.split()), len(y.split())))
        share.append(_author_share(names_a or [], names_b or []))
        swapped.append(_swapped_share(authors_a, authors_b))
    return pairs.with_columns(
        trimmed_title_sim=pl.Series(trimmed_sim, dtype=pl.Float64),
        trimmed_words=pl.Series(trimmed_words, dtype=pl.Int64),
        author_share=pl.Series(share, dtype=pl.Float64),
        swapped_share=pl.Series(swapped, dtype=pl.Float64),
    )


def in_domain(records: pl.DataFrame, a: pl.Series, b: pl.Series) -> pl.Series:
    """Whether the weights decide each pair (rows a[i], b[i] of `records`): the pairs they are
    fitted on, one record or both without a year or both of one year (where the rules part a
    scraped twin by its garbled authors: "ksnig-ries", "p" for König-Ries and Lockemann), and
    neither giving a volume or pages.
    Citations that place the work in print are decided by the rules, which read volume and
    pages; the training pairs (DBLP-Scholar) give neither, so the weights know nothing of them
    (on Cora they would join a paper to its follow-up by the same authors: "Instance-based
    learning algorithms" and "Noise-tolerant ...")."""
    facts = records.select(
        undated=pl.col("year").is_null(),
        unplaced=pl.col("volume").is_null() & pl.col("pages").is_null(),
    )
    undated, unplaced = facts["undated"], facts["unplaced"]
    same_year = records["year"].gather(a).eq(records["year"].gather(b)).fill_null(False)
    dated = undated.gather(a) | undated.gather(b) | same_year
    return dated & unplaced.gather(a) & unplaced.gather(b)


def _flag(condition: pl.Expr) -> pl.Expr:
    return condition.fill_null(False).cast(pl.Float64)


def pair_features() -> dict[str, pl.Expr]:
    """Each piece of evidence as an expression over the compared pairs
    (compare.compared_pairs, `with_scraped_columns`), in [0, 1] or a small count."""
    col = pl.col
    title = pl.max_horizontal("title_sim", "part_sim").fill_null(0.0)
    shared = col("surnames_a").list.set_intersection("surnames_b").list.len().fill_null(0)
    fewest_authors = pl.min_horizontal(col("surnames_a").list.len(), col("surnames_b").list.len())
    fewest_words = pl.min_horizontal(
        col("title_key_a").str.count_matches(" "), col("title_key_b").str.count_matches(" ")
    )
    extra = [_extra_words("a", "b"), _extra_words("b", "a")]

    def initial(side: str) -> pl.Expr:
        return col(f"initials_{side}").str.slice(0, 1)

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
        "trimmed_title": col("trimmed_title_sim"),
        "trimmed_words": (col("trimmed_words").clip(0, 20) / 10).cast(pl.Float64),
        "author_share": col("author_share"),
        "same_initial": _flag(initial("a") == initial("b")),
        "swapped_names": col("swapped_share"),
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
