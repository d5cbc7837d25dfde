"""The report's "Related works cited together": which citations stand for linked works."""

import polars as pl

from tasks.report import related_citations

CITATIONS = pl.DataFrame(
    {
        "source_file": ["a.bib", "a.bib", "b.ris", "b.ris", "b.ris"],
        "entry_key": ["journal", "preprint", "conf", "conf-again", "retraction"],
        "work_id": ["w-j", "w-p", "w-c", "w-c", "w-r"],
    }
)


def links(*rows: tuple[str, str, str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["work_id_a", "work_id_b", "kind"], orient="row")


def test_each_link_names_the_first_citation_of_each_work_in_input_order() -> None:
    found = related_citations(
        CITATIONS,
        links(
            ("w-r", "w-j", "retraction-of"),  # directed: the notice reads first
            ("w-c", "w-j", "version-of"),  # symmetric: the citation cited first reads first
            ("w-p", "w-j", "preprint-of"),
        ),
    )
    assert found == [
        {"citation": "a.bib: journal", "relation": "is another version of",
         "related to": "b.ris: conf"},
        {"citation": "a.bib: preprint", "relation": "is a preprint of",
         "related to": "a.bib: journal"},
        {"citation": "b.ris: retraction", "relation": "is the retraction notice of",
         "related to": "a.bib: journal"},
    ]  # fmt: skip


def test_links_to_works_not_cited_here_or_of_unknown_kinds_are_left_out() -> None:
    found = related_citations(
        CITATIONS,
        links(("w-j", "w-elsewhere", "version-of"), ("w-j", "w-c", "is-referenced-by")),
    )
    assert found == []
