"""The bibliographic rules behind dedupe quality, on real records of the DBLP-ACM and Cora
benchmarks (tests/fixtures/dedupe/*_sample.csv, copied from ../shared/data/dedupe)."""

import csv
import html
from pathlib import Path

import polars as pl
import pytest

from bench.dedupe_sources import names, reference
from models.csl import CSLDate, CSLItem
from tasks.dedupe import DedupeResult, assign_works, records_frame

FIXTURES = Path(__file__).parent / "fixtures" / "dedupe"


@pytest.fixture(scope="module")
def dblp_acm() -> DedupeResult:
    with (FIXTURES / "dblp_acm_sample.csv").open(encoding="utf-8", newline="") as handle:
        refs = [
            reference(
                f"{row['source']}:{row['id']}",
                row["source"],
                CSLItem(
                    id=f"{row['source']}:{row['id']}",
                    type="paper-conference",
                    title=html.unescape(row["title"]),
                    author=names(row["authors"]),
                    container_title=html.unescape(row["venue"]),
                    issued=CSLDate.from_year(int(row["year"])),
                ),
            )
            for row in csv.DictReader(handle)
        ]
    return assign_works(records_frame(refs))


def work(result: DedupeResult, citation_id: str) -> str:
    row = result.assignments.filter(pl.col("citation_id") == citation_id)
    return str(row["work_id"][0])


def test_dropped_subtitle_is_the_same_work(dblp_acm: DedupeResult) -> None:
    # "Observations on the ODMG-93 Proposal" for "... Proposal for an object-oriented database
    # language": same author, year and journal.
    assert work(dblp_acm, "DBLP2:journals/sigmod/Kim94") == work(dblp_acm, "ACM:181552")


def test_conference_and_journal_versions_stay_apart(dblp_acm: DedupeResult) -> None:
    conference = {work(dblp_acm, "DBLP2:conf/vldb/ChakrabartiGRS00"), work(dblp_acm, "ACM:671851")}
    journal = {work(dblp_acm, "DBLP2:journals/vldb/ChakrabartiGRS01"), work(dblp_acm, "ACM:767147")}
    assert len(conference) == 1  # "VLDB" and "Very Large Data Bases", 2000
    assert len(journal) == 1  # "VLDB J." and "The VLDB Journal", 2001
    assert conference != journal


def test_erratum_with_a_bare_hyphen_is_linked_not_merged(dblp_acm: DedupeResult) -> None:
    article = work(dblp_acm, "DBLP2:journals/vldb/PapazogluK97")
    erratum = work(dblp_acm, "ACM:765560")  # "Erratum-A database model for object dynamics"
    assert work(dblp_acm, "ACM:765549") == article
    assert work(dblp_acm, "DBLP2:journals/vldb/PapazogluK97a") == erratum
    assert article != erratum
    links = dblp_acm.links.filter(pl.col("kind") == "erratum-of")
    assert (erratum, article) in set(zip(links["work_id_a"], links["work_id_b"], strict=True))


def test_same_first_page_makes_up_for_a_garbled_title() -> None:
    # Three Cora citations of Fahlman & Lebiere (NIPS 2, pp. 524-532), one missing a title word.
    with (FIXTURES / "cora_sample.csv").open(encoding="utf-8", newline="") as handle:
        refs = [
            reference(
                f"cora:{row['id']}",
                "cora",
                CSLItem(
                    id=f"cora:{row['id']}",
                    title=row["title"].strip(" .,"),
                    author=names(row["author"]),
                    issued=CSLDate.from_year(1990),
                    volume=row["volume"].strip(" .,") or None,
                    page=row["pages"].strip(" .,") or None,
                ),
            )
            for row in csv.DictReader(handle)
        ]
    result = assign_works(records_frame(refs))
    assert result.assignments["work_id"].n_unique() == 1
