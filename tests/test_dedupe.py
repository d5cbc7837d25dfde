"""Dedupe on real records: a Scopus export with its known duplicates, Crossref preprint/chapter
records, and the cases dedupe must keep apart."""

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from models.audit import Provenance, Reference, Status, ValidationResult
from models.csl import CSLItem
from tasks.dedupe import (
    DedupeResult,
    assign_works,
    canonical_works,
    empty_library,
    records_frame,
)
from tasks.dedupe.job import repeats_within_jobs
from tasks.dedupe.records import record_row, split_notice
from tasks.identifiers import identifiers_of
from tasks.read.ris import read

FIXTURES = Path(__file__).parent / "fixtures" / "dedupe"
SCOPUS = FIXTURES / "00_IBS_permeability_scopus.ris"
DUPLICATE_DOI = "10.17235/reed.2022.8749/2022"
FRESTON_DOIS = {"10.1053/j.gastro.2016.05.010", "10.1016/j.cgh.2016.05.027"}


def reference(citation_id: str, item: CSLItem | dict[str, Any]) -> Reference:
    csl = item if isinstance(item, CSLItem) else CSLItem.from_csl({"id": citation_id, **item})
    return Reference(
        citation_id=citation_id,
        item=csl,
        provenance=Provenance(source_file="test", entry_key=citation_id),
        ids=identifiers_of(csl),
    )


def crossref_item(doi: str) -> CSLItem:
    """A Crossref work record of the fixture as CSL (Crossref's chapter type renamed)."""
    work = json.loads((FIXTURES / "crossref_works.json").read_text())[doi]
    work = {k: v for k, v in work.items() if k not in ("relation", "subtype")}
    work["type"] = {"book-chapter": "chapter", "posted-content": "article"}.get(work["type"], "x")
    return CSLItem.from_csl({"id": doi, **work})


def crossref_relations(doi: str) -> dict[str, list[str]]:
    work = json.loads((FIXTURES / "crossref_works.json").read_text())[doi]
    return {kind: [r["id"] for r in rels] for kind, rels in work.get("relation", {}).items()}


def scopus_references() -> list[Reference]:
    refs = read([SCOPUS]).references
    return [r.model_copy(update={"citation_id": f"scopus:{r.provenance.entry_key}"}) for r in refs]


def works_of(result: DedupeResult) -> dict[str, str]:
    return dict(zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True))


@pytest.fixture(scope="module")
def scopus() -> tuple[pl.DataFrame, DedupeResult]:
    new = records_frame(scopus_references())
    return new, assign_works(new)


def test_scopus_export_duplicates_found(scopus: tuple[pl.DataFrame, DedupeResult]) -> None:
    new, result = scopus
    assert new.height == 411
    assert result.assignments.height == 411  # no row dropped
    assert result.assignments["work_id"].n_unique() == 410
    merged = result.assignments.filter(pl.col("duplicate_of").is_not_null())
    assert merged.height == 1
    row = new.filter(pl.col("citation_id") == merged["citation_id"][0])
    assert row["doi"][0] == DUPLICATE_DOI
    assert merged["dup_reason"][0] == "doi"


def test_scopus_copublication_linked_not_merged(scopus: tuple[pl.DataFrame, DedupeResult]) -> None:
    # The export's authors counted the Freston report once (409); it has two DOIs, so it is
    # two registered works here, linked as a co-publication.
    new, result = scopus
    work = dict(zip(new["doi"], result.assignments["work_id"], strict=True))
    a, b = sorted(work[doi] for doi in FRESTON_DOIS)
    assert a != b
    links = result.links.filter(pl.col("kind") == "co-publication")
    assert (a, b) in set(zip(links["work_id_a"], links["work_id_b"], strict=True))


def test_same_paper_with_and_without_doi_is_one_work() -> None:
    refs = scopus_references()[:60]
    library = assign_works(records_frame(refs)).library_rows(records_frame(refs))
    original = refs[7].item
    assert original.DOI and original.title
    # Cited again elsewhere: no DOI, no URL, lower-case title, abbreviated venue, initials only.
    bare = original.model_copy(
        update={
            "DOI": None,
            "URL": None,
            "PMID": None,
            "title": original.title.lower().rstrip("."),
            "container_title": "J. Abbrev.",
        }
    )
    result = assign_works(records_frame([reference("other-job:1", bare)]), library)
    assert result.assignments["work_id"][0] == works_of_library(library)[refs[7].citation_id]
    assert result.assignments["dup_reason"][0] == "fuzzy"
    assert result.assignments["duplicate_of"][0] == refs[7].citation_id


def works_of_library(library: pl.DataFrame) -> dict[str, str]:
    return dict(zip(library["citation_id"], library["work_id"], strict=True))


def test_rerun_creates_no_new_works() -> None:
    refs = scopus_references()[:120]
    untitled = reference("empty:1", {"type": "article"})  # nothing to match on
    new = records_frame([*refs, untitled])
    first = assign_works(new)
    library = first.library_rows(new)
    again = assign_works(new, library)
    assert again.new_works == 0
    assert works_of(again) == works_of(first)
    assert again.assignments["duplicate_of"].null_count() == 0


def test_rerun_from_a_moved_file_is_the_same_citation() -> None:
    # The list a citation came from tells columns apart; it is not part of what the citation says.
    untitled = reference("empty:1", {"type": "article"})  # found again only as the same citation
    new = records_frame([untitled])
    library = assign_works(new).library_rows(new)
    moved = new.with_columns(source=pl.lit("elsewhere/refs.bib"))
    again = assign_works(moved, library)
    assert again.new_works == 0
    assert again.assignments["duplicate_of"].to_list() == ["empty:1"]


def test_conflicting_dois_veto_a_title_match() -> None:
    base = scopus_references()[3].item
    other = base.model_copy(update={"DOI": "10.9999/another.copy"})
    result = assign_works(records_frame([reference("a", base), reference("b", other)]))
    assert result.assignments["work_id"].n_unique() == 2
    assert result.links["kind"].to_list() == ["co-publication"]


@pytest.mark.parametrize("gap", [1, 4, 8])
def test_one_doi_is_one_work_whatever_years_its_citers_give(gap: int) -> None:
    # A DOI cited with a preprint's year by one and the journal's by another; the title
    # blocking's late-version window (pairs beyond the usual years vote only as late versions)
    # must not part pairs a shared identifier found.
    def cited(citation_id: str, year: int) -> Reference:
        return reference(
            citation_id,
            {
                "type": "article-journal",
                "title": "A study of widgets in the wild",
                "DOI": "10.1234/abc.5678",
                "author": [{"family": "Smith", "given": "J"}],
                "container-title": "Journal of Things",
                "issued": {"date-parts": [[year]]},
            },
        )

    result = assign_works(records_frame([cited("a", 2010), cited("b", 2010 + gap)]))
    assert len(set(works_of(result).values())) == 1
    assert result.assignments.filter(pl.col("citation_id") == "b")["dup_reason"][0] == "doi"


def test_two_chapters_of_one_book_linked_not_merged() -> None:
    chapters = [
        crossref_item("10.1007/978-1-4302-4096-9_20"),
        crossref_item("10.1007/978-1-4302-4096-9_22"),
    ]  # noqa: E501
    # Cited without their chapter DOIs: only the book's ISBN and title are shared.
    refs = [reference(f"ch{i}", c.model_copy(update={"DOI": None})) for i, c in enumerate(chapters)]
    frame = records_frame(refs)
    assert frame["isbn"].n_unique() == 1
    result = assign_works(frame)
    a, b = result.assignments["work_id"].to_list()
    assert a != b
    assert result.links.rows() == [(*sorted((a, b)), "chapter-of-same-book")]


def test_one_book_by_isbn_with_and_without_its_subtitle() -> None:
    book = {
        "type": "book",
        "author": [{"family": "Hastie", "given": "Trevor"}],
        "issued": {"date-parts": [[2009]]},
    }
    refs = [
        reference("short", {**book, "title": "The Elements of Statistical Learning",
                            "ISBN": "0-387-84857-6"}),
        reference("long", {**book, "ISBN": "9780387848570", "title": "The Elements of "
                           "Statistical Learning: Data Mining, Inference, and Prediction"}),
    ]  # fmt: skip
    result = assign_works(records_frame(refs))
    assert result.assignments["work_id"].n_unique() == 1
    assert result.assignments["dup_reason"].drop_nulls().to_list() == ["isbn"]
    assert result.links.is_empty()


def test_a_shared_landing_page_does_not_merge_other_years_reports() -> None:
    page = {"type": "report", "URL": "https://www.who.int/publications/tobacco"}
    refs = [
        reference("r2019", {**page, "title": "WHO report on the global tobacco epidemic 2019"}),
        reference("r2021", {**page, "title": "WHO report on the global tobacco epidemic 2021"}),
        reference("again", {**page, "title": "WHO Report on the Global Tobacco Epidemic, 2019"}),
    ]
    result = assign_works(records_frame(refs))
    first, second, again = result.assignments["work_id"].to_list()
    assert first == again != second
    assert result.assignments["dup_reason"].drop_nulls().to_list() == ["url"]


def test_preprint_and_published_version_linked_not_merged() -> None:
    # The registry says so: the verified ChemRxiv preprint names its journal version.
    preprint_doi = "10.26434/chemrxiv.5406907.v5"
    preprint = crossref_item(preprint_doi)
    published = preprint.model_copy(
        update={"DOI": "10.1021/acs.jpcb.7b11820", "container_title": "J. Phys. Chem. B"}
    )
    refs = [reference("pre", preprint), reference("pub", published)]
    verified = ValidationResult(
        citation_id="pre",
        status=Status.VERIFIED,
        record=preprint,
        relations=crossref_relations(preprint_doi),
    )
    result = assign_works(records_frame(refs, [verified]))
    pre, pub = result.assignments["work_id"].to_list()
    assert pre != pub
    assert result.links.rows() == [(pre, pub, "preprint-of")]


def test_arxiv_preprint_and_journal_version_linked_without_registry() -> None:
    article = crossref_item("10.3389/fgene.2017.00147")
    arxiv = article.model_copy(
        update={"DOI": None, "URL": "https://arxiv.org/abs/1708.01234v2", "container_title": None}
    )
    untold = article.model_copy(update={"DOI": None, "container_title": None})
    refs = [reference("pub", article), reference("arxiv", arxiv), reference("bare", untold)]
    result = assign_works(records_frame(refs))
    works = works_of(result)
    assert works["pub"] != works["arxiv"]
    # A citation that does not say which version it means joins one of them, never both.
    assert works["bare"] in (works["pub"], works["arxiv"])
    assert ("preprint-of" in result.links["kind"].to_list()) is True
    link = result.links.filter(pl.col("kind") == "preprint-of")
    assert link.rows() == [(works["arxiv"], works["pub"], "preprint-of")]


@pytest.mark.parametrize(
    ("title", "kind", "about"),
    [
        ("Erratum: Rome III criteria capture", "erratum", "Rome III criteria capture"),
        ("Correction to: 'A study'", "erratum", "A study"),
        ("Retraction Note: A study of x", "retraction", "A study of x"),
        ("Expression of Concern: A study", "concern", "A study"),
        ("RETRACTED: A study of x", None, "A study of x"),
        ("Correction of errors in gene maps", None, "Correction of errors in gene maps"),
    ],
)
def test_notice_titles(title: str, kind: str | None, about: str) -> None:
    assert split_notice(title) == (kind, about)


def test_erratum_linked_to_its_article() -> None:
    article = scopus_references()[0].item
    assert article.title
    erratum = article.model_copy(
        update={"title": f"Erratum: {article.title}", "DOI": None, "URL": None, "PMID": None}
    )
    result = assign_works(records_frame([reference("art", article), reference("err", erratum)]))
    works = works_of(result)
    assert works["art"] != works["err"]
    assert result.links.rows() == [(works["err"], works["art"], "erratum-of")]


def test_library_works_keep_their_ids_and_never_merge() -> None:
    refs = scopus_references()[:2]
    frame = records_frame(refs)
    # Two library works that a new citation resembles both: it joins one, they stay two.
    library = frame.with_columns(work_id=pl.Series(["w-lib-1", "w-lib-2"]))
    bridge = refs[0].item.model_copy(update={"PMID": refs[1].item.PMID})
    result = assign_works(records_frame([reference("bridge", bridge)]), library)
    assert result.assignments["work_id"][0] == "w-lib-1"  # the DOI is the stronger key
    assert result.new_works == 0


def test_mismatched_doi_is_not_a_key() -> None:
    refs = scopus_references()[:2]
    wrong = refs[1].item.model_copy(update={"DOI": refs[0].item.DOI})
    ref = reference("wrong", wrong)
    refuted = ValidationResult(
        citation_id="wrong", status=Status.MISMATCH, matched_id=refs[0].item.DOI
    )
    frame = records_frame([*refs, ref], [refuted])
    assert frame["doi"][2] is None
    works = works_of(assign_works(frame))
    assert works["wrong"] == works[refs[1].citation_id] != works[refs[0].citation_id]


def test_canonical_work_prefers_verified_metadata() -> None:
    article = scopus_references()[5].item
    sloppy = article.model_copy(update={"title": (article.title or "").upper(), "volume": None})
    refs = [reference("sloppy", sloppy), reference("clean", article)]
    result = ValidationResult(citation_id="clean", status=Status.VERIFIED, record=article)
    frame = records_frame(refs, [result])
    library = assign_works(frame).library_rows(frame)
    works = canonical_works(library)
    assert works.height == 1
    row = works.row(0, named=True)
    assert row["citations"] == 2
    assert row["canonical_citation_id"] == "clean"
    assert row["title"] == article.title
    assert row["volume"] == article.volume


def test_empty_batch_and_empty_library() -> None:
    result = assign_works(records_frame([]), empty_library())
    assert result.assignments.height == 0
    assert result.links.height == 0


def test_the_et_al_marker_is_no_author_to_match_on() -> None:
    marked = reference(
        "c1",
        {
            "title": "Triose phosphate isomerase deficiency",
            "author": [{"family": "Ralser", "given": "Markus"}, {"literal": "others"}],
        },
    )
    row = record_row(marked)
    assert row["surnames"] == ["ralser"]
    assert row["authors"] == "Markus Ralser"


def test_repeats_are_counted_within_each_job() -> None:
    citations = pl.DataFrame(
        {
            "job_id": ["d2", "d1", "d1", "d2", "d1"],
            "citation_id": ["c", "b", "a", "e", "z"],
            "work_id": ["w1", "w1", "w1", "w2", "w1"],
            # d1 founded w1 with "z"; d2 cites w1 once (shared, not repeated)
            "duplicate_of": ["d1/z", "a", "z", None, None],
        }
    )
    repeats = repeats_within_jobs(citations)
    assert repeats["citation_id"].to_list() == ["b", "a"]  # in the rows' order
