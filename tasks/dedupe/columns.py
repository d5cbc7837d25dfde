"""Periodical departments ("Editorial", "Book review column"): titles that name a recurring
column rather than one work, and how often a list holds one twice in a year."""

import polars as pl

from tasks.dedupe.thresholds import DedupeThresholds

# Titles that name a periodical's department rather than a work (normalised title keys).
_COLUMN_TITLE = (
    r"^(?:guest |invited )?editorial$|^editor s (?:note|notes|introduction)$|^preface$"
    r"|^foreword$|^book reviews?(?: column)?$|^letters?(?: to the editor)?$|^in memoriam$"
    r"|^obituar(?:y|ies)$|^reminiscences$|^(?:\w+ ){0,2}news$|^announcements?$"
    r"|^calls? for papers(?: and)?(?: announcements)?$|^(?:vice )?chair s message$"
    r"|^reports$|^articles$"
)


def recurring_titles(records: pl.DataFrame, thresholds: DedupeThresholds) -> pl.Series:
    """Whether each record's title is a recurring column ("Editor's notes", "Book reviews"):
    short, and seen in many years of one periodical (a paper cited with its report's and its
    journal's years is no column), or a title that names a kind of piece, not a work
    ("Editorial", "Preface"), which a small job cannot see recur. Only the new records' titles
    are counted; the library is only filtered."""
    short = pl.col("title_key").str.count_matches(" ") < thresholds.column_words
    titles = records.filter(pl.col("new") & short)["title_key"].drop_nulls().unique().implode()
    columns = (
        records.filter(pl.col("title_key").is_in(titles) & pl.col("container").is_not_null())
        .group_by("title_key", "container")
        .agg(pl.col("year").drop_nulls().n_unique().alias("years"))
        .filter(pl.col("years") >= thresholds.column_years)["title_key"]
    )
    recurring = records["title_key"].is_in(columns.implode()) | records["title_key"].str.contains(
        _COLUMN_TITLE
    )
    return recurring.fill_null(False).alias("recurring")


def repeated_in_list(records: pl.DataFrame) -> pl.Series:
    """How often a record of a recurring column without volume or pages has a twin in its list
    (another record of the same column title and year, and no locator either): 0 never; 1 only
    twins by other authors ("Guest editorial", 2000, by Atkinson and by Atzeni and Mendelzon);
    2 a twin by the same authors ("Book review column", Aberer, twice in 2002). Authors tell the
    first kind apart; title, author and year cannot tell which of the second another list's
    record is. Only columns: a list citing the same short title twice ("Deep learning", LeCun
    2015) is the duplicate dedupe is there to find. Call after `recurring_titles`."""
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
