"""Whether a pair is one work by likeness, not by an identifier: the titles, authors and
publication facts weighed together (by the rules, or by the learned weights where a record is
scraped and undated), under hard stops no likeness overrules; and the score of such a merge."""

from typing import NamedTuple

import polars as pl

from tasks.dedupe.evidence.authors import Authors
from tasks.dedupe.evidence.printed import Printed
from tasks.dedupe.evidence.sides import both, same
from tasks.dedupe.evidence.titles import Titles
from tasks.dedupe.thresholds import DedupeThresholds
from tasks.dedupe.weights import load_weights

# Two author lists that share nobody are one team scraped wrong only where the titles are all
# but the same (at 0.90, DBLP-ACM joins one group's two papers of one year) and the names are
# swapped given for family ('c sophie' for S. Cluet) in at least half the places: otherwise two
# teams under one title in one year are two papers (surveys, "... a review").
_swapped_team = (pl.col("title_sim") >= 0.95) & (pl.col("swapped_share") >= 0.5)


class Likeness(NamedTuple):
    learned: pl.Expr  # alike by the learned weights
    fuzzy: pl.Expr  # one work: alike by the rules or the weights, and no hard stop
    copublished: pl.Expr  # as fuzzy, printed in two places: one text under two identifiers
    preprint_version: pl.Expr  # close enough to be a preprint and its version
    printed_twice: pl.Expr  # one paper printed twice: two works, versions of each other
    unvouched: pl.Expr  # left apart by the learned weights alone, or two undated records


class Score(NamedTuple):
    title_part: pl.Expr  # the title's say, raised where other evidence makes up for it
    fuzzy_score: pl.Expr  # a merge's score in [0, 1]


def likeness(th: DedupeThresholds, people: Authors, printing: Printed, wording: Titles) -> Likeness:
    col = pl.col
    recurring = col("recurring_a") | col("recurring_b")
    # A citation without its year (scraped ones: a venue cut off, a name or venue glued to the
    # title, initials only) lacks what backs a looser title, and a scraped one of the same year
    # fails the author rules; there the learned weights (tasks/dedupe/weights.py) weigh all the
    # evidence together, under the same hard stops. Between two dated records they join no
    # short title and no two teams: clean lists (DBLP-ACM) hold a group's two papers of one
    # year ("Prospector: a content-based multimedia server ..." and "A Teradata content-based
    # multimedia object manager ..."), "Book reviews" beside "Call for book reviews"; but one
    # team scraped wrong (`_swapped_team`) is one.
    threshold = (th.weights or load_weights()).threshold
    learned = (
        col("modelled")
        & (col("learned_p") >= threshold)
        & (~both("year") | (~wording.short & (~col("teams_apart") | _swapped_team)))
    ).fill_null(False)
    # What no likeness overrules: years too far apart, a short title unbacked, a recurring title
    # unplaced, other numbers, other kinds of venue, and other pages in another year or, in one
    # list, another venue (another printing: the proceedings paper, 1988, pp. 601-606, and its
    # journal version, 1989, pp. 377-391; a typo rarely hits both). A text printed in two places
    # under two identifiers is one text all the same (a co-publication).
    printed_once = (
        printing.year_ok
        & (~wording.short | wording.short_ok)
        & (~recurring | printing.located)
        & ~wording.numerals_apart
        & ~printing.venues_apart
        & ~printing.reprinted
    )
    unstopped = printed_once & ~printing.elsewhere
    ruled_alike = (
        wording.title_ok
        | wording.backed
        | printing.paged
        | printing.in_print
        | printing.placed
        | printing.topic
        | wording.inside
    ) & ((people.author_ok & ~col("teams_apart")) | wording.one_issue)
    # Close enough to be versions of one work: alike by the rules, or by the learned weights
    # (which weigh garbled authors, "h eui-hong" for E. Han, themselves).
    near_version = (wording.title_ok & people.author_ok | learned) & (
        ~both("year") | (printing.year_gap <= th.preprint_years)
    ).fill_null(False)
    # A journal version may follow its conference paper by up to six years (blocking pairs
    # such late versions by the same first author only): the same authors and the title alike
    # or the other's with a subtitle added, in no one venue ("walrus: a similarity retrieval
    # algorithm for image databases", SIGMOD 1999 and TKDE 2004). A journal article is the
    # later version, not the earlier: Cora's "Machine Learning Journal", 1992, and "Machine
    # Learning", 1997, are one paper, one citation misdated.
    late_version = (
        (wording.title_ok | wording.dropped_part)
        & people.same_authors
        & (printing.year_gap > th.preprint_years)
        & (printing.year_gap <= th.blocking.version_window)
        & both("container")
        & ~col("venues_alike")
        & ~printing.earlier_in_journal
    ).fill_null(False)
    # One paper printed twice (a conference paper and its journal version; other pages in
    # another year) is two works, each a version of the other: the same authors (known, or
    # weighed alike), a title long enough to be one paper's, and no recurring title ("Editor's
    # notes" every year).
    apart_in_print = (
        printing.venues_apart | printing.reprinted | printing.unplaced_apart | printing.elsewhere
    )
    return Likeness(
        learned=learned,
        fuzzy=(ruled_alike | learned) & unstopped,
        copublished=(ruled_alike | learned) & printed_once,
        preprint_version=near_version | same("arxiv"),
        printed_twice=(
            (apart_in_print & near_version | late_version)
            & (people.same_authors | learned)
            & ~wording.short
            & ~recurring
            & ~col("teams_apart")
            & ~wording.numerals_apart
        ),
        # Left apart by the learned weights alone, no hard stop: a scraped record too garbled
        # to vouch for (authors "esther, eric" for Pacitti and Simon), not one set apart; or
        # two undated (scraped) copies, where a hard stop reads debris ("1995 . high-concurrency
        # locking in r-trees" has a number "high-concurrency in r-trees [ c ]" lacks).
        unvouched=col("modelled")
        & (
            ~ruled_alike & unstopped.fill_null(False)
            | (col("year_a").is_null() & col("year_b").is_null())
        ),
    )


def score(
    th: DedupeThresholds, people: Authors, printing: Printed, wording: Titles, alike: Likeness
) -> Score:
    col = pl.col
    # A dropped subtitle, a shared first page, a reworded title, or the same author list and
    # year behind a looser title ("GridDB: a relational interface for the grid", "... a database
    # interface to the grid") make up for a title less alike (or none): average linkage must not
    # veto such a pair on its bare title similarity. One shared author is too little for that:
    # two papers of one year may share a first author and a title's first words.
    title_part = pl.max_horizontal(
        "title_sim",
        "part_sim",
        pl.when(
            printing.paged
            | printing.in_print
            | printing.placed
            | wording.reworded
            | (wording.backed & people.same_list)
            | printing.topic
            | alike.learned
            | wording.inside
        )
        .then(th.title)
        .otherwise(None),
    )
    author_part = (
        pl.when(people.listed | people.shared)
        .then(1.0)
        .otherwise(col("author_sim"))
        .fill_null(title_part)
    )
    # An unknown year is worth no more than a year off by one: a record that says less must not
    # outrank one that agrees on more (it would be the weak middle that chains two works).
    year_part = (1.0 - printing.year_gap.clip(0, 2) / 2.0).fill_null(0.5)
    # Where both cite pages, the same first page vouches for the pair and another one counts
    # against it (merges that agree on where the work is printed go first); unknown, it is left
    # out of the mean.
    page_part = pl.when(col("same_page")).then(1.0).when(col("pages_apart")).then(0.0)
    return Score(
        title_part=title_part,
        fuzzy_score=(
            (3 * title_part + author_part + year_part + page_part.fill_null(0.0))
            / (5 + page_part.is_not_null().cast(pl.Int8))
        ).fill_null(0.0),
    )
