"""Recurring titles: titles a periodical prints again and again ("Editorial", "Book review
column", "Editor's notes") that name a regular piece rather than one work; how often a list
holds one twice in a year; and a recurring title's piece cited by its topic as well ("Guest
Editorial: Databases and the Web")."""

import re

import numpy as np
import polars as pl

from tasks.dedupe.thresholds import DedupeThresholds
from tasks.textnorm import normalise_title

# Where a title sets a recurring title off from its topic: "Guest Editorial: Databases and the
# Web", "E-Services - Guest editorial" (not the hyphen inside "E-Services").
_TITLE_PARTS = re.compile(r"\s*:\s+|\s+[-\u2013\u2014]\s+")

# Titles that name a regular piece of a periodical rather than a work (normalised title keys).
_RECURRING_TITLE = (
    r"^(?:guest |invited )?editorial$|^editor s (?:note|notes|introduction)$|^preface$"
    r"|^foreword$|^book reviews?(?: column)?$|^letters?(?: to the editor)?$|^in memoriam$"
    r"|^obituar(?:y|ies)$|^reminiscences$|^(?:\w+ ){0,2}news$|^announcements?$"
    r"|^calls? for papers(?: and)?(?: announcements)?$|^(?:vice )?chair s message$"
    r"|^reports$|^articles$"
)


def recurring_titles(records: pl.DataFrame, thresholds: DedupeThresholds) -> pl.Series:
    """Whether each record's title recurs ("Editor's notes", "Book reviews"): short, and seen
    in many years of one periodical (a paper cited with its report's and its journal's years
    does not recur), or a title that names a kind of piece, not a work
    ("Editorial", "Preface"), which a small job cannot see recur. Only the new records' titles
    are counted; the library is only filtered."""
    return recurring_flag(records["title_key"], recurring_keys(records, thresholds))


def recurring_keys(records: pl.DataFrame, thresholds: DedupeThresholds) -> pl.Series:
    """The title keys `recurring_titles` finds recurring in many years of one periodical
    (`records`: at least title_key, container, year and new of every record whose title is a
    new record's short one)."""
    short = pl.col("title_key").str.count_matches(" ") < thresholds.recurring_words
    titles = records.filter(pl.col("new") & short)["title_key"].drop_nulls().unique().implode()
    return (
        records.filter(pl.col("title_key").is_in(titles) & pl.col("container").is_not_null())
        .group_by("title_key", "container")
        .agg(pl.col("year").drop_nulls().n_unique().alias("years"))
        .filter(pl.col("years") >= thresholds.recurring_years)["title_key"]
    )


def recurring_flag(title_keys: pl.Series, recurring: pl.Series) -> pl.Series:
    """`recurring_titles` of these title keys, given the keys found recurring (`recurring_keys`)."""
    found = title_keys.is_in(recurring.implode()) | title_keys.str.contains(_RECURRING_TITLE)
    return found.fill_null(False).alias("recurring")


def repeated_in_list(records: pl.DataFrame) -> pl.Series:
    """How often a record of a recurring title without volume or pages has a twin in its list
    (another record of the same recurring title and year, and no locator either): 0 never; 1 only
    twins by other authors ("Guest editorial", 2000, by Atkinson and by Atzeni and Mendelzon);
    2 a twin by the same authors ("Book review column", Aberer, twice in 2002). Authors tell the
    first kind apart; title, author and year cannot tell which of the second another list's
    record is. Only recurring titles: a list citing the same short title twice ("Deep
    learning", LeCun 2015) is the duplicate dedupe is there to find. Call after
    `recurring_titles`."""
    unlocated = pl.col("volume").is_null() & pl.col("pages").is_null()
    keys = ("source", "title_key", "year")
    authors = pl.col("surnames").list.unique().list.sort()
    return (
        records.select(
            pl.when(pl.col("recurring") & unlocated)
            .then(
                pl.when(unlocated.sum().over(*keys, authors) > 1)
                .then(2)
                .when(unlocated.sum().over(keys) > 1)
                .then(1)
                .otherwise(0)
            )
            .otherwise(0)
            .fill_null(0)
            .cast(pl.Int8)
        )
        .to_series()
        .alias("repeated")
    )


def recurring_with_topic(records: pl.DataFrame, a_rows: pl.Series, b_rows: pl.Series) -> pl.Series:
    """Whether one record of each pair has a recurring title ("Guest editorial") and the
    other's title is that name set off from the piece's topic by a colon or a dash ("Guest
    Editorial: Databases and the Web", "E-Services - Guest editorial"). A title that merely
    holds the name ("Call for Book Reviews") is another piece. Call after `recurring_titles`."""
    frame = pl.DataFrame(
        {
            "name_a": records["title_key"].gather(a_rows),
            "name_b": records["title_key"].gather(b_rows),
            "title_a": records["title"].gather(a_rows),
            "title_b": records["title"].gather(b_rows),
            "recurring_a": records["recurring"].gather(a_rows),
            "recurring_b": records["recurring"].gather(b_rows),
        }
    )
    # Recurring titles are few: only their pairs are read word by word.
    either = frame.with_row_index().filter(pl.col("recurring_a") | pl.col("recurring_b"))
    found = np.zeros(len(frame), dtype=bool)
    for index, name_a, name_b, title_a, title_b, recurring_a, recurring_b in either.iter_rows():
        found[index] = bool(
            (recurring_a and _set_off_in(name_a, title_b))
            or (recurring_b and _set_off_in(name_b, title_a))
        )
    return pl.Series(found)


def _set_off_in(name: str | None, title: str | None) -> bool:
    parts = _TITLE_PARTS.split(title or "")
    return bool(name) and len(parts) > 1 and name in {normalise_title(part) for part in parts}
