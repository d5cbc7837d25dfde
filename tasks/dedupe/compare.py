"""Scoring candidate pairs and deciding for each: the same work, related works, or distinct.

Similarities come for all pairs at once (tasks/dedupe/similarity.py); the evidence about a pair
is named pieces (`evidence`, assembled from the groups of tasks/dedupe/evidence: titles alike,
authors agreeing, venues apart, ...) and the decision is a table of named rules over them
(`RULES`, in priority order), evaluated as polars expressions.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from polars.expr.whenthen import ChainedThen, Then

from tasks.dedupe.evidence.authors import authors
from tasks.dedupe.evidence.identifiers import identifiers
from tasks.dedupe.evidence.likeness import likeness, score
from tasks.dedupe.evidence.printed import printed
from tasks.dedupe.evidence.titles import titles
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

PAIR_COLUMNS = (
    "citation_id", "fingerprint", "doi", "pmid", "pmcid", "arxiv", "isbn", "url", "title_key",
    "notice", "form", "first_author", "first_author_words", "surnames", "initials", "year",
    "container", "type", "preprint", "volume", "pages", "recurring", "repeated", "venue_kind",
    "source",
)  # fmt: skip


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
# the pair is distinct. The evidence each rule names is named in `evidence`.
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
    Rule("one work under two identifiers", ("conflict", "copublished"), LINK, "co-publication"),
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


def evidence(th: DedupeThresholds) -> dict[str, pl.Expr]:
    """What is known about a pair, each piece named: the rule table (RULES) reads it by name.
    The pieces come from the groups of tasks/dedupe/evidence, each reading those before it."""
    people = authors(th)
    printing = printed(th, people)
    wording = titles(th, people, printing)
    named = identifiers(th, wording)
    alike = likeness(th, people, printing, wording)
    scored = score(th, people, printing, wording, alike)
    return {
        "same_doi": named.same_doi,
        "same_citation": named.same_citation,
        "related": named.related,
        "relation_kind": named.relation_kind,
        "relation_forward": named.relation_forward,
        "one_notice": named.one_notice,
        "title_ok": wording.title_ok,
        "notice_kind": named.notice_kind,
        "notice_first": named.notice_first,
        "notices_apart": named.notices_apart,
        "stages_apart": named.stages_apart,
        "preprint_version": alike.preprint_version,
        "preprint_first": named.preprint_first,
        "same_isbn": named.same_isbn,
        "book_title_ok": named.book_title_ok,
        "same_book": named.same_book,
        "conflict": named.conflict,
        "fuzzy": alike.fuzzy,
        "copublished": alike.copublished,
        "printed_twice": alike.printed_twice,
        "same_pmid": named.same_pmid,
        "same_pmcid": named.same_pmcid,
        "same_arxiv": named.same_arxiv,
        "url_ok": named.url_ok,
        "forms_apart": named.forms_apart,
        "same_source": named.same_source,
        "title_part": scored.title_part,
        "fuzzy_score": scored.fuzzy_score,
        "unvouched": alike.unvouched,
    }


def _decide(th: DedupeThresholds) -> dict[str, pl.Expr]:
    """The decision table read for every pair: decision, label, forward, score and vote."""
    pieces = evidence(th)

    def first(pick: Callable[[Rule], pl.Expr]) -> pl.Expr:
        holds = [pl.all_horizontal(pieces[name] for name in rule.when) for rule in RULES]
        expr: Then | ChainedThen = pl.when(holds[0]).then(pick(RULES[0]))
        for rule, condition in zip(RULES[1:], holds[1:], strict=True):
            expr = expr.when(condition).then(pick(rule))
        return expr.otherwise(None)

    def label(rule: Rule) -> pl.Expr:
        return pieces[rule.label_from] if rule.label_from else pl.lit(rule.label, pl.Utf8)

    def forward(rule: Rule) -> pl.Expr:
        return pieces[rule.forward] if rule.forward else pl.lit(None)

    decision = first(lambda rule: pl.lit(rule.decision)).fill_null(DISTINCT)
    labelled = first(label)
    ruled_merge = decision.eq(MERGE) & labelled.ne("fuzzy")
    return {
        "forms_alike": ~pieces["forms_apart"],
        "decision": decision,
        "label": labelled,
        "forward": first(forward).cast(pl.Boolean),
        "score": pl.when(ruled_merge).then(1.0).otherwise(pieces["fuzzy_score"].round(4)),
        # A pair's say in average linkage: identifiers 1, a title match its title similarity,
        # a pair the rules set apart (author, year, identifiers, kind) 0.
        # A pair left apart only because it says too little (`unvouched`) counts like a pair too
        # unlike to compare: by its title.
        "vote": pl.when(ruled_merge)
        .then(1.0)
        .when(decision.eq(MERGE) | (decision.eq(DISTINCT) & pieces["unvouched"]))
        .then(pieces["title_part"])
        .otherwise(0.0),
    }
