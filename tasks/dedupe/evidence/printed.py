"""What a pair's publication facts say: year, venue and its kind, volume, pages; whether they
place two citations in one printing or in two."""

from typing import NamedTuple

import polars as pl

from tasks.dedupe.evidence.authors import Authors
from tasks.dedupe.evidence.sides import both, differ, same
from tasks.dedupe.thresholds import DedupeThresholds


class Printed(NamedTuple):
    year_gap: pl.Expr  # years apart (null where one is undated)
    year_ok: pl.Expr  # the years within the window, or one unknown
    paged: pl.Expr  # the same first page stands in for a garbled title
    in_print: pl.Expr  # the same year and volume or first page: one printing
    placed: pl.Expr  # volume and first page by the same authors, dated or not
    bare: pl.Expr  # one side cited with neither year nor venue
    venues_apart: pl.Expr  # kinds of venue (journal, proceedings) that make two publications
    reprinted: pl.Expr  # other pages in another year: another printing
    elsewhere: pl.Expr  # in one list, other pages in another venue of any year: another printing
    unplaced_apart: pl.Expr  # two years or more apart, one naming no venue
    earlier_in_journal: pl.Expr  # the earlier of the two printed in a journal
    located: pl.Expr  # where a title recurs, what places the two as one piece
    topic: pl.Expr  # a recurring title's piece cited by its topic, placed alike


def printed(th: DedupeThresholds, people: Authors) -> Printed:
    col = pl.col
    year_gap = (col("year_a") - col("year_b")).abs()
    # The same first page (and no other volume) in the same year stands in for a garbled
    # title: "The cascade correlation architecture" for "... learning architecture", pp. 524-.
    volume_numbers = [col(f"volume_{x}").str.extract(r"(\d+)") for x in ("a", "b")]
    volumes_apart = (volume_numbers[0] != volume_numbers[1]).fill_null(False)
    paged = (
        col("same_page")
        & (col("title_sim") >= th.floor)
        & people.same_authors
        & both("year")
        & (year_gap <= th.year_window)
        & ~volumes_apart
    ).fill_null(False)
    # The same year and the same volume or first page place two citations in one printing: there
    # a title less alike (or none at all) still names the same work, "The cascade correlation
    # architecture", vol. 2, 1990 for "... learning architecture"; "Aha, D. W. (1991). Machine
    # Learning, 6, 37-66." without its title.
    in_print = (
        same("year")
        & (same("volume") | col("same_page"))
        & (col("title_sim") >= th.floor).fill_null(True)
    )
    # Volume and first page place a citation in print with or without its year: by the same
    # authors in no other venue, they name the article under a title less alike ("Incremental
    # learning of decision trees", Machine Learning 4, 161-186, 1989, and the undated
    # "Incremental induction of decision trees", 4, 161-186).
    placed = (
        (volume_numbers[0] == volume_numbers[1])
        & col("same_page")
        & people.same_authors
        & (col("title_sim") >= th.floor).fill_null(True)
        & (col("venues_alike") | ~both("container"))
    ).fill_null(False)
    bare_a, bare_b = (col(f"year_{x}").is_null() & col(f"container_{x}").is_null() for x in "ab")
    # A journal article and a conference paper (or report) of one title are two versions; so
    # are a journal article and a paper in a venue not named a journal ("VLDB", "Very Large
    # Data Bases") from another year: the extended journal version of a conference paper.
    journal_a, journal_b = col("venue_kind_a") == "journal", col("venue_kind_b") == "journal"
    unnamed_a = col("container_a").is_not_null() & col("venue_kind_a").is_null()
    unnamed_b = col("container_b").is_not_null() & col("venue_kind_b").is_null()
    # In one list, a venue named a journal or proceedings and an unrelated one not so named
    # ("SIGMOD Conference", "VLDB") are two publications of one paper; across lists they may be
    # a citer's slip, but not two years or more apart: a conference paper and the journal
    # version the venue table does not name ("SIGMOD Conference", 1998, and "Information
    # Systems", 2001).
    kind_a, kind_b = col("venue_kind_a").is_not_null(), col("venue_kind_b").is_not_null()
    venues_apart = (
        differ("venue_kind")
        | (((journal_a & unnamed_b) | (journal_b & unnamed_a)) & differ("year"))
        | (((kind_a & unnamed_b) | (kind_b & unnamed_a)) & ~col("venues_alike") & same("source"))
        | (
            ((kind_a & unnamed_b) | (kind_b & unnamed_a) | (unnamed_a & unnamed_b))
            & ~col("venues_alike")
            & (year_gap >= 2)
        )
    ).fill_null(False)
    # A recurring title is one work only for the same year and issue locator, or for the same
    # year and authors where neither list holds that title twice in the year, or for the same
    # year and author list where neither holds it twice by those authors.
    twins = pl.max_horizontal("repeated_a", "repeated_b")
    located = same("year") & (
        same("volume")
        | same("pages")
        | ((twins == 0) & people.same_authors)
        | ((twins <= 1) & people.same_list)
    )
    return Printed(
        year_gap=year_gap,
        year_ok=(~both("year") | (year_gap <= th.year_window)).fill_null(False),
        paged=paged,
        in_print=in_print,
        placed=placed,
        bare=bare_a | bare_b,
        venues_apart=venues_apart,
        reprinted=col("pages_apart") & differ("year"),
        # In one list, other pages in another venue are another printing even in one year: a
        # paper at LREC 2020 and its French version at TALN 2020 under one title (across lists
        # a citer's slip: Cora's citations of one paper disagree so).
        elsewhere=col("pages_apart") & ~col("venues_alike").fill_null(True) & same("source"),
        # A citation that names no venue, two years or more from the paper, is another
        # printing of it (the report before it, the journal version after): "ecobase: database
        # and web technologies ...", 1999, no venue, and "the ecobase project: ...", SIGMOD
        # Record 2001.
        unplaced_apart=(
            (year_gap >= 2) & (col("container_a").is_null() | col("container_b").is_null())
        ).fill_null(False),
        # (A venue of no known kind is no journal: unknown, it must not void a version.)
        earlier_in_journal=pl.when(col("year_a") < col("year_b"))
        .then(journal_a)
        .otherwise(journal_b)
        .fill_null(False),
        located=located,
        # A recurring title's piece cited by its topic too, by the same editors, year and venue.
        topic=col("recurring_topic")
        & same("year")
        & people.same_list
        & col("venues_alike").fill_null(False),
    )
