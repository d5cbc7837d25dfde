"""Dedupe of scraped, garbled Google Scholar records against DBLP's: real labelled pairs of Ditto's
DBLP-Scholar validation split (tests/fixtures/dedupe/dblp_scholar_sample.txt), read by the
benchmark's reader (bench/dedupe_sources.py)."""

from pathlib import Path

import pytest

from bench.dedupe import dedupe_linked, pair_scores, versions
from bench.dedupe_sources import Labelled, LabelledPair, dblp_scholar, ditto_item

SAMPLE = Path(__file__).parent / "fixtures" / "dedupe" / "dblp_scholar_sample.txt"


@pytest.fixture(scope="module")
def sample() -> tuple[list[Labelled], list[LabelledPair]]:
    return dblp_scholar(SAMPLE)


def test_a_ditto_record_is_read_as_a_citation() -> None:
    item = ditto_item(
        "Scholar:1",
        "COL title VAL on-demand data elevation in a hierarchical multimedia storage server "
        "COL authors VAL p triantallou , t papadakis COL venue VAL proc . of 23rd intl. conf . "
        "on very large data bases , vldb , COL year VAL 1997.0",
    )
    assert item.title == "on-demand data elevation in a hierarchical multimedia storage server"
    assert [(n.given, n.family) for n in item.author or []] == [
        ("p", "triantallou"),
        ("t", "papadakis"),
    ]
    assert item.container_title == "proc . of 23rd intl. conf . on very large data bases , vldb"
    assert item.year() == 1997


def test_one_record_text_is_one_record(sample: tuple[list[Labelled], list[LabelledPair]]) -> None:
    records, pairs = sample
    ids = [r.reference.citation_id for r in records]
    assert len(ids) == len(set(ids))
    assert {p.a for p in pairs} | {p.b for p in pairs} == set(ids)
    # DBLP is one list; every Scholar record is a list of its own.
    sources = {r.reference.provenance.source_file for r in records if r.source == "Scholar"}
    assert len(sources) == sum(r.source == "Scholar" for r in records)


def test_no_pair_labelled_distinct_is_matched(
    sample: tuple[list[Labelled], list[LabelledPair]],
) -> None:
    records, pairs = sample
    work_of, links = dedupe_linked([records])
    precision, _, _ = pair_scores(pairs, work_of, versions(links))
    assert precision == 1.0
