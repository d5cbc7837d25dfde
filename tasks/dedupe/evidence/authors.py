"""What a pair's author lists say: the same people, give or take how sources spell, cut and
order names."""

from typing import NamedTuple

import polars as pl

from tasks.dedupe.evidence.sides import both
from tasks.dedupe.thresholds import DedupeThresholds


class Authors(NamedTuple):
    first_alike: pl.Expr  # the first authors' surnames alike (null where one is missing)
    listed: pl.Expr  # either first author among the other's authors, or one cut differently
    shared: pl.Expr  # two surnames or more in common
    author_ok: pl.Expr  # nothing against the first authors (or one is unknown)
    same_authors: pl.Expr  # both name a first author, and the same one (alike, listed, shared)
    same_list: pl.Expr  # the same author list, give or take one name in five
    unauthored: pl.Expr  # one side names no author


def authors(th: DedupeThresholds) -> Authors:
    col = pl.col
    first_alike = col("author_sim") >= th.author
    initials_ok = ~both("initials") | (
        col("initials_a").str.slice(0, 1) == col("initials_b").str.slice(0, 1)
    )
    # A compound surname is cut differently by sources ("Rafael Camps Paré" filed under Paré,
    # "Rafael Camps"; "Barbará-Millá", "Barbará"): a surname that is a word of the other's whole
    # name, with the same first initial, names the same person.
    compound = initials_ok & (_name_part("a", "b") | _name_part("b", "a"))
    # Author lists get reordered and misspelt between sources: the first author among the
    # other's authors counts too, and so do two shared surnames.
    listed = _listed("a", "b") | _listed("b", "a") | compound
    common = col("surnames_a").list.set_intersection(col("surnames_b")).list.len()
    shared = (common >= 2).fill_null(False)
    # The same author list, give or take a misspelt or dropped name (one in five).
    longest = pl.max_horizontal(
        col("surnames_a").list.unique().list.len(), col("surnames_b").list.unique().list.len()
    )
    nothing_against = ~both("first_author") | first_alike & initials_ok | listed | shared
    return Authors(
        first_alike=first_alike,
        listed=listed,
        shared=shared,
        author_ok=nothing_against.fill_null(False),
        same_authors=(both("first_author") & (first_alike | listed | shared)).fill_null(False),
        same_list=((common > 0) & (5 * common >= 4 * longest)).fill_null(False),
        unauthored=col("first_author_a").is_null() | col("first_author_b").is_null(),
    )


def _listed(x: str, y: str) -> pl.Expr:
    """Whether record x's first author is among record y's authors."""
    return pl.col(f"surnames_{y}").list.contains(pl.col(f"first_author_{x}")).fill_null(False)


def _name_part(x: str, y: str) -> pl.Expr:
    """Whether record x's first-author surname is a word of record y's first author's name."""
    return (
        (pl.lit(" ") + pl.col(f"first_author_words_{y}") + pl.lit(" "))
        .str.contains(pl.lit(" ") + pl.col(f"first_author_{x}") + pl.lit(" "), literal=True)
        .fill_null(False)
    )
