"""Each group of dedupe evidence (tasks/dedupe/evidence) on its own: two citations are turned
into match keys and compared (records_frame, compared_pairs: the real stages), and the group's
named pieces are read for that one pair."""

from typing import Any, NamedTuple

import polars as pl
import pytest

from bench.dedupe_sources import reference
from models.audit import Reference
from models.csl import CSLDate, CSLItem, CSLName
from tasks.dedupe import DedupeThresholds, records_frame
from tasks.dedupe.assign import prepared_records
from tasks.dedupe.compare import compared_pairs
from tasks.dedupe.evidence.authors import authors
from tasks.dedupe.evidence.identifiers import identifiers
from tasks.dedupe.evidence.likeness import likeness, score
from tasks.dedupe.evidence.printed import printed
from tasks.dedupe.evidence.titles import titles

TH = DedupeThresholds()
WAVELETS = "Approximate query processing using wavelets"
WAVELET_AUTHORS = "Kaushik Chakrabarti, Minos Garofalakis, Rajeev Rastogi, Kyuseok Shim"


def cite(
    title: str,
    people: str = "",
    venue: str | None = None,
    year: int | None = None,
    *,
    source: str = "list.bib",
    **fields: str,
) -> Reference:
    """A citation; `people` as "Given Family, Given Family" (the family name is the last word
    unless written "Given|Family Name")."""
    names = [
        CSLName(given=given, family=family)
        for given, family in (
            person.split("|") if "|" in person else person.rsplit(" ", 1)
            for person in people.split(", ")
            if person
        )
    ]
    item = CSLItem(
        id=title,
        type=fields.pop("type", "article-journal"),
        title=title,
        author=names or None,
        container_title=venue,
        issued=CSLDate.from_year(year) if year else None,
        **fields,
    )
    return reference(f"{source}:{title}:{year}", source, item)


def compared(a: Reference, b: Reference, relation: str | None = None) -> pl.DataFrame:
    """The pair (a, b) as the rules see it: both records' keys and the pair's similarities,
    compared whether or not blocking would pair them (it is not under test here); `relation`:
    what b's registry record says a is to it."""
    records = prepared_records(records_frame([a, b]), None, TH)
    pair = pl.DataFrame(
        {"a": [0], "b": [1], "relation": [relation], "relation_from": [1], "keyed": [True]},
        schema={"a": pl.Int64, "b": pl.Int64, "relation": pl.Utf8, "relation_from": pl.Int64,
                "keyed": pl.Boolean},
    )  # fmt: skip
    compared, _ = compared_pairs(records, pair, TH)
    return compared


def read(pair: pl.DataFrame, group: NamedTuple) -> dict[str, Any]:
    return pair.select(**group._asdict()).row(0, named=True)


def author_evidence(a: Reference, b: Reference) -> dict[str, Any]:
    return read(compared(a, b), authors(TH))


def print_evidence(a: Reference, b: Reference) -> dict[str, Any]:
    return read(compared(a, b), printed(TH, authors(TH)))


def title_evidence(a: Reference, b: Reference) -> dict[str, Any]:
    people = authors(TH)
    return read(compared(a, b), titles(TH, people, printed(TH, people)))


def identifier_evidence(a: Reference, b: Reference, relation: str | None = None) -> dict[str, Any]:
    people = authors(TH)
    wording = titles(TH, people, printed(TH, people))
    return read(compared(a, b, relation), identifiers(TH, wording))


def likeness_evidence(a: Reference, b: Reference) -> dict[str, Any]:
    people = authors(TH)
    printing = printed(TH, people)
    wording = titles(TH, people, printing)
    alike = likeness(TH, people, printing, wording)
    pair = compared(a, b)
    return read(pair, alike) | read(pair, score(TH, people, printing, wording, alike))


CLOUD = "Database management in the cloud"


def test_a_compound_surname_cut_differently_is_one_author() -> None:
    cut = author_evidence(
        cite(CLOUD, "Rafael|Camps Paré, Jim Gray", "VLDB", 2001),
        cite(CLOUD, "Rafael Camps, Jim Gray", "VLDB", 2001),
    )
    assert cut["listed"] and cut["same_authors"] and cut["author_ok"]
    # Another first author sharing no name is not.
    other = author_evidence(
        cite(CLOUD, "Rafael Camps", "VLDB", 2001), cite(CLOUD, "Maria Lopez", "VLDB", 2001)
    )
    assert not (other["listed"] or other["same_authors"] or other["author_ok"])


def test_an_author_list_missing_one_name_in_five_is_the_same_list() -> None:
    five = "Ann Abel, Ben Baker, Cy Cole, Di Dunn, Ed Eyre"
    one_dropped = author_evidence(
        cite(CLOUD, five, "VLDB", 2001), cite(CLOUD, five.rsplit(", ", 1)[0], "VLDB", 2001)
    )
    assert one_dropped["same_list"] and one_dropped["shared"]
    two_dropped = author_evidence(
        cite(CLOUD, five, "VLDB", 2001), cite(CLOUD, "Ann Abel, Ben Baker, Cy Cole", "VLDB", 2001)
    )
    assert not two_dropped["same_list"] and two_dropped["shared"]


def test_a_citation_without_authors_says_nothing_against_them() -> None:
    found = author_evidence(cite(CLOUD, "Jim Gray", "VLDB", 2001), cite(CLOUD, "", "VLDB", 2001))
    assert found["unauthored"] and found["author_ok"]
    assert not found["same_authors"]


def test_one_volume_and_first_page_in_one_year_is_one_printing() -> None:
    people = "Scott Fahlman, Christian Lebiere"
    found = print_evidence(
        cite("The cascade-correlation learning architecture", people, "NIPS", 1990,
             volume="2", page="524-532"),
        cite("The cascade correlation architecture", people, "NIPS", 1990,
             volume="2", page="524"),
    )  # fmt: skip
    assert found["in_print"] and found["placed"] and found["paged"]
    assert not found["reprinted"]


def test_other_pages_in_another_year_are_another_printing() -> None:
    found = print_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 1988, page="601-606"),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 1989, page="377-391"),
    )
    assert found["reprinted"] and found["year_ok"]
    assert not (found["in_print"] or found["placed"])


def test_a_journal_and_proceedings_are_two_publications() -> None:
    conference = cite(WAVELETS, WAVELET_AUTHORS, "Proceedings of the VLDB Conference", 2000)
    journal = cite(WAVELETS, WAVELET_AUTHORS, "VLDB Journal", 2001)
    found = print_evidence(conference, journal)
    assert found["venues_apart"] and not found["earlier_in_journal"]
    # A journal article is the later version: dated earlier, the journal is the odd one.
    misdated = print_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "Proceedings of the VLDB Conference", 2002), journal
    )
    assert misdated["earlier_in_journal"]
    assert not print_evidence(journal, cite(WAVELETS, WAVELET_AUTHORS, "VLDB J.", 2001))[
        "venues_apart"
    ]


def test_years_and_places_missing_or_far_apart() -> None:
    far = print_evidence(cite(CLOUD, "Jim Gray", None, 1999), cite(CLOUD, "Jim Gray", "TKDE", 2004))
    assert far["year_gap"] == 5
    assert not far["year_ok"]
    assert far["unplaced_apart"] and not far["bare"]
    undated = print_evidence(cite(CLOUD, "Jim Gray"), cite(CLOUD, "Jim Gray", "TKDE", 2004))
    assert undated["year_gap"] is None
    assert undated["year_ok"] and undated["bare"] and not undated["unplaced_apart"]


def test_a_short_title_is_one_work_only_when_placed() -> None:
    years_apart = title_evidence(
        cite("Introduction", "Jim Gray", "CACM", 1990),
        cite("Introduction", "Jim Gray", "TODS", 1995),
    )
    assert years_apart["short"] and years_apart["title_ok"]
    assert not years_apart["short_ok"]
    one_year = title_evidence(
        cite("Introduction", "Jim Gray", "CACM", 1990),
        cite("Introduction", "Jim Gray", "TODS", 1990),
    )
    assert one_year["short_ok"]


@pytest.mark.parametrize(
    ("one", "other", "apart"),
    [
        (("Global report on the tobacco epidemic 2019", 2019),
         ("Global report on the tobacco epidemic 2021", 2021), True),
        (("Temporal databases part I: the model", 1998),
         ("Temporal databases part II: the model", 1998), True),
        # An undated citation with its year run into the title.
        (("The third manifesto 1995", None), ("The third manifesto", 1995), False),
        (("Tcl/Tk 8 programming", 1999), ("Tcl/Tk 8 programming", 1999), False),
    ],
)  # fmt: skip
def test_numbers_of_parts_and_editions_set_titles_apart(
    one: tuple[str, int | None], other: tuple[str, int | None], apart: bool
) -> None:
    found = title_evidence(
        cite(one[0], "Jim Gray", None, one[1]), cite(other[0], "Jim Gray", None, other[1])
    )
    assert found["numerals_apart"] is apart


def test_a_looser_title_backed_by_the_same_authors_and_year() -> None:
    people = "Hector Garcia-Molina, Jennifer Widom"
    longer = "Efficient mining of association rules in large databases: a new approach"
    short = "Efficient mining of association rules in large databases"
    found = title_evidence(
        cite(longer, people, "SIGMOD", 1996), cite(short, people, "SIGMOD", 1996)
    )
    assert found["dropped_part"] and found["backed"] and not found["title_ok"]
    # (The short title holds no word the long one lacks: reworded, not only backed.)
    assert found["reworded"]
    other_year = title_evidence(
        cite(longer, people, "SIGMOD", 1996), cite(short, people, "SIGMOD", 1997)
    )
    assert other_year["dropped_part"] and not other_year["backed"]


def test_a_long_title_in_one_venue_and_year_is_one_issue_whoever_signs() -> None:
    title = "Report on the workshop on data management for sensor networks"
    found = title_evidence(
        cite(title, "Jim Gray", "SIGMOD Record", 2004),
        cite(title, "Microsoft|Database Research Group", "SIGMOD Record", 2004),
    )
    assert found["one_issue"]
    assert not title_evidence(
        cite(title, "Jim Gray", "SIGMOD Record", 2004),
        cite(title, "Microsoft|Database Research Group", "SIGMOD Record", 2005),
    )["one_issue"]


def test_identifiers_one_or_in_conflict() -> None:
    one = identifier_evidence(
        cite(CLOUD, "Jim Gray", DOI="10.5555/one"),
        cite("Cloud data", "Jim Gray", DOI="10.5555/one"),
    )
    assert one["same_doi"] and not one["conflict"]
    two = identifier_evidence(
        cite(CLOUD, "Jim Gray", DOI="10.5555/one"), cite(CLOUD, "Jim Gray", DOI="10.5555/two")
    )
    assert two["conflict"] and not two["same_doi"]


def test_one_url_names_one_work_unless_the_titles_number_two() -> None:
    url = "https://www.who.int/publications/tobacco"
    editions = identifier_evidence(
        cite("Global report on the tobacco epidemic 2019", URL=url),
        cite("Global report on the tobacco epidemic 2021", URL=url),
    )
    assert not editions["url_ok"]
    again = identifier_evidence(
        cite("Global report on the tobacco epidemic", URL=url),
        cite("Global report on the tobacco epidemic", URL=url, source="other.bib"),
    )
    assert again["url_ok"] and not again["same_source"]


def test_a_registry_relation_names_the_link_and_its_direction() -> None:
    preprint = cite(WAVELETS, WAVELET_AUTHORS, "arXiv", 2000)
    published = cite(WAVELETS, WAVELET_AUTHORS, "VLDB Journal", 2001)
    # b's record says it has a for its preprint: the link points from a to b.
    has = identifier_evidence(preprint, published, "has-preprint")
    assert has["related"] and has["relation_kind"] == "preprint-of" and has["relation_forward"]
    # b's record says b is a's preprint: from b to a.
    is_ = identifier_evidence(published, preprint, "is-preprint-of")
    assert is_["relation_kind"] == "preprint-of" and not is_["relation_forward"]
    # A relation no link kind is made of keeps its name, and points from the record holding it.
    other = identifier_evidence(preprint, published, "references")
    assert other["relation_kind"] == "references" and not other["relation_forward"]
    assert not identifier_evidence(preprint, published)["related"]


def test_a_notice_a_preprint_and_a_demo_are_named_apart() -> None:
    notice = identifier_evidence(
        cite(f"Erratum to: {WAVELETS}", WAVELET_AUTHORS, "VLDB Journal", 2002),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB Journal", 2001),
    )
    assert notice["one_notice"] and notice["notices_apart"] and notice["notice_first"]
    assert notice["notice_kind"] == "erratum-of"
    preprint = identifier_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB Journal", 2001),
        cite(WAVELETS, WAVELET_AUTHORS, "arXiv", 2000),
    )
    assert preprint["stages_apart"] and not preprint["preprint_first"]
    demo = identifier_evidence(
        cite(f"{WAVELETS} (demo abstract)", WAVELET_AUTHORS, "SIGMOD", 2000),
        cite(WAVELETS, WAVELET_AUTHORS, "SIGMOD", 2000),
    )
    assert demo["forms_apart"] and not demo["stages_apart"]


def test_a_conference_paper_and_its_journal_version_are_printed_twice() -> None:
    found = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "Proceedings of the VLDB Conference", 2000),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB Journal", 2001),
    )
    assert found["printed_twice"] and not found["fuzzy"]
    # One venue, a year apart, on other pages: another printing too, not one work cited twice.
    reprinted = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 1988, page="601-606"),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 1989, page="377-391"),
    )
    assert reprinted["printed_twice"] and not reprinted["fuzzy"]


def test_one_work_cited_twice_is_alike_and_scored_by_its_first_page() -> None:
    one_page = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000, page="111-122"),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000, page="111"),
    )
    assert one_page["fuzzy"] and not one_page["printed_twice"]
    # Title, authors, year and page all agree: (3 + 1 + 1 + 1) / 6.
    assert one_page["fuzzy_score"] == pytest.approx(1.0)
    other_page = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000, page="111-122"),
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000, page="211"),
    )
    assert other_page["fuzzy_score"] == pytest.approx(5 / 6)
    # An unknown year counts half, pages unknown are left out: (3 + 1 + 0.5) / 5.
    undated = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000), cite(WAVELETS, WAVELET_AUTHORS, "VLDB")
    )
    assert undated["fuzzy_score"] == pytest.approx(0.9)


def test_years_too_far_apart_stop_any_likeness() -> None:
    found = likeness_evidence(
        cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2000), cite(WAVELETS, WAVELET_AUTHORS, "VLDB", 2003)
    )
    assert not found["fuzzy"]
    assert found["title_part"] == pytest.approx(1.0)
