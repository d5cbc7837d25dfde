"""How alike two records' fields are, for many pairs at once: titles (whole, or one as part of
the other), surnames and author lists, venues, first pages. Vectorised with rapidfuzz's `cpdist`
(pairwise, all cores) and polars: each answers for every pair at once, from a record column and
the pairs' rows, or from the two sides' values already gathered.
"""

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from rapidfuzz import fuzz, process

from tasks.match.venues import venue_cut_off, venue_of, venue_similarity

# Title: character edits (typos) or word order (moved subtitles), whichever is kinder.
TITLE_SCORERS = (fuzz.ratio, fuzz.token_sort_ratio)
# Title words: how much of the shorter title's words the longer holds, in any order ("quick
# fault recovery in oracle" in "fast start quick fault recovery in oracle").
TITLE_WORDS_SCORERS = (fuzz.token_set_ratio,)
SURNAME_SCORERS = (fuzz.ratio,)
# Two venue names whose similarity (tasks/match/venues.py) reaches this may be one venue; names
# only word-similar score at most UNCONFIRMED_SIMILARITY (0.75) there.
VENUE_ALIKE = 0.75


def similarity(
    column: pl.Series,
    a_rows: pl.Series,
    b_rows: pl.Series,
    scorers: Sequence[Callable[..., float]],
    where: pl.Series | None = None,
) -> pl.Series:
    """Best similarity in [0, 1] of column[a[i]] and column[b[i]]; null where one is missing
    (or where `where` is false: only the pairs asked about are scored)."""
    if where is not None:
        asked = similarity(column, a_rows.filter(where), b_rows.filter(where), scorers)
        unasked = pl.Series([None] * len(a_rows), dtype=pl.Float64)
        return unasked.scatter(where.arg_true(), asked)
    a, b = a_rows.to_numpy(), b_rows.to_numpy()
    # One Python string per involved record, shared by all its pairs (not one per pair).
    rows = np.unique(np.concatenate([a, b]))
    values = np.empty(len(column), dtype=object)
    values[rows] = column.gather(rows).fill_null("").to_list()
    sims = np.zeros(len(a), dtype=np.float32)
    for scorer in scorers:
        found = process.cpdist(values[a], values[b], scorer=scorer, workers=-1, dtype=np.float32)
        sims = np.maximum(sims, found)
    missing = column.gather(a_rows).is_null() | column.gather(b_rows).is_null()
    return pl.Series(sims / 100.0, dtype=pl.Float64).set(missing, None)


def part_similarity(
    column: pl.Series, a_rows: pl.Series, b_rows: pl.Series, needed: pl.Series, min_words: int
) -> pl.Series:
    """Similarity in [0, 1] of the shorter title to the part of the longer one most like it (as
    long as the shorter): a citation that dropped the subtitle ("X" for "X: how Y") or a head
    ("X" for "SIGMOD challenges paper: X"), or a reviewed book's title ("Review of X by Y").
    Zero when the shorter title has fewer than `min_words` words (a short part says little)
    and where not `needed` (computed per pair, so only where the whole titles disagree)."""
    a, b = column.gather(a_rows), column.gather(b_rows)
    a_first = a.str.len_chars() <= b.str.len_chars()
    frame = pl.DataFrame({"a": a, "b": b, "a_first": a_first}).select(
        short=pl.when("a_first").then("a").otherwise("b"),
        long=pl.when("a_first").then("b").otherwise("a"),
    )
    frame = frame.with_columns(
        compared=(pl.col("short").str.count_matches(" ") >= min_words - 1).fill_null(False)
        & needed,
    )
    compared = frame.filter("compared")
    sims = process.cpdist(
        compared["short"].to_list(),
        compared["long"].to_list(),
        scorer=fuzz.partial_ratio,
        workers=-1,
        dtype=np.float32,
    )
    result = np.zeros(len(frame), dtype=np.float64)
    result[frame["compared"].to_numpy()] = sims / 100.0
    return pl.Series(result)


def teams_apart(a: pl.Series, b: pl.Series, alike: float, min_strangers: int) -> pl.Series:
    """Whether author lists a[i] and b[i] are two teams: each of three names or more, and each
    naming at least `min_strangers` people the other lacks, and more than one in five of its
    names, counting surnames at least `alike` ("Linerman", "Linderman") as the same person.
    Indexes drop authors, misspell them and garble long lists, but do not add strangers to
    both: "Prospector: a content-based multimedia server" by Choo, O'Connell, ..., Chen,
    Ganapathi and "A content-based multimedia server" by O'Connell, Choo, ..., Watson, Ieong,
    Wang are two papers of one group."""
    lists = pl.DataFrame({"a": a, "b": b}).select(pl.col("a", "b").list.unique())
    # Exact surnames first: only names missing from the other list are compared name by name,
    # and only where both lists miss enough of them.
    suspects = (
        lists.with_row_index()
        .with_columns(
            only_a=pl.col("a").list.set_difference("b"), only_b=pl.col("b").list.set_difference("a")
        )
        .filter(
            (pl.col("a").list.len() >= 3)
            & (pl.col("b").list.len() >= 3)
            & (pl.col("only_a").list.len() >= min_strangers)
            & (pl.col("only_b").list.len() >= min_strangers)
        )
    )
    apart = np.zeros(len(lists), dtype=bool)
    for index, x, y, only_x, only_y in suspects.iter_rows():
        apart[index] = all(
            count >= min_strangers and 5 * count > len(names)
            for names, count in (
                (x, _strangers(only_x, y, alike)),
                (y, _strangers(only_y, x, alike)),
            )
        )
    return pl.Series(apart)


def _strangers(names: list[str], others: list[str], alike: float) -> int:
    """How many of `names` have no surname in `others` alike enough to be a misspelling."""
    return sum(
        process.extractOne(name, others, scorer=fuzz.ratio, score_cutoff=100 * alike) is None
        for name in names
    )


def first_page(pages: pl.Series, rows: pl.Series) -> pl.Series:
    """The first page number cited ("pp. 524-532" -> 524); null without one."""
    return pages.gather(rows).str.extract(r"(\d+)").cast(pl.Int64, strict=False)


def venues_alike(a: pl.Series, b: pl.Series) -> pl.Series:
    """Whether container names a[i] and b[i] may name one venue, judged as validation compares a
    claimed venue with a registry's (tasks/match/venues.py: the venue table, abbreviations and
    acronyms, "VLDB" for "Very Large Data Bases"). Null where either is missing."""
    asked = pl.DataFrame({"a": a, "b": b}, schema={"a": pl.Utf8, "b": pl.Utf8})
    # Venues repeat over many pairs: each distinct pair of names is compared once.
    distinct = asked.drop_nulls().unique()
    alike = [_venues_alike(x, y) for x, y in distinct.iter_rows()]
    answers = distinct.with_columns(alike=pl.Series(alike, dtype=pl.Boolean))
    return asked.join(answers, on=["a", "b"], how="left", maintain_order="left")["alike"]


def _venues_alike(a: str, b: str) -> bool | None:
    score = venue_similarity(a, b)
    if score is None or score >= VENUE_ALIKE:
        return True
    # A name cut off at its end ("proceedings of the 26th international conference on very")
    # is read as the one known venue it starts, where the whole name is none.
    known_a, known_b = (venue_of(x) or venue_cut_off(x) for x in (a, b))
    return known_a is not None and known_b is not None and known_a.key == known_b.key
