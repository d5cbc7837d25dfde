"""The bibliographic rules behind dedupe quality, on real records of the DBLP-ACM and Cora
benchmarks (tests/fixtures/dedupe/*_sample.csv, copied from ../shared/data/dedupe)."""

import csv
import json
import re
from pathlib import Path

import polars as pl
import pytest

from bench.dedupe_sources import names, reference
from flows.audit import run_pipeline
from models.audit import Reference
from models.csl import CSLDate, CSLItem
from models.job import JobParams
from tasks.dedupe import DedupeResult, DedupeThresholds, assign_works, records_frame
from tasks.dedupe.candidates import Blocking, candidate_pairs
from tasks.dedupe.compare import RULES, evidence
from tasks.dedupe.records import title_form
from tasks.dedupe.similarity import teams_apart, venues_alike
from tasks.read.inputs import read_inputs
from tests.dedupe_samples import dblp_acm_references

FIXTURES = Path(__file__).parent / "fixtures" / "dedupe"


@pytest.fixture(scope="module")
def dblp_acm() -> DedupeResult:
    return assign_works(records_frame(dblp_acm_references()))


def work(result: DedupeResult, citation_id: str) -> str:
    row = result.assignments.filter(pl.col("citation_id") == citation_id)
    return str(row["work_id"][0])


def two_works(
    result: DedupeResult, one: tuple[str, str], other: tuple[str, str]
) -> tuple[str, str]:
    """The work ids of two pairs of citations, asserting each pair is one work and the two
    works differ."""
    first, second = ({work(result, c) for c in pair} for pair in (one, other))
    assert len(first) == 1
    assert len(second) == 1
    assert first != second
    return first.pop(), second.pop()


def test_dropped_subtitle_is_the_same_work(dblp_acm: DedupeResult) -> None:
    # "Observations on the ODMG-93 Proposal" for "... Proposal for an object-oriented database
    # language": same author, year and journal.
    assert work(dblp_acm, "DBLP2:journals/sigmod/Kim94") == work(dblp_acm, "ACM:181552")


def test_conference_and_journal_versions_stay_apart(dblp_acm: DedupeResult) -> None:
    # "VLDB" and "Very Large Data Bases", 2000; "VLDB J." and "The VLDB Journal", 2001.
    conference, journal = two_works(
        dblp_acm,
        ("DBLP2:conf/vldb/ChakrabartiGRS00", "ACM:671851"),
        ("DBLP2:journals/vldb/ChakrabartiGRS01", "ACM:767147"),
    )
    # ... and linked: each is a version of the other.
    versions = dblp_acm.links.filter(pl.col("kind") == "version-of")
    assert tuple(sorted((conference, journal))) in set(
        zip(versions["work_id_a"], versions["work_id_b"], strict=True)
    )


def test_erratum_with_a_bare_hyphen_is_linked_not_merged(dblp_acm: DedupeResult) -> None:
    article = work(dblp_acm, "DBLP2:journals/vldb/PapazogluK97")
    erratum = work(dblp_acm, "ACM:765560")  # "Erratum-A database model for object dynamics"
    assert work(dblp_acm, "ACM:765549") == article
    assert work(dblp_acm, "DBLP2:journals/vldb/PapazogluK97a") == erratum
    assert article != erratum
    links = dblp_acm.links.filter(pl.col("kind") == "erratum-of")
    assert (erratum, article) in set(zip(links["work_id_a"], links["work_id_b"], strict=True))


def test_numbers_of_a_dropped_subtitle_or_glued_to_a_word_agree(dblp_acm: DedupeResult) -> None:
    # "... Answering systems" for "... Answering systems (FQAS 2000)", same authors and year.
    assert work(dblp_acm, "DBLP2:journals/sigmod/BoscMP01") == work(dblp_acm, "ACM:373708")
    # "SQL: 1999, formerly known as SQL 3" for "... SQL3".
    assert work(dblp_acm, "DBLP2:journals/sigmod/EisenbergM99") == work(dblp_acm, "ACM:310075")


def test_column_held_twice_in_one_year_by_a_list_is_not_matched(dblp_acm: DedupeResult) -> None:
    # Two issues' "Book review column" by Karl Aberer, 2002, in each list; two "Editorial"s by
    # Richard Snodgrass, TODS 2001: nothing tells which is which, so none is merged.
    for ids in (
        ("DBLP2:journals/sigmod/Aberer02", "DBLP2:journals/sigmod/Aberer02a"),
        ("ACM:507353", "ACM:565129"),
        ("DBLP2:journals/tods/Snodgrass01", "DBLP2:journals/tods/Snodgrass01a"),
        ("ACM:505049", "ACM:505055"),
    ):
        assert len({work(dblp_acm, i) for i in ids}) == 2
    columns = ["DBLP2:journals/sigmod/Aberer02", "ACM:507353", "ACM:565129"]
    assert len({work(dblp_acm, i) for i in columns}) == 3
    # Held once that year by each list: "Guest Editorial", Alon Halevy, VLDB J. 2002.
    assert work(dblp_acm, "DBLP2:journals/vldb/Halevy02") == work(dblp_acm, "ACM:764200")


def test_column_held_by_other_authors_in_the_year_is_told_apart_by_authors(
    dblp_acm: DedupeResult,
) -> None:
    # ACM lists two "Guest editorial"s in VLDB J. 2000, by Atkinson and by Atzeni & Mendelzon:
    # the author lists tell them apart, so Atkinson's pairs with DBLP's.
    assert work(dblp_acm, "DBLP2:journals/vldb/Atkinson00") == work(dblp_acm, "ACM:765234")
    assert work(dblp_acm, "ACM:765234") != work(dblp_acm, "ACM:765219")


def test_a_surname_cut_differently_is_the_same_author(dblp_acm: DedupeResult) -> None:
    # "Fernando Berzal" for "Fernando Berzal Galiano" (filed under Galiano), reviewing "Data
    # Mining: Concepts and Techniques", SIGMOD Record 2002, under two titles.
    assert work(dblp_acm, "DBLP2:journals/sigmod/BerzalM02") == work(dblp_acm, "ACM:565130")
    # "Rafael Camps Paré" for "Rafael Camps"; "Daniel Barbará-Millá" for "Daniel Barbará".
    assert work(dblp_acm, "DBLP2:journals/sigmod/Camps02") == work(dblp_acm, "ACM:565125")
    assert work(dblp_acm, "DBLP2:journals/vldb/Barbara-MillaG94") == work(dblp_acm, "ACM:615201")


def test_a_retitled_paper_with_the_same_author_list_and_year_is_the_same_work(
    dblp_acm: DedupeResult,
) -> None:
    # "GridDB: a relational interface for the grid" for "... a database interface to the grid",
    # Liu, Franklin, Parekh, SIGMOD 2003.
    assert work(dblp_acm, "DBLP2:conf/sigmod/LiuFP03") == work(dblp_acm, "ACM:872846")
    # One shared author is not enough: Garofalakis's "Approximate Query Processing: Taming the
    # TeraBytes" (VLDB 2001) is not his "Approximate query processing using wavelets" (2001).
    two_works(
        dblp_acm,
        ("DBLP2:conf/vldb/GarofalakisG01", "ACM:672356"),
        ("DBLP2:journals/vldb/ChakrabartiGRS01", "ACM:767147"),
    )


def test_a_long_title_in_one_venue_and_year_needs_no_agreeing_authors(
    dblp_acm: DedupeResult,
) -> None:
    # "A consensus glossary of temporal database concepts", SIGMOD Record 1994: ACM lists 19
    # authors, DBLP 6 others. "The database group at National Technical University of Athens
    # (NTUA)", 1995: ACM credits the university as a corporate author.
    assert work(dblp_acm, "DBLP2:journals/sigmod/JensenCEGHJ94") == work(dblp_acm, "ACM:181560")
    assert work(dblp_acm, "DBLP2:journals/sigmod/SellisV95") == work(dblp_acm, "ACM:219766")


def test_paper_printed_in_two_venues_pairs_up_by_venue(dblp_acm: DedupeResult) -> None:
    # Bhashyam's "TPC-D: The Challenges, Issues and Results", VLDB and SIGMOD Record 1996, listed
    # in both by each source.
    two_works(
        dblp_acm,
        ("DBLP2:conf/vldb/Bhashyam96", "ACM:673470"),
        ("DBLP2:journals/sigmod/Bhashyam96", "ACM:245908"),
    )


def test_a_demo_and_the_paper_of_one_system_pair_up_by_form(dblp_acm: DedupeResult) -> None:
    # DEVise, SIGMOD 1997, by the same eight authors in both lists: the paper and its demo
    # abstract. Each list holds both, and the demo pairs with the demo.
    two_works(
        dblp_acm,
        ("ACM:253335", "DBLP2:conf/sigmod/LivnyRBCDLMW97"),
        ("ACM:253379", "DBLP2:conf/sigmod/LivnyRBCDLMW97a"),
    )
    # Where only one list marks the demo, the mark alone does not part them (STREAM, 2003).
    assert work(dblp_acm, "ACM:872854") == work(dblp_acm, "DBLP2:conf/sigmod/ArasuBBDIRW03")


def test_a_title_found_inside_a_longer_one_by_its_author_is_the_same_work(
    dblp_acm: DedupeResult,
) -> None:
    # A dropped head: "SIGMOD challenges paper: Database issues in telecommunications network
    # management" (Ahn, 1994). A reviewed book's title inside the review's: "Review of Ontologies:
    # a silver bullet ... by Dieter Fensel. Springer-Verlag, 2002." (Badia). A dropped head with
    # its number: "MPEG-7 Standard for Multimedia Databases" (Smith, 2001).
    assert work(dblp_acm, "ACM:191847") == work(dblp_acm, "DBLP2:conf/sigmod/Ahn94")
    assert work(dblp_acm, "ACM:637425") == work(dblp_acm, "DBLP2:journals/sigmod/Badia02")
    assert work(dblp_acm, "ACM:375814") == work(dblp_acm, "DBLP2:conf/sigmod/Smith01")


def test_a_column_piece_cited_with_its_topic_is_the_same_work(dblp_acm: DedupeResult) -> None:
    # "Guest editorial" for "Guest Editorial: Databases and the Web" (Atzeni and Mendelzon, VLDB J.
    # 2000) and "E-Services - Guest editorial" (Casati, Shan, Georgakopoulos, 2001).
    assert work(dblp_acm, "ACM:765219") == work(dblp_acm, "DBLP2:journals/vldb/AtzeniM00")
    assert work(dblp_acm, "ACM:767133") == work(dblp_acm, "DBLP2:journals/vldb/CasatiSG01")
    # The other guest editorial of VLDB J. 2000 stays apart; so does a title that only holds the
    # department's name: "Call for Book Reviews" is not "Book reviews" (Aberer, 2003).
    assert work(dblp_acm, "ACM:765234") != work(dblp_acm, "DBLP2:journals/vldb/AtzeniM00")
    assert work(dblp_acm, "ACM:776993") != work(dblp_acm, "DBLP2:journals/sigmod/Aberer03")


def test_an_introduction_and_its_issue_in_one_list_are_two_works(dblp_acm: DedupeResult) -> None:
    # ACM lists "Data management issues in electronic commerce" (SIGMOD Record 2002, Dogac) and
    # "...: guest editor's introduction" beside it: two pieces.
    assert work(dblp_acm, "ACM:507339") != work(dblp_acm, "ACM:507340")


@pytest.mark.parametrize(
    ("a", "b", "apart"),
    [
        # Two strangers each, a third and more of each list: two teams.
        (["choo", "oconnell", "chen", "ganapathi"], ["choo", "oconnell", "watson", "ieong"], True),
        # A misspelt surname is the same person ("Linerman", "Linderman").
        (["linerman", "choo", "chen", "ganapathi"], ["linderman", "choo", "chen", "ieong"], False),
        # One list truncated: strangers on one side only.
        (["thrun", "bala", "bloedorn"], ["thrun", "bala", "bloedorn", "bratko", "cestnik"], False),
        # Long lists garbled in two places each: under a fifth of their names.
        ([f"author{i:03}" for i in range(20)] + ["reich", "fisher"],
         [f"author{i:03}" for i in range(20)] + ["de", "jong"], False),
    ],
)  # fmt: skip
def test_teams_apart(a: list[str], b: list[str], apart: bool) -> None:
    assert teams_apart(pl.Series([a]), pl.Series([b]), 0.8, 2).to_list() == [apart]


def test_two_author_teams_are_two_works(dblp_acm: DedupeResult) -> None:
    # "Prospector: a content-based multimedia server ..." (Choo, O'Connell, ..., Chen,
    # Ganapathi) and "A content-based multimedia server ..." (O'Connell, Choo, ..., Watson,
    # Ieong, Wang), SIGMOD 1996: one group, two teams, two papers. ACM misspells "Linerman".
    two_works(
        dblp_acm,
        ("ACM:280357", "DBLP2:conf/sigmod/ChooOLCGBPS96"),
        ("ACM:233321", "DBLP2:conf/sigmod/OConnellISWABCCLPWW96"),
    )


@pytest.mark.parametrize(
    ("a", "b", "alike"),
    [
        ("vldb", "very large data bases", True),
        ("acm sigmod record", "sigmod record", True),
        ("proc ijcai 89", "proceedings of the eleventh international joint conference on "
         "artificial intelligence", True),
        ("sigmod conference", "very large data bases", False),
        ("vldb", "acm sigmod record", False),
        ("neurips", "advances in neural information processing systems", True),
        ("sigmod conference", "international conference on management of data", True),
    ],
)  # fmt: skip
def test_venues_alike(a: str, b: str, alike: bool) -> None:
    assert venues_alike(pl.Series([a]), pl.Series([b]))[0] is alike


def test_tutorial_marks_are_not_part_of_the_title(dblp_acm: DedupeResult) -> None:
    # "Online query processing: a tutorial", "Data access (tutorial session)", "Tutorial: Data
    # Access": the same tutorials as DBLP's.
    assert work(dblp_acm, "DBLP2:conf/sigmod/HaasH01") == work(dblp_acm, "ACM:375800")
    assert work(dblp_acm, "DBLP2:conf/sigmod/BlakeleyD00") == work(dblp_acm, "ACM:335480")


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


def _one_list(*entries: tuple[str, str, str]) -> DedupeResult:
    """A single reference list of (id, title, author) entries, all 2002, without locators."""
    return assign_works(
        records_frame(
            [
                reference(
                    key,
                    "list.bib",
                    CSLItem(
                        id=key,
                        type="article-journal",
                        title=title,
                        author=names(author),
                        issued=CSLDate.from_year(2002),
                    ),
                )
                for key, title, author in entries
            ]
        )
    )


def test_a_department_held_twice_is_two_pieces_but_a_title_cited_twice_is_a_duplicate() -> None:
    # "Editorial" names a kind of piece, not a work: two in one list in one year are two issues'
    # editorials. "Deep learning" twice in one list is the duplicate dedupe must report.
    result = _one_list(
        ("e1", "Editorial", "Richard Snodgrass"),
        ("e2", "Editorial", "Richard Snodgrass"),
        ("d1", "Deep learning", "Yann LeCun"),
        ("d2", "Deep Learning.", "Yann LeCun"),
    )
    assert work(result, "e1") != work(result, "e2")
    assert work(result, "d1") == work(result, "d2")


def test_a_guest_editors_foreword_mark_is_not_part_of_the_title(dblp_acm: DedupeResult) -> None:
    # "Information Visualization, Guest Editors' Foreword" (DBLP) is ACM's "Information
    # visualization" by the same guest editors in the same issue.
    assert work(dblp_acm, "DBLP2:journals/sigmod/CatarciC96") == work(dblp_acm, "ACM:245888")


def _printed(key: str, title: str, author: str, venue: str, year: int, **fields: str) -> Reference:
    """One citation of a list, with its venue, year and any other CSL fields (page, DOI)."""
    item = CSLItem(
        id=key,
        type="article-journal",
        title=title,
        author=names(author) if author else None,
        container_title=venue,
        issued=CSLDate.from_year(year),
        **fields,
    )
    return reference(key, "list.bib", item)


def _versions(*refs: Reference) -> set[tuple[str, str]]:
    result = assign_works(records_frame(list(refs)))
    works = dict(zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True))
    found = result.links.filter(pl.col("kind") == "version-of")
    linked = set(zip(found["work_id_a"], found["work_id_b"], strict=True))
    by_work = {w: c for c, w in works.items()}
    return {(min(by_work[a], by_work[b]), max(by_work[a], by_work[b])) for a, b in linked}


WAVELETS = "Approximate query processing using wavelets"
AUTHORS = "Kaushik Chakrabarti, Minos N. Garofalakis, Rajeev Rastogi, Kyuseok Shim"


def test_versions_are_linked_with_or_without_their_dois() -> None:
    # The conference paper and its journal version, each with a DOI of its own (10.5555 is
    # Crossref's prefix for examples): two works, linked.
    assert _versions(
        _printed("conf", WAVELETS, AUTHORS, "VLDB", 2000, DOI="10.5555/vldb.2000.wavelets"),
        _printed("jour", WAVELETS, AUTHORS, "VLDB J.", 2001, DOI="10.5555/vldbj.2001.wavelets"),
    ) == {("conf", "jour")}


def test_what_is_not_one_paper_printed_twice_is_not_linked() -> None:
    # An editor's yearly column on other pages; one title without authors at a conference and
    # in a journal (nothing says it is one paper).
    assert not _versions(
        _printed("n1", "Editor's notes", "Ling Liu", "SIGMOD Record", 2001, page="3-4"),
        _printed("n2", "Editor's notes", "Ling Liu", "SIGMOD Record", 2002, page="5-6"),
        _printed("x1", WAVELETS, "", "Proceedings of the VLDB Conference", 2000),
        _printed("x2", WAVELETS, "", "VLDB Journal", 2001),
    )


@pytest.mark.parametrize(
    ("title", "form"),
    [
        ("DEVise (demo abstract): integrated querying", "demo"),
        ("STREAM: the stanford stream data manager (demonstration description)", "demo"),
        ("Mining streams (short demo)", "demo"),
        ("Mining streams (invited poster)", "poster"),
        ("Data management issues: guest editor's introduction", "introduction"),
        ("Environment Information Systems - Guest Editors' Foreword", "introduction"),
        # Not an annotation dedupe strips, so no form either; an extended abstract is the paper.
        ("Mining streams (demo paper)", None),
        ("Approximate counting (extended abstract)", None),
        ("Guest editor's introduction", None),
    ],
)
def test_the_form_comes_from_the_annotation_the_title_key_drops(
    title: str, form: str | None
) -> None:
    assert title_form(title) == form


def _candidates(*refs: Reference) -> set[tuple[int, int]]:
    records = records_frame(list(refs)).with_columns(
        new=pl.lit(True), work_id=pl.lit(None, pl.Utf8)
    )
    # No title-word keys: only the containment join (first author, year, title inside title).
    pairs = candidate_pairs(records, Blocking(keys=0, head_words=0))
    return set(zip(pairs["a"], pairs["b"], strict=True))


def test_a_title_inside_another_by_its_author_is_a_candidate_from_four_words_on() -> None:
    long = "SIGMOD challenges paper: database issues in telecommunications network management"
    assert _candidates(
        _printed("long", long, "Ilsoo Ahn", "SIGMOD", 1994),
        _printed("short", "Database issues in telecommunications", "Ilsoo Ahn", "SIGMOD", 1994),
    ) == {(0, 1)}
    # Three words say too little; another first author is another paper.
    assert not _candidates(
        _printed("long", long, "Ilsoo Ahn", "SIGMOD", 1994),
        _printed("short", "Database issues in", "Ilsoo Ahn", "SIGMOD", 1994),
    )
    assert not _candidates(
        _printed("long", long, "Ilsoo Ahn", "SIGMOD", 1994),
        _printed("short", "Database issues in telecommunications", "Jim Gray", "SIGMOD", 1994),
    )


def test_the_rule_table_reads_only_named_evidence() -> None:
    named = set(evidence(DedupeThresholds()))
    read = {
        name
        for rule in RULES
        for name in (*rule.when, rule.label_from, rule.forward)
        if name is not None
    }
    assert read <= named
    assert len({rule.name for rule in RULES}) == len(RULES)
    # Identifiers decide first; fuzzy likeness only after every identifier rule.
    names = [rule.name for rule in RULES]
    assert names[0] == "one DOI" and names.index("alike") > names.index("other identifiers")


def test_thousands_of_titles_of_one_template_make_no_runaway_join(tmp_path: Path) -> None:
    """6,000 generated titles that share every word but a number, beside a real list: their
    keys make blocks too big to keep, which must be dropped before records are paired by key,
    not after (DuckDB once planned the self-join first: 36M rows, out of memory)."""
    real = (Path(__file__).parent / "fixtures" / "reflists" / "d2l-en_d2l.bib").read_text()
    generated = "".join(
        f"@article{{g{i}, title={{A study of item {i} in the model of citation auditing}},"
        f" author={{Doe, Jane and Smith, John}}, journal={{Journal {i}}},"
        f" year={{{1990 + i % 30}}}, doi={{10.5555/bench.{i}}}}}\n"
        for i in range(6_000)
    )
    (tmp_path / "generated.bib").write_text(generated + real, encoding="utf-8")
    (tmp_path / "again.bib").write_text(real, encoding="utf-8")
    refs = read_inputs([tmp_path / "generated.bib", tmp_path / "again.bib"]).references
    records = records_frame(refs).with_columns(new=pl.lit(True), work_id=pl.lit(None, pl.Utf8))
    pairs = candidate_pairs(records, Blocking())
    generated_rows = set(range(6_000))
    assert pairs.height > 0
    assert not any(
        a in generated_rows and b in generated_rows for a, b in pairs.select("a", "b").iter_rows()
    )


def test_a_paper_and_its_version_in_another_venue_of_its_year_stay_two_works(
    tmp_path: Path,
) -> None:
    """A thesis lists FlauBERT at LREC 2020 and its French version at TALN 2020 under one
    title: one list, other venues, other pages. Two works, linked as versions; an offline
    audit's RIS and CSL-JSON exports keep both entries."""
    bib = Path(__file__).parent / "fixtures" / "reflists" / "lrec_taln_2020.bib"
    result = assign_works(records_frame(read_inputs([bib]).references))
    assert result.assignments["work_id"].n_unique() == 2
    assert result.links["kind"].to_list() == ["version-of"]
    run_pipeline(
        JobParams(
            inputs=[str(bib)],
            job_id="thesis",
            out_dir=str(tmp_path / "out"),
            db=str(tmp_path / "library.duckdb"),
            offline=True,
            styles=[],
        )
    )
    folder = tmp_path / "out" / "thesis"
    ris = (folder / "references.ris").read_text(encoding="utf-8")
    assert re.findall(r"^ID  - (\S+)", ris, re.MULTILINE) == ["le_20a", "le_20b"]
    listed = json.loads((folder / "references.json").read_text(encoding="utf-8"))
    assert [item["id"] for item in listed] == ["le_20a", "le_20b"]
