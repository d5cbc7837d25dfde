"""Scoring candidate pairs and deciding for each: the same work, related works, or distinct.

Similarities come for all pairs at once (tasks/dedupe/similarity.py); the evidence about a pair
is named pieces (`_evidence`: titles alike, authors agreeing, venues apart, ...) and the
decision is a table of named rules over them (`RULES`, in priority order), evaluated as polars
expressions.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from polars.expr.whenthen import ChainedThen, Then

from tasks.dedupe.candidates import CHAPTER_TYPES
from tasks.dedupe.records import CONFLICT_KINDS
from tasks.dedupe.recurring import recurring_with_topic
from tasks.dedupe.similarity import (
    SURNAME_SCORERS,
    TITLE_SCORERS,
    TITLE_WORDS_SCORERS,
    first_page,
    part_similarity,
    similarity,
    teams_apart,
    venues_alike,
)
from tasks.dedupe.thresholds import DedupeThresholds
from tasks.dedupe.weights import in_domain, load_weights, with_scraped_columns

MERGE, LINK, DISTINCT = "merge", "link", "distinct"

# Crossref relation -> (link kind, whether the record holding the relation is the link's source).
RELATION_LINKS = {
    "is-preprint-of": ("preprint-of", True),
    "has-preprint": ("preprint-of", False),
    "is-identical-to": ("co-publication", True),
    "is-version-of": ("version-of", True),
    "has-version": ("version-of", False),
    "is-part-of": ("part-of", True),
    "has-part": ("part-of", False),
}
NOTICE_LINKS = {
    "erratum": "erratum-of",
    "retraction": "retraction-of",
    "concern": "expression-of-concern-for",
}
PAIR_COLUMNS = (
    "citation_id", "fingerprint", "doi", "pmid", "pmcid", "arxiv", "isbn", "url", "title_key",
    "notice", "form", "first_author", "first_author_words", "surnames", "initials", "year",
    "container", "type", "preprint", "volume", "pages", "recurring", "repeated", "venue_kind",
    "source",
)  # fmt: skip
# Numbers in a title tell parts and editions apart: "Part II", "... 2000", "Tcl/Tk 8".
_ROMAN = r"\bpart (?:i{1,3}|iv|vi{0,3}|ix|x)\b|\b(?:ii|iii|iv|vi|vii|viii|ix)\b"
_NUMERALS = rf"\b\d+\b|{_ROMAN}"
# Where the other title's numbers are looked for, a lone "i" counts too: "part i" is the
# "i" of "probabilistic temporal databases i algebra" (numbers are compared without "part").
_NUMERALS_ANYWHERE = rf"\d+|{_ROMAN}|\bi\b"


_WHOLE = 0.999  # a part similarity this high: the shorter title is inside the longer
# Two author lists that share nobody are one team scraped wrong only where the titles are all
# but the same (at 0.90, DBLP-ACM joins one group's two papers of one year) and the names are
# swapped given for family ('c sophie' for S. Cluet) in at least half the places: otherwise two
# teams under one title in one year are two papers (surveys, "... a review").
_swapped_team = (pl.col("title_sim") >= 0.95) & (pl.col("swapped_share") >= 0.5)


def _numerals(title: pl.Expr, pattern: str) -> pl.Expr:
    return title.str.extract_all(pattern).list.eval(pl.element().str.replace(r"^part ", ""))


@dataclass(frozen=True)
class Rule:
    """One row of the decision table: when all the evidence named in `when` holds (and no rule
    above it did), the pair is `decision`, labelled with its merge reason or link kind (`label`,
    or the evidence `label_from` naming it); a link points from a to b where the evidence
    `forward` holds."""

    name: str
    when: tuple[str, ...]
    decision: str
    label: str | None = None
    label_from: str | None = None
    forward: str | None = None


# The decision table, in priority order: the first rule that holds decides; where none does,
# the pair is distinct. The evidence each rule names is defined in `_evidence`.
RULES: tuple[Rule, ...] = (
    Rule("one DOI", ("same_doi",), MERGE, "doi"),
    Rule("the same citation again", ("same_citation",), MERGE, "citation"),
    Rule(
        "related as the registry says", ("related",), LINK,
        label_from="relation_kind", forward="relation_forward",
    ),
    Rule(
        "a notice and the work it is about", ("one_notice", "title_ok"), LINK,
        label_from="notice_kind", forward="notice_first",
    ),
    Rule("notices of other kinds", ("notices_apart",), DISTINCT),
    Rule(
        "a preprint and its version", ("stages_apart", "preprint_version"), LINK, "preprint-of",
        forward="preprint_first",
    ),
    Rule("a preprint and another work", ("stages_apart",), DISTINCT),
    Rule("one book", ("same_isbn", "book_title_ok"), MERGE, "isbn"),
    Rule("parts of one book", ("same_book",), LINK, "chapter-of-same-book"),
    Rule("one work under two identifiers", ("conflict", "fuzzy"), LINK, "co-publication"),
    Rule(
        "one paper printed twice, under two identifiers", ("conflict", "printed_twice"), LINK,
        "version-of",
    ),
    Rule("other identifiers", ("conflict",), DISTINCT),
    Rule("one PMID", ("same_pmid",), MERGE, "pmid"),
    Rule("one PMCID", ("same_pmcid",), MERGE, "pmcid"),
    Rule("one arXiv id", ("same_arxiv",), MERGE, "arxiv"),
    Rule("one URL", ("url_ok",), MERGE, "url"),
    Rule("two forms of one title in one list", ("forms_apart", "same_source"), DISTINCT),
    Rule("alike", ("fuzzy",), MERGE, "fuzzy"),
    Rule("one paper printed twice", ("printed_twice",), LINK, "version-of"),
)  # fmt: skip


def score_pairs(
    records: pl.DataFrame, pairs: pl.DataFrame, thresholds: DedupeThresholds
) -> pl.DataFrame:
    """`pairs` (a, b, relation, relation_from) with similarities and the decision:
    `decision` merge | link | distinct, `label` (merge reason or link kind), `forward` (a link
    points from a to b), `score` in [0, 1] (of a merge), `vote` (for average linkage),
    `venues_alike` and `forms_alike` (both demos, posters, introductions or neither: merges
    between alike records go first)."""
    scored, apart = compared_pairs(records, pairs, thresholds)
    # Lazily, so that polars evaluates each rule once (common subexpressions): the decision,
    # label, link direction, score and vote all read the same rules; eagerly each read them anew.
    decided = (
        scored.lazy()
        .with_columns(**_decide(thresholds))
        .filter((pl.col("decision") == LINK) | _within_window(thresholds))
        .select(
            "a", "b", "decision", "label", "forward", "score", "vote", "venues_alike", "forms_alike"
        )
        .collect()
    )
    return pl.concat([decided, apart], how="vertical_relaxed")


def _within_window(thresholds: DedupeThresholds) -> pl.Expr:
    """Pairs title blocking met beyond the usual year window (`Blocking.version_window`) are
    there only to find late versions: unless linked as one, they were never compared before and
    must not vote against a merge in average linkage. Pairs met by a shared key (a DOI cited with
    a preprint's year and a journal's) keep whatever gap they have."""
    gap = (pl.col("year_a") - pl.col("year_b")).abs()
    return pl.col("keyed") | (gap <= thresholds.blocking.year_window).fill_null(True)


def compared_pairs(
    records: pl.DataFrame, pairs: pl.DataFrame, thresholds: DedupeThresholds
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pairs the rules decide, with both records' keys (`<column>_a`, `<column>_b`) and
    their similarities; and the pairs too unlike to reach the rules, already decided distinct."""
    title_sim = similarity(records["title_key"], pairs["a"], pairs["b"], TITLE_SCORERS)
    # Where numbers may differ, whether one title is part of the other tells a dropped subtitle.
    numbered = records["title_key"].str.contains(r"\d").fill_null(False)
    numbered = numbered.gather(pairs["a"]) | numbered.gather(pairs["b"])
    first_page_a, first_page_b = (first_page(records["pages"], pairs[x]) for x in ("a", "b"))
    modelled = in_domain(records, pairs["a"], pairs["b"])
    pairs = pairs.with_columns(
        modelled=modelled,
        # Only where the learned weights decide, which read it.
        title_words_sim=similarity(
            records["title_key"], pairs["a"], pairs["b"], TITLE_WORDS_SCORERS, where=modelled
        ),
        title_sim=title_sim,
        part_sim=part_similarity(
            records["title_key"],
            pairs["a"],
            pairs["b"],
            ((title_sim < thresholds.title) | ((title_sim < 1.0) & numbered)).fill_null(False),
            thresholds.blocking.contained_words,
        ),
        same_page=first_page_a.eq(first_page_b).fill_null(False),
        pages_apart=first_page_a.ne(first_page_b).fill_null(False),
        recurring_topic=recurring_with_topic(records, pairs["a"], pairs["b"]),
        # Only by the same first author: a title of two or three words is inside many others
        # (at scale, comparing them all by the rules cost a sixth more time).
        inside=_inside(
            records["title_key"], pairs["a"], pairs["b"], thresholds.blocking.contained_words - 1
        )
        & records["first_author"]
        .gather(pairs["a"])
        .eq(records["first_author"].gather(pairs["b"]))
        .fill_null(False),
    )
    # Pairs met by title words alone with titles below every title threshold (and neither a
    # dropped subtitle or head, a shared first page nor a recurring title's topic to excuse it) can
    # only be "distinct": at scale they are most candidates, so they skip the rules. The ones
    # that are still alike vote in average linkage by the whole titles or the shorter inside the
    # longer, whichever is likelier (two garbled copies of one work, "ã cents range queries in
    # olap data cubes ã cents" and "range queries in data cubes", must not keep the work's
    # citations apart); the rest are dropped.
    by_title = ~pl.col("keyed") & pl.col("title_sim").is_not_null()
    lowest = min(thresholds.title, thresholds.short_title, thresholds.corroborated_title)
    excused = (
        (pl.col("part_sim") >= thresholds.title)
        | (pl.col("same_page") & (pl.col("title_sim") >= thresholds.floor))
        | pl.col("recurring_topic")
        | pl.col("inside")
    )
    below = by_title & (pl.col("title_sim") < lowest) & ~excused
    alike = pairs.filter(below & (pl.col("title_sim") >= thresholds.floor))
    years = {f"year_{side}": records["year"].gather(alike[side]) for side in ("a", "b")}
    apart = (
        alike.with_columns(**years).filter(_within_window(thresholds))
    ).select(
        "a", "b", decision=pl.lit(DISTINCT), label=pl.lit(None, pl.Utf8),
        forward=pl.lit(None, pl.Boolean), score=pl.lit(0.0),
        vote=pl.max_horizontal("title_sim", "part_sim"),
        venues_alike=pl.lit(None, pl.Boolean), forms_alike=pl.lit(None, pl.Boolean),
    )  # fmt: skip
    pairs = pairs.filter(~below)
    a, b = pairs["a"], pairs["b"]
    side = records.select(PAIR_COLUMNS)
    left = side[a].rename(lambda c: f"{c}_a")
    right = side[b].rename(lambda c: f"{c}_b")
    scored = pl.concat([pairs, left, right], how="horizontal").with_columns(
        author_sim=similarity(records["first_author"], a, b, SURNAME_SCORERS),
        teams_apart=teams_apart(
            records["surnames"].gather(a),
            records["surnames"].gather(b),
            thresholds.author,
            thresholds.team_strangers,
        ),
        venues_alike=venues_alike(records["container"].gather(a), records["container"].gather(b)),
    )
    # The learned probability, only where the weights decide (few pairs at scale: its features
    # read title words one by one).
    weights = thresholds.weights or load_weights()
    modelled = scored["modelled"]
    decided = with_scraped_columns(scored.filter(modelled), records).select(
        weights.probability().alias("learned_p"), "swapped_share"
    )
    rows = modelled.arg_true()
    return scored.with_columns(
        pl.Series(name, [None] * scored.height, dtype=pl.Float64).scatter(rows, decided[name])
        for name in decided.columns
    ), apart


def _inside(titles: pl.Series, a: pl.Series, b: pl.Series, most_words: int) -> pl.Series:
    """Whether the shorter title of rows a[i], b[i], of two to `most_words` words (too short a
    part for `part_similarity`), is word for word inside the longer: "indexing on air" in
    "energy efficient indexing on air"; "client server paradise" behind the glued names "jm
    patel jb yu". Read only for such short titles: at scale most pairs have none."""
    words = (titles.str.count_matches(" ").fill_null(-1) + 1).to_numpy()
    fewest = np.minimum(words[a.to_numpy()], words[b.to_numpy()])
    rows = np.flatnonzero((fewest >= 2) & (fewest <= most_words))
    pair = pl.DataFrame({"a": titles.gather(a.gather(rows)), "b": titles.gather(b.gather(rows))})
    a_first = pl.col("a").str.len_chars() <= pl.col("b").str.len_chars()
    short = pl.when(a_first).then("a").otherwise("b")
    long = pl.when(a_first).then("b").otherwise("a")
    found = pair.select(
        (
            (short != long) & (" " + long + " ").str.contains(" " + short + " ", literal=True)
        ).fill_null(False)
    ).to_series()
    inside = np.zeros(len(a), dtype=bool)
    inside[rows] = found.to_numpy()
    return pl.Series(inside)


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


def _both(column: str) -> pl.Expr:
    return pl.col(f"{column}_a").is_not_null() & pl.col(f"{column}_b").is_not_null()


def _same(column: str) -> pl.Expr:
    return (_both(column) & (pl.col(f"{column}_a") == pl.col(f"{column}_b"))).fill_null(False)


def _differ(column: str) -> pl.Expr:
    return (_both(column) & (pl.col(f"{column}_a") != pl.col(f"{column}_b"))).fill_null(False)


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


def _evidence(th: DedupeThresholds) -> dict[str, pl.Expr]:
    """What is known about a pair, each piece named: the rule table (RULES) reads it by name."""
    col = pl.col
    words = pl.min_horizontal(
        col("title_key_a").str.count_matches(" ") + 1, col("title_key_b").str.count_matches(" ") + 1
    )
    short = (words < th.short_words).fill_null(False)
    title_ok = (
        _both("title_key")
        & (col("title_sim") >= pl.when(short).then(th.short_title).otherwise(th.title))
    ).fill_null(False)
    initials_ok = ~_both("initials") | (
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
    author_ok = (
        ~_both("first_author") | ((col("author_sim") >= th.author) & initials_ok) | listed | shared
    ).fill_null(False)
    same_authors = (
        _both("first_author") & ((col("author_sim") >= th.author) | listed | shared)
    ).fill_null(False)
    # The same author list, give or take a misspelt or dropped name (one in five).
    longest = pl.max_horizontal(
        col("surnames_a").list.unique().list.len(), col("surnames_b").list.unique().list.len()
    )
    same_list = ((common > 0) & (5 * common >= 4 * longest)).fill_null(False)
    pages_apart = col("pages_apart")
    # Sources append and reword ("... - Book Review", "B2B" for "business to business") and
    # drop subtitles: a looser title counts when the same authors and the same year back it,
    # and no other first page contradicts it ("The recurrent cascade-correlation architecture",
    # pp. 190-196, is not "The cascade-correlation learning architecture", pp. 524-532).
    # A title inside the other, the same year, where one side names no author to back or
    # contradict it ("random sampling for histogram construction", an index's authorless entry,
    # and "... how much is enough", Chaudhuri et al.), is backed as well.
    dropped_part = col("part_sim") >= th.title
    unauthored = col("first_author_a").is_null() | col("first_author_b").is_null()
    backed = (
        _both("title_key")
        & ~short
        & (
            ((col("title_sim") >= th.corroborated_title) | dropped_part) & same_authors
            | dropped_part & unauthored
        )
        & _same("year")
        & ~pages_apart
    ).fill_null(False)
    # A title reworded around the same words ("Learning problem solving heuristics by
    # experimentation" for "Learning by experimentation: acquiring and refining problem-solving
    # heuristics"), so backed, is as good as a title alike: it says nothing the other does not.
    title_words = [col(f"title_key_{x}").str.split(" ") for x in ("a", "b")]
    reworded = backed & (
        (title_words[0].list.set_difference(title_words[1]).list.len() == 0)
        | (title_words[1].list.set_difference(title_words[0]).list.len() == 0)
    ).fill_null(False)
    year_gap = (col("year_a") - col("year_b")).abs()
    year_ok = (~_both("year") | (year_gap <= th.year_window)).fill_null(False)
    # The same first page (and no other volume) in the same year stands in for a garbled
    # title: "The cascade correlation architecture" for "... learning architecture", pp. 524-.
    volume_numbers = [col(f"volume_{x}").str.extract(r"(\d+)") for x in ("a", "b")]
    volumes_apart = (volume_numbers[0] != volume_numbers[1]).fill_null(False)
    paged = (
        col("same_page")
        & (col("title_sim") >= th.floor)
        & same_authors
        & _both("year")
        & (year_gap <= th.year_window)
        & ~volumes_apart
    ).fill_null(False)
    # The same year and the same volume or first page place two citations in one printing: there
    # a title less alike (or none at all) still names the same work, "The cascade correlation
    # architecture", vol. 2, 1990 for "... learning architecture"; "Aha, D. W. (1991). Machine
    # Learning, 6, 37-66." without its title.
    in_print = (
        _same("year")
        & (_same("volume") | col("same_page"))
        & (col("title_sim") >= th.floor).fill_null(True)
    )
    # Volume and first page place a citation in print with or without its year: by the same
    # authors in no other venue, they name the article under a title less alike ("Incremental
    # learning of decision trees", Machine Learning 4, 161-186, 1989, and the undated
    # "Incremental induction of decision trees", 4, 161-186).
    placed = (
        (volume_numbers[0] == volume_numbers[1])
        & col("same_page")
        & same_authors
        & (col("title_sim") >= th.floor).fill_null(True)
        & (col("venues_alike") | ~_both("container"))
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
    bare_a, bare_b = (col(f"year_{x}").is_null() & col(f"container_{x}").is_null() for x in "ab")
    short_ok = _both("first_author") & (
        _same("year")
        | col("same_page")
        | (
            (_same("container") | col("venues_alike").fill_null(False))
            & year_ok
            & (shared | ~_both("year"))
        )
        | (
            _same("title_key")
            & ((col("author_sim") >= th.author).fill_null(False) | shared)
            & (bare_a | bare_b)
        )
    ) | (_same("title_key") & _same("year") & unauthored)
    short_ok = short_ok | (col("inside") & shared)
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
        _differ("venue_kind")
        | (((journal_a & unnamed_b) | (journal_b & unnamed_a)) & _differ("year"))
        | (((kind_a & unnamed_b) | (kind_b & unnamed_a)) & ~col("venues_alike") & _same("source"))
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
    located = _same("year") & (
        _same("volume")
        | _same("pages")
        | ((twins == 0) & same_authors)
        | ((twins <= 1) & same_list)
    )
    # A long title, the same in one venue's year, names one work even where the author lists
    # disagree: indexes truncate long lists, credit a corporate body ("CORPORATE Fox Development
    # Team Microsoft") or a review to the reviewed book's authors, or scrape debris for names
    # ("the microsoft database research group" by "anthology"). Two works do not share a title
    # of this length in one venue and year.
    one_issue = (
        (words >= th.long_words)
        & (col("title_sim") >= th.short_title)
        & _same("year")
        & col("venues_alike")
    ).fill_null(False)
    # A recurring title's piece cited by its topic too, by the same editors, year and venue.
    topic = (
        col("recurring_topic") & _same("year") & same_list & col("venues_alike").fill_null(False)
    )
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
        & (~_both("year") | (~short & (~col("teams_apart") | _swapped_team)))
    ).fill_null(False)
    # What no likeness overrules: years too far apart, a short title unbacked, a recurring title
    # unplaced, other numbers, other kinds of venue, and other pages in another year (another
    # printing: the proceedings paper, 1988, pp. 601-606, and its journal version, 1989, pp.
    # 377-391; a typo rarely hits both).
    unstopped = (
        year_ok
        & (~short | short_ok)
        & (~(col("recurring_a") | col("recurring_b")) | located)
        & ~numerals_apart.fill_null(False)
        & ~venues_apart
        & ~(pages_apart & _differ("year"))
    )
    # A short title inside the other by the same two authors or more: a dropped head or
    # subtitle ("declarative data cleaning"), or names or a venue glued around it ("updating xml
    # acm intl"), the rules' hard stops (years, numbers, venue kinds, short titles) still apply.
    # (A longer title inside the other: its part similarity is whole.)
    inside = (col("inside") | (col("part_sim") >= _WHOLE)) & shared
    ruled_alike = (title_ok | backed | paged | in_print | placed | topic | inside) & (
        (author_ok & ~col("teams_apart")) | one_issue
    )
    fuzzy = (ruled_alike | learned) & unstopped
    # Close enough to be versions of one work: alike by the rules, or by the learned weights
    # (which weigh garbled authors, "h eui-hong" for E. Han, themselves).
    near_version = (title_ok & author_ok | learned) & (
        ~_both("year") | (year_gap <= th.preprint_years)
    ).fill_null(False)
    # A citation that names no venue, two years or more from the paper, is another printing
    # of it (the report before it, the journal version after): "ecobase: database and web
    # technologies ...", 1999, no venue, and "the ecobase project: ...", SIGMOD Record 2001.
    unplaced_apart = (
        (year_gap >= 2) & (col("container_a").is_null() | col("container_b").is_null())
    ).fill_null(False)
    # A journal version may follow its conference paper by up to six years (blocking pairs
    # such late versions by the same first author only): the same authors and the title alike
    # or the other's with a subtitle added, in no one venue ("walrus: a similarity retrieval
    # algorithm for image databases", SIGMOD 1999 and TKDE 2004).
    late_version = (
        (title_ok | dropped_part)
        & same_authors
        & (year_gap > th.preprint_years)
        & (year_gap <= th.blocking.version_window)
        & _both("container")
        & ~col("venues_alike")
        # A journal article is the later version, not the earlier: Cora's "Machine Learning
        # Journal", 1992, and "Machine Learning", 1997, are one paper, one citation misdated.
        # (A venue of no known kind is no journal: unknown, it must not void the version.)
        & ~pl.when(col("year_a") < col("year_b"))
        .then(journal_a)
        .otherwise(journal_b)
        .fill_null(False)
    ).fill_null(False)
    # One paper printed twice (a conference paper and its journal version; other pages in
    # another year) is two works, each a version of the other: the same authors (known, or
    # weighed alike), a title long enough to be one paper's, and no recurring title ("Editor's
    # notes" every year).
    apart_in_print = venues_apart | (pages_apart & _differ("year")) | unplaced_apart
    printed_twice = (
        (apart_in_print & near_version | late_version)
        & (same_authors | learned)
        & ~short
        & ~(col("recurring_a") | col("recurring_b"))
        & ~col("teams_apart")
        & ~numerals_apart.fill_null(False)
    )
    conflict = pl.any_horizontal([_differ(kind) for kind in CONFLICT_KINDS])
    one_notice = col("notice_a").is_null() != col("notice_b").is_null()
    notice_apart = ~col("notice_a").eq_missing(col("notice_b"))
    stages_apart = _differ("preprint")
    chapters = (
        col("type_a").is_in(CHAPTER_TYPES) & col("type_b").is_in(CHAPTER_TYPES) & _same("container")
    ).fill_null(False)
    relation = col("relation").replace_strict(
        {k: v[0] for k, v in RELATION_LINKS.items()}, default=col("relation")
    )
    relation_forward = (col("relation_from") == col("a")) == col("relation").replace_strict(
        {k: v[1] for k, v in RELATION_LINKS.items()}, default=True, return_dtype=pl.Boolean
    )
    notice_kind = pl.coalesce("notice_a", "notice_b").replace_strict(NOTICE_LINKS, default=None)
    same_citation = _same("citation_id") & _same("fingerprint")
    # A list holding a demo, poster or guest editor's introduction and a piece of the same title
    # holds two publications; across lists the mark may be a citer's, so there the pair only
    # waits behind pairs of one form.
    forms_apart = ~col("form_a").eq_missing(col("form_b"))
    # A shared URL names one work unless the titles say otherwise: a landing page holds every
    # year's report ("... tobacco epidemic 2019", "... 2021"). Years are not compared: a web
    # page is cited with the year it was read.
    url_ok = (
        _same("url")
        & (~_both("title_key") | (col("title_sim") >= th.url_title)).fill_null(False)
        & ~numerals_apart.fill_null(False)
    )

    # A dropped subtitle, a shared first page, a reworded title, or the same author list and
    # year behind a looser title ("GridDB: a relational interface for the grid", "... a database
    # interface to the grid") make up for a title less alike (or none): average linkage must not
    # veto such a pair on its bare title similarity. One shared author is too little for that:
    # two papers of one year may share a first author and a title's first words.
    title_part = pl.max_horizontal(
        "title_sim",
        "part_sim",
        pl.when(
            paged | in_print | placed | reworded | (backed & same_list) | topic | learned | inside
        )
        .then(th.title)
        .otherwise(None),
    )
    author_part = (
        pl.when(listed | shared).then(1.0).otherwise(col("author_sim")).fill_null(title_part)
    )
    # An unknown year is worth no more than a year off by one: a record that says less must not
    # outrank one that agrees on more (it would be the weak middle that chains two works).
    year_part = (1.0 - year_gap.clip(0, 2) / 2.0).fill_null(0.5)
    # Where both cite pages, the same first page vouches for the pair and another one counts
    # against it (merges that agree on where the work is printed go first); unknown, it is left
    # out of the mean.
    page_part = pl.when(col("same_page")).then(1.0).when(pages_apart).then(0.0)
    fuzzy_score = (
        (3 * title_part + author_part + year_part + page_part.fill_null(0.0))
        / (5 + page_part.is_not_null().cast(pl.Int8))
    ).fill_null(0.0)
    return {
        "same_doi": _same("doi"),
        "same_citation": same_citation,
        "related": col("relation").is_not_null(),
        "relation_kind": relation,
        "relation_forward": relation_forward,
        "one_notice": one_notice,
        "title_ok": title_ok,
        "notice_kind": notice_kind,
        "notice_first": col("notice_a").is_not_null(),
        "notices_apart": notice_apart,
        "stages_apart": stages_apart,
        "preprint_version": near_version | _same("arxiv"),
        "preprint_first": col("preprint_a"),
        "same_isbn": _same("isbn"),
        "book_title_ok": title_ok | dropped_part | ~_both("title_key"),
        "same_book": _same("isbn") | chapters,
        "conflict": conflict,
        "fuzzy": fuzzy,
        "printed_twice": printed_twice,
        **{f"same_{kind}": _same(kind) for kind in ("pmid", "pmcid", "arxiv")},
        "url_ok": url_ok,
        "forms_apart": forms_apart,
        "same_source": _same("source"),
        "title_part": title_part,
        "fuzzy_score": fuzzy_score,
        # Left apart by the learned weights alone, no hard stop: a scraped record too garbled
        # to vouch for (authors "esther, eric" for Pacitti and Simon), not one set apart; or
        # two undated (scraped) copies, where a hard stop reads debris ("1995 . high-concurrency
        # locking in r-trees" has a number "high-concurrency in r-trees [ c ]" lacks).
        "unvouched": col("modelled")
        & (
            ~ruled_alike & unstopped.fill_null(False)
            | (col("year_a").is_null() & col("year_b").is_null())
        ),
    }


def _decide(th: DedupeThresholds) -> dict[str, pl.Expr]:
    """The decision table read for every pair: decision, label, forward, score and vote."""
    evidence = _evidence(th)

    def first(pick: Callable[[Rule], pl.Expr]) -> pl.Expr:
        holds = [pl.all_horizontal(evidence[name] for name in rule.when) for rule in RULES]
        expr: Then | ChainedThen = pl.when(holds[0]).then(pick(RULES[0]))
        for rule, condition in zip(RULES[1:], holds[1:], strict=True):
            expr = expr.when(condition).then(pick(rule))
        return expr.otherwise(None)

    def label(rule: Rule) -> pl.Expr:
        return evidence[rule.label_from] if rule.label_from else pl.lit(rule.label, pl.Utf8)

    decision = first(lambda rule: pl.lit(rule.decision)).fill_null(DISTINCT)
    labelled = first(label)
    ruled_merge = decision.eq(MERGE) & labelled.ne("fuzzy")
    return {
        "forms_alike": ~evidence["forms_apart"],
        "decision": decision,
        "label": labelled,
        "forward": first(
            lambda rule: evidence[rule.forward] if rule.forward else pl.lit(None)
        ).cast(pl.Boolean),
        "score": pl.when(ruled_merge).then(1.0).otherwise(evidence["fuzzy_score"].round(4)),
        # A pair's say in average linkage: identifiers 1, a title match its title similarity,
        # a pair the rules set apart (author, year, identifiers, kind) 0.
        # A pair left apart only because it says too little (`unvouched`) counts like a pair too
        # unlike to compare: by its title.
        "vote": pl.when(ruled_merge)
        .then(1.0)
        .when(decision.eq(MERGE) | (decision.eq(DISTINCT) & evidence["unvouched"]))
        .then(evidence["title_part"])
        .otherwise(0.0),
    }
