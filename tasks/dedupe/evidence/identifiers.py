"""What a pair's records name outright: identifiers (one, or two that conflict), the registry's
relation between them, notices (errata, retractions), preprint stage, publication form (demo,
poster, introduction), book and list."""

from typing import NamedTuple

import polars as pl

from tasks.dedupe.candidates import CHAPTER_TYPES
from tasks.dedupe.evidence.sides import both, differ, same
from tasks.dedupe.evidence.titles import Titles
from tasks.dedupe.records import CONFLICT_KINDS
from tasks.dedupe.thresholds import DedupeThresholds

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


class Identifiers(NamedTuple):
    same_doi: pl.Expr
    same_pmid: pl.Expr
    same_pmcid: pl.Expr
    same_arxiv: pl.Expr
    same_isbn: pl.Expr
    conflict: pl.Expr  # two values of one identifier kind (CONFLICT_KINDS): two works
    url_ok: pl.Expr  # one URL, the titles not saying otherwise
    same_citation: pl.Expr  # one citation stored again, unchanged
    related: pl.Expr  # the registry relates the two
    relation_kind: pl.Expr  # ... as this link kind
    relation_forward: pl.Expr  # ... from a to b
    one_notice: pl.Expr  # one side is a notice (erratum, retraction, concern), the other not
    notice_kind: pl.Expr  # the link kind of that notice
    notice_first: pl.Expr  # a is the notice
    notices_apart: pl.Expr  # not notices of one kind
    stages_apart: pl.Expr  # a preprint and a published work
    preprint_first: pl.Expr  # a is the preprint
    book_title_ok: pl.Expr  # titles that do not contradict one ISBN
    same_book: pl.Expr  # one ISBN, or chapters of one book
    forms_apart: pl.Expr  # other publication forms (a demo and a paper)
    same_source: pl.Expr  # one reference list


def identifiers(th: DedupeThresholds, wording: Titles) -> Identifiers:
    col = pl.col
    chapters = (
        col("type_a").is_in(CHAPTER_TYPES) & col("type_b").is_in(CHAPTER_TYPES) & same("container")
    ).fill_null(False)
    return Identifiers(
        same_doi=same("doi"),
        same_pmid=same("pmid"),
        same_pmcid=same("pmcid"),
        same_arxiv=same("arxiv"),
        same_isbn=same("isbn"),
        conflict=pl.any_horizontal([differ(kind) for kind in CONFLICT_KINDS]),
        # A shared URL names one work unless the titles say otherwise: a landing page holds
        # every year's report ("... tobacco epidemic 2019", "... 2021"). Years are not
        # compared: a web page is cited with the year it was read.
        url_ok=(
            same("url")
            & (~both("title_key") | (col("title_sim") >= th.url_title)).fill_null(False)
            & ~wording.numerals_apart
        ),
        same_citation=same("citation_id") & same("fingerprint"),
        related=col("relation").is_not_null(),
        relation_kind=col("relation").replace_strict(
            {k: v[0] for k, v in RELATION_LINKS.items()}, default=col("relation")
        ),
        relation_forward=(col("relation_from") == col("a"))
        == col("relation").replace_strict(
            {k: v[1] for k, v in RELATION_LINKS.items()}, default=True, return_dtype=pl.Boolean
        ),
        one_notice=col("notice_a").is_null() != col("notice_b").is_null(),
        notice_kind=pl.coalesce("notice_a", "notice_b").replace_strict(NOTICE_LINKS, default=None),
        notice_first=col("notice_a").is_not_null(),
        notices_apart=~col("notice_a").eq_missing(col("notice_b")),
        stages_apart=differ("preprint"),
        preprint_first=col("preprint_a"),
        book_title_ok=wording.title_ok | wording.dropped_part | ~both("title_key"),
        same_book=same("isbn") | chapters,
        # A list holding a demo, poster or guest editor's introduction and a piece of the same
        # title holds two publications; across lists the mark may be a citer's, so there the
        # pair only waits behind pairs of one form.
        forms_apart=~col("form_a").eq_missing(col("form_b")),
        same_source=same("source"),
    )
