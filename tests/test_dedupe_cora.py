"""Cora citations as a reader of the reference list parses them (bench/citation_fields.py), and
the dedupe rules they exercise: real rows of ../shared/data/dedupe/cora, copied to
tests/fixtures/dedupe/cora_fields_sample.csv with their true cluster labels."""

import csv
from pathlib import Path

import pytest

from bench.citation_fields import split_title
from bench.dedupe_sources import cora_item, names, reference
from models.audit import Reference
from models.csl import CSLDate, CSLItem
from tasks.dedupe import DedupeResult, assign_works, records_frame

ROWS = {
    row["id"]: row
    for row in csv.DictReader(
        (Path(__file__).parent / "fixtures" / "dedupe" / "cora_fields_sample.csv").open(
            encoding="utf-8", newline=""
        )
    )
}


def item(row_id: str) -> CSLItem:
    return cora_item(ROWS[row_id])


def families(row_id: str) -> list[str | None]:
    return [name.family for name in item(row_id).author or []]


def test_a_surname_left_in_the_title_goes_back_to_the_authors() -> None:
    # author "J. R." / title 'Quinlan (1993) "Combining instance-based and model-based learning",'
    quinlan = item("321")
    assert (families("321"), quinlan.title, quinlan.year()) == (
        ["Quinlan"],
        "Combining instance-based and model-based learning",
        1993,
    )
    # author "Fahlman, S. E. & C." / title "Lebiere (1990), The Cascade-Correlation ..."
    assert families("1016") == ["Fahlman", "Lebiere"]
    assert item("1016").title == "The Cascade-Correlation Learning Architecture"
    # JedAI's lower-cased Cora (record 344): no capital opens the spilled surname.
    assert split_title(
        "schapire (1996), experiments with a new boosting algorithm,", "freund, Y. & R.E."
    ) == (
        "experiments with a new boosting algorithm",
        "freund, Y. & R.E. schapire",
        1996,
    )


def test_a_title_head_left_in_the_authors_goes_back_to_the_title() -> None:
    # author "P. Utgoff. ID5:" / title "An Incremental ID3."
    assert (families("481"), item("481").title) == (["Utgoff"], "ID5: An Incremental ID3")


def test_years_riding_in_titles_and_author_lists() -> None:
    assert (item("535").title, item("535").year()) == (
        "Incremental induction of decision trees",
        1989,
    )
    assert (item("54").title, item("54").year()) == (
        "Multivariate decision trees",
        None,
    )  # in press
    assert (families("1459"), item("1459").year()) == (["Nienhuys-Cheng", "Wolf"], 1996)
    assert (families("1593")[0], item("1593").year()) == ("Pazzani", 1992)  # "..., Dennis 1992."


def test_initials_after_the_surname() -> None:
    assert families("1766") == ["Aha", "Kibler", "Albert"]  # "Aha DW, Kibler D, Albert MK."
    assert families("1555") == ["Pazzani", "Kibler"]  # "Pazzani M. and Kibler D."


def test_volume_and_pages_are_numbers() -> None:
    assert (item("1766").volume, item("1766").page) == ("6", "37-66")  # "6:", "37-66."
    assert (item("1016").page, item("1149").page) == ("524-532", "524-532")  # "pp. 524-532."
    assert item("30").type == "report"  # type "COINS Technical Report 92-83,"


@pytest.fixture(scope="module")
def sample() -> DedupeResult:
    refs = [reference(f"cora:{i}", "cora", cora_item(row)) for i, row in ROWS.items()]
    return assign_works(records_frame(refs))


def work(result: DedupeResult, row_id: str) -> str:
    works = dict(zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True))
    return works[f"cora:{row_id}"]


def test_an_untitled_citation_is_found_by_its_place_in_print(sample: DedupeResult) -> None:
    # "Aha, D. W., D. Kibler, and M. K. Albert, 1991. Machine Learning, Vol 6, pp. 37-66," with
    # no title, and the titled citations of the same article.
    assert {work(sample, i) for i in ("1336", "1337", "1345", "1411", "1766")} == {
        work(sample, "1336")
    }


def test_other_pages_in_another_year_are_another_version(sample: DedupeResult) -> None:
    # "Perceptron trees: a case study in hybrid concept representations": AAAI-88 pp. 601-606
    # and Connection Science 1989 pp. 377-391.
    assert work(sample, "491") == work(sample, "492")
    assert work(sample, "576") == work(sample, "577")
    assert work(sample, "491") != work(sample, "576")


def test_a_looser_title_with_other_pages_is_another_paper(sample: DedupeResult) -> None:
    # "The recurrent cascade-correlation architecture" (1991, pp. 190-205) is not "The
    # cascade-correlation learning architecture" (1991, pp. 524-532), same author and year.
    assert work(sample, "1151") == work(sample, "1152")
    assert work(sample, "1151") not in {work(sample, "1149"), work(sample, "1049")}


def test_a_short_title_in_one_journal_over_its_years_is_one_paper(sample: DedupeResult) -> None:
    # "Multivariate decision trees", Brodley & Utgoff, Machine Learning: 1995 with volume and
    # pages, 1994 (in press) and undated; the 1992 technical report is another work.
    journal = {work(sample, i) for i in ("46", "47", "55", "56", "48", "54")}
    assert len(journal) == 1
    assert work(sample, "30") not in journal


def test_an_undated_citation_does_not_chain_years_together(sample: DedupeResult) -> None:
    # The 1991 citations of Pazzani & Kibler's article (vol. 9, pp. 57-94) join its 1992 ones
    # by their pages, not the 1990 one through an undated citation in between.
    assert {work(sample, i) for i in ("1553", "1554", "1555")} == {work(sample, "1553")}
    assert work(sample, "1550") != work(sample, "1553")


def test_volume_and_first_page_place_an_undated_citation(sample: DedupeResult) -> None:
    # "Incremental learning of decision trees", Machine Learning 4, 161-186, 1989, and the
    # undated "Incremental induction of decision trees" in the same volume and pages.
    assert work(sample, "563") == work(sample, "564") == work(sample, "535")


def test_a_title_reworded_around_the_same_words_is_the_same_paper() -> None:
    # mitchell1983 in Cora: one title's words all recur in the other, same authors and year.
    # Other works sharing the rewording's extra words make the two meet by their rarest words.
    def cited(key: str, title: str, authors: str) -> Reference:
        item = CSLItem(
            id=key,
            type="paper-conference",
            title=title,
            author=names(authors),
            issued=CSLDate.from_year(1983),
        )
        return reference(key, "cora", item)

    mitchell = "T. M. Mitchell, P. E. Utgoff and R. Banerji"
    refs = [
        cited("short", "Learning problem solving heuristics by experimentation", mitchell),
        cited(
            "long",
            "Learning by experimentation: acquiring and refining problem-solving heuristics",
            mitchell,
        ),
        *(
            cited(f"other{n}", f"Acquiring and refining {topic}", "J. Smith")
            for n, topic in enumerate(("rules", "plans", "theories"))
        ),
    ]
    result = assign_works(records_frame(refs))
    works = dict(result.assignments.select("citation_id", "work_id").iter_rows())
    assert works["short"] == works["long"]
    assert works["other0"] != works["short"]
