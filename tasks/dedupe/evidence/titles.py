"""What a pair's titles say: alike enough for their length, or less alike but backed by the
same authors, year or place in print; and whether their numbers (parts, editions) agree."""

from typing import NamedTuple

import polars as pl

from tasks.dedupe.evidence.authors import Authors
from tasks.dedupe.evidence.printed import Printed
from tasks.dedupe.evidence.sides import both, same
from tasks.dedupe.thresholds import DedupeThresholds

# Numbers in a title tell parts and editions apart: "Part II", "... 2000", "Tcl/Tk 8".
_ROMAN = r"\bpart (?:i{1,3}|iv|vi{0,3}|ix|x)\b|\b(?:ii|iii|iv|vi|vii|viii|ix)\b"
_NUMERALS = rf"\b\d+\b|{_ROMAN}"
# Where the other title's numbers are looked for, a lone "i" counts too: "part i" is the
# "i" of "probabilistic temporal databases i algebra" (numbers are compared without "part").
_NUMERALS_ANYWHERE = rf"\d+|{_ROMAN}|\bi\b"
_WHOLE = 0.999  # a part similarity this high: the shorter title is inside the longer


class Titles(NamedTuple):
    short: pl.Expr  # the shorter title has fewer than `short_words` words
    title_ok: pl.Expr  # alike enough for their length
    dropped_part: pl.Expr  # one title is the other without a subtitle or head
    backed: pl.Expr  # a looser title backed by the same authors and year, no other first page
    reworded: pl.Expr  # ... and reworded around the same words
    short_ok: pl.Expr  # what makes a short title the same work
    inside: pl.Expr  # one title inside the other, by two shared authors or more
    numerals_apart: pl.Expr  # a number of one title that the other lacks
    one_issue: pl.Expr  # a long title, the same in one venue's year


def titles(th: DedupeThresholds, people: Authors, printing: Printed) -> Titles:
    col = pl.col
    words = pl.min_horizontal(
        col("title_key_a").str.count_matches(" ") + 1, col("title_key_b").str.count_matches(" ") + 1
    )
    short = (words < th.short_words).fill_null(False)
    # Sources append and reword ("... - Book Review", "B2B" for "business to business") and
    # drop subtitles: a looser title counts when the same authors and the same year back it,
    # and no other first page contradicts it ("The recurrent cascade-correlation architecture",
    # pp. 190-196, is not "The cascade-correlation learning architecture", pp. 524-532).
    # A title inside the other, the same year, where one side names no author to back or
    # contradict it ("random sampling for histogram construction", an index's authorless entry,
    # and "... how much is enough", Chaudhuri et al.), is backed as well.
    dropped_part = col("part_sim") >= th.title
    backed = (
        both("title_key")
        & ~short
        & (
            ((col("title_sim") >= th.corroborated_title) | dropped_part) & people.same_authors
            | dropped_part & people.unauthored
        )
        & same("year")
        & ~col("pages_apart")
    ).fill_null(False)
    # A title reworded around the same words ("Learning problem solving heuristics by
    # experimentation" for "Learning by experimentation: acquiring and refining problem-solving
    # heuristics"), so backed, is as good as a title alike: it says nothing the other does not.
    title_words = [col(f"title_key_{x}").str.split(" ") for x in ("a", "b")]
    reworded = backed & (
        (title_words[0].list.set_difference(title_words[1]).list.len() == 0)
        | (title_words[1].list.set_difference(title_words[0]).list.len() == 0)
    ).fill_null(False)
    # A short title ("Introduction", "Reply") is only the same work with the same author and the
    # same year or first page; or in the same venue (in any of its forms: "SIGMOD Conference",
    # "proceedings of the acm sigmod international conference on"), without a year or by the
    # same two authors a year apart ("Multivariate decision trees", Machine Learning, 1994 in
    # press, 1995); or, the very title by the same first author (or two of the same authors),
    # cited with nothing else (no year, no venue) to place it elsewhere ("webview
    # materialization", Labrinidis; "sybase replication server", Wang and Deppe); or the very
    # title in the same year where one side names no author to contradict the other (an
    # index's authorless entry: "treasurer's message", 2000, and the same by Hammer); or found
    # word for word inside the other title by the same first author and another shared author,
    # with a venue glued on ("spatial hash joins acm sigmod intl", Lo and Ravishankar).
    short_ok = both("first_author") & (
        same("year")
        | col("same_page")
        | (
            (same("container") | col("venues_alike").fill_null(False))
            & printing.year_ok
            & (people.shared | ~both("year"))
        )
        | (
            same("title_key")
            & (people.first_alike.fill_null(False) | people.shared)
            & printing.bare
        )
    ) | (same("title_key") & same("year") & people.unauthored)
    # A title's numbers must recur in the other, where a number glued to a word counts too
    # ("SQL 3" for "SQL3"); a dropped subtitle takes its numbers along ("... (FQAS 2000)"), so
    # then only the shorter title's numbers must recur in the longer one.
    # An undated citation's number that is the other's year is that year run into the title
    # ("the third manifesto 1995", "wang hj 1997 online aggregation", "... one look in vldb
    # 02"), or a year either side of it, not a title number: another number is ("... 2019" and
    # "... 2021", two editions of a WHO report).
    missing_a, missing_b = (
        _missing_numbers(*(col(f"{c}_{side}") for c in ("title_key", "year") for side in (x, y)))
        for x, y in (("a", "b"), ("b", "a"))
    )
    numerals_apart = (missing_a & missing_b) | ((missing_a | missing_b) & ~dropped_part)
    return Titles(
        short=short,
        title_ok=(
            both("title_key")
            & (col("title_sim") >= pl.when(short).then(th.short_title).otherwise(th.title))
        ).fill_null(False),
        dropped_part=dropped_part,
        backed=backed,
        reworded=reworded,
        short_ok=short_ok | (col("inside") & people.shared),
        # A short title inside the other by the same two authors or more: a dropped head or
        # subtitle ("declarative data cleaning"), or names or a venue glued around it
        # ("updating xml acm intl"). (A longer title inside the other: its part similarity is
        # whole.)
        inside=(col("inside") | (col("part_sim") >= _WHOLE)) & people.shared,
        numerals_apart=numerals_apart.fill_null(False),
        # A long title, the same in one venue's year, names one work even where the author
        # lists disagree: indexes truncate long lists, credit a corporate body ("CORPORATE Fox
        # Development Team Microsoft") or a review to the reviewed book's authors, or scrape
        # debris for names ("the microsoft database research group" by "anthology"). Two works
        # do not share a title of this length in one venue and year.
        one_issue=(
            (words >= th.long_words)
            & (col("title_sim") >= th.short_title)
            & same("year")
            & col("venues_alike")
        ).fill_null(False),
    )


def _numerals(title: pl.Expr, pattern: str) -> pl.Expr:
    return title.str.extract_all(pattern).list.eval(pl.element().str.replace(r"^part ", ""))


def _missing_numbers(title: pl.Expr, other: pl.Expr, year: pl.Expr, other_year: pl.Expr) -> pl.Expr:
    """Whether `title` holds a number `other` lacks, not counting, where `title`'s citation is
    undated, the other's year (run into the title); nor, where the other title names no number
    of its own, a year either side of it (a citation's year is often off by one) or its last two
    digits ("in vldb 02"). An edition's own year ("report 2020" against "report 2019") is a
    number of the title, not a slip."""
    # (A list of the years, empty where dated: list.contains with a column is twice as slow.)
    exact = other_year.cast(pl.Utf8)
    near = (other_year - 1, other_year + 1)
    others = _numerals(other, _NUMERALS_ANYWHERE)
    run_in = (
        pl.when(year.is_null() & (others.list.len() == 0))
        .then(
            pl.concat_list(
                exact,
                *(y.cast(pl.Utf8) for y in near),
                (other_year % 100).cast(pl.Utf8).str.zfill(2),
            )
        )
        .when(year.is_null())
        .then(pl.concat_list(exact))
        .otherwise(pl.lit([], pl.List(pl.Utf8)))
    )
    return (
        _numerals(title, _NUMERALS)
        .list.set_difference(others)
        .list.set_difference(run_in)
        .list.len()
        > 0
    )
