"""Crossref work JSON and PubMed efetch XML -> RegistryRecord, on real registry bodies."""

import copy
import gzip
import json
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
import pytest

from models.audit import Notice, RegistryRecord
from tasks.registries.crossref import crossref_work_to_csl
from tasks.registries.pubmed import pubmed_article_to_csl
from tasks.registries.pubmed_map import expand_pages

FIXTURES = Path(__file__).parent / "fixtures" / "registries"


def crossref_work(safe_doi: str) -> dict[str, Any]:
    message: dict[str, Any] = json.loads((FIXTURES / f"crossref_{safe_doi}.json").read_text())[
        "message"
    ]
    return message


def ids(record: RegistryRecord) -> list[str | None]:
    return [notice.identifier for notice in record.notices]


def pubmed_articles(name: str) -> list[Element]:
    root = SafeET.fromstring((FIXTURES / name).read_bytes(), forbid_dtd=False)
    return [child for child in root if child.tag == "PubmedArticle"]


# --- Crossref -------------------------------------------------------------------------------


def test_journal_article_fields() -> None:
    record = crossref_work_to_csl(crossref_work("10.1371_journal.pone.0033693"))
    item = record.item
    assert record.registry == "crossref"
    assert record.identifier == "10.1371/journal.pone.0033693" == item.DOI == item.id
    assert item.type == "article-journal"
    assert item.title and item.title.startswith("Methylphenidate Exposure Induces Dopamine")
    assert item.author and (item.author[0].given, item.author[0].family) == ("Shankar", "Sadasivan")
    assert item.container_title == "PLoS ONE" and item.container_title_short == "PLoS ONE"
    assert (item.volume, item.issue, item.page) == ("7", "3", "e33693")
    assert item.issued and item.issued.date_parts == [[2012, 3, 21]]
    assert item.ISSN == "1932-6203"


def test_correction_in_updated_by_flags_corrected_with_its_notice() -> None:
    record = crossref_work_to_csl(crossref_work("10.1371_journal.pone.0033693"))
    assert record.corrected and not record.retracted and not record.expression_of_concern
    assert ids(record) == ["10.1371/annotation/c76da2c1-ccb8-4797-94c1-359d3ceceeda"]


def test_new_version_of_itself_is_no_flag_and_no_notice() -> None:
    record = crossref_work_to_csl(crossref_work("10.1371_journal.ppat.1008184"))
    assert not (record.retracted or record.corrected or record.expression_of_concern)
    assert record.notices == []


@pytest.mark.parametrize("source", ["retraction-watch", "publisher"])
def test_retraction_in_updated_by_flags_retracted(source: str) -> None:
    work = crossref_work("10.3389_fgene.2017.00147")
    work["updated-by"] = [
        {
            "DOI": "10.3389/fgene.2018.99999",
            "type": "retraction",
            "label": "Retraction",
            "source": source,
            "updated": {"date-parts": [[2024, 1, 1]]},
        }
    ]
    record = crossref_work_to_csl(work)
    assert record.retracted and not record.corrected
    assert ids(record) == ["10.3389/fgene.2018.99999"]


@pytest.mark.parametrize(
    ("kind", "flag"),
    [
        ("expression_of_concern", "expression_of_concern"),
        ("erratum", "corrected"),
        ("corrigendum", "corrected"),
        ("withdrawal", "retracted"),
    ],
)
def test_update_kinds_map_to_flags(kind: str, flag: str) -> None:
    work = crossref_work("10.3389_fgene.2017.00147")
    work["updated-by"] = [{"DOI": "10.9999/notice.1", "type": kind, "source": "publisher"}]
    record = crossref_work_to_csl(work)
    flags = {
        name: getattr(record, name) for name in ("retracted", "corrected", "expression_of_concern")
    }
    assert flags == {name: name == flag for name in flags}


def test_legacy_update_to_on_the_same_doi_flags_it_but_a_notice_is_not_retracted() -> None:
    in_place = crossref_work("10.3389_fgene.2017.00147")
    in_place["update-to"] = [{"DOI": in_place["DOI"], "type": "retraction", "label": "Retraction"}]
    assert crossref_work_to_csl(in_place).retracted

    notice = crossref_work("10.3389_fgene.2017.00147")
    notice["update-to"] = [{"DOI": "10.1000/Retracted.Paper", "type": "retraction"}]
    record = crossref_work_to_csl(notice)
    assert not record.retracted
    assert record.relations["retraction-of"] == ["10.1000/retracted.paper"]


def test_relations_keep_preprint_links() -> None:
    record = crossref_work_to_csl(crossref_work("10.3389_fgene.2017.00147"))
    assert record.relations == {"has-preprint": ["10.1101/171108"]}


def test_subtitle_is_joined_to_the_first_title() -> None:
    vqf = crossref_work_to_csl(crossref_work("10.1145_3448016.3452841")).item
    assert (
        vqf.title == "Vector Quotient Filters: Overcoming the Time/Space Trade-Off in Filter Design"
    )
    assert vqf.type == "paper-conference"
    german = crossref_work_to_csl(crossref_work("10.1007_s00120-007-1345-2")).item
    assert german.title == (
        "Penisverletzung durch eine Moulinette: Folge einer autoerotischen Selbstverstümmelung"
    )
    assert german.container_title_short == "Urologe"
    assert german.ISSN == "0340-2592, 1433-0563"


def test_markup_in_titles_is_removed() -> None:
    item = crossref_work_to_csl(crossref_work("10.1101_2020.12.01.406702")).item
    assert item.type == "article"
    assert item.title == (
        "Identification of a novel cationic glycolipid in Streptococcus agalactiae "
        "that contributes to brain entry and meningitis"
    )
    # JATS small caps laid out over two lines: the line break is layout, not a space
    work = crossref_work("10.1101_2020.12.01.406702")
    work["title"] = ["Effects of <scp>L</scp>\n                  -histidine on <i>E. coli</i>"]
    assert crossref_work_to_csl(work).item.title == "Effects of L-histidine on E. coli"


def test_chapter_isbns_and_no_year_from_created() -> None:
    chapter = crossref_work_to_csl(crossref_work("10.1007_978-3-662-46370-3_13")).item
    assert chapter.type == "chapter" and chapter.container_title == "Shoulder Stiffness"
    assert chapter.ISBN == "9783662463697, 9783662463703" and chapter.page == "155-158"
    thesis = crossref_work_to_csl(crossref_work("10.14264_uql.2020.791")).item
    assert thesis.type == "thesis"
    # issued is [[null]], published-* absent: `created` is the deposit's date, never the year
    assert thesis.year() is None


def test_print_date_is_kept_beside_the_online_first_issued_date() -> None:
    # Recorded work: online 2019-04-22, in print Topoi 40(5), 2021-11.
    recorded = FIXTURES.parent / "registry" / "crossref_works.jsonl.gz"
    with gzip.open(recorded, "rt", encoding="utf-8") as lines:
        works = (json.loads(line) for line in lines)
        work = next(w for w in works if w["DOI"].lower() == "10.1007/s11245-019-09640-x")
    item = crossref_work_to_csl(work).item
    assert item.year() == 2019 and item.years() == [2019, 2021]
    assert item.to_csl()["published-print"] == {"date-parts": [[2021, 11]]}
    del work["published-print"]
    assert crossref_work_to_csl(work).item.years() == [2019]


def test_organisation_authors_become_literal_names() -> None:
    work = crossref_work("10.3389_fgene.2017.00147")
    work["author"].append({"name": "The ENCODE Consortium", "sequence": "additional"})
    item = crossref_work_to_csl(work).item
    assert item.author and item.author[-1].literal == "The ENCODE Consortium"


def test_every_work_of_a_real_list_maps() -> None:
    body = json.loads(
        gzip.decompress(
            (FIXTURES / "crossref_list_test_prefixes_field_queries__0.json.gz").read_bytes()
        )
    )
    items = body["message"]["items"]
    records = [crossref_work_to_csl(copy.deepcopy(item)) for item in items]
    assert len(records) == len(items) == 20
    for item, record in zip(items, records, strict=True):
        assert record.identifier == item["DOI"].lower()
        assert record.item.title
        assert record.item.year() is not None
    corrected = {r.identifier for r in records if r.corrected}
    assert "10.1371/journal.pbio.0050002" in corrected


# --- PubMed ---------------------------------------------------------------------------------


def test_pubmed_article_fields_and_erratum() -> None:
    (article,) = pubmed_articles("pubmed_38147649.xml")
    record = pubmed_article_to_csl(article)
    item = record.item
    assert record.registry == "pubmed" and record.identifier == "38147649" == item.PMID
    assert item.title == "Social anxiety disorder-associated gut microbiota increases social fear."
    assert item.container_title == (
        "Proceedings of the National Academy of Sciences of the United States of America"
    )
    assert item.container_title_short == "Proc Natl Acad Sci U S A"
    assert (item.volume, item.issue, item.page) == ("121", "1", "e2308706120")
    assert item.year() == 2024
    assert item.DOI == "10.1073/pnas.2308706120" and item.PMCID == "PMC10769841"
    assert item.author and (item.author[0].family, item.author[0].given) == (
        "Ritz",
        "Nathaniel L",
    )
    assert record.corrected and not record.retracted
    assert ids(record) == ["39705317"]


def test_collective_names_and_character_references() -> None:
    (article,) = pubmed_articles("pubmed_39382274.xml")
    item = pubmed_article_to_csl(article).item
    assert item.author and item.author[0].family == "Blanco-Martín"
    literals = [a.literal for a in item.author if a.literal]
    assert literals and literals[0].startswith("GEMARA-SEIMC/CIBERINFEC Study Group")
    assert item.title and "β-lactams" in item.title


def test_abbreviated_medline_pages_are_expanded() -> None:
    (article,) = pubmed_articles("pubmed_11618220.xml")
    item = pubmed_article_to_csl(article).item
    assert item.page == "217-264"
    assert item.DOI == "10.1163/156853287x00032" and item.issue == "4-5"


@pytest.mark.parametrize(
    ("written", "expanded"),
    [
        ("123-9", "123-129"),
        ("1023-34", "1023-1034"),
        ("12-4, 18-9", "12-14, 18-19"),
        ("e2308706120", "e2308706120"),
        ("S12-5", "S12-S15"),
        ("100-200", "100-200"),
    ],
)
def test_expand_pages(written: str, expanded: str) -> None:
    assert expand_pages(written) == expanded


def test_retraction_shapes_flag_retracted() -> None:
    (article,) = pubmed_articles("pubmed_11618220.xml")
    types = article.find("MedlineCitation/Article/PublicationTypeList")
    assert types is not None
    retracted_type = SafeET.fromstring(
        '<PublicationType UI="D016441">Retracted Publication</PublicationType>'
    )
    types.append(retracted_type)
    assert pubmed_article_to_csl(article).retracted

    (article,) = pubmed_articles("pubmed_38147649.xml")
    link = article.find("MedlineCitation/CommentsCorrectionsList/CommentsCorrections")
    assert link is not None
    link.set("RefType", "RetractionIn")
    record = pubmed_article_to_csl(article)
    assert record.retracted and ids(record) == ["39705317"]

    link.set("RefType", "ExpressionOfConcernIn")
    record = pubmed_article_to_csl(article)
    assert record.expression_of_concern and not record.retracted


def test_medline_date_gives_the_first_year() -> None:
    (article,) = pubmed_articles("pubmed_11618220.xml")
    pub_date = article.find("MedlineCitation/Article/Journal/JournalIssue/PubDate")
    assert pub_date is not None
    for child in list(pub_date):
        pub_date.remove(child)
    pub_date.append(SafeET.fromstring("<MedlineDate>1998 Dec-1999 Jan</MedlineDate>"))
    assert pubmed_article_to_csl(article).item.year() == 1998


def test_every_article_of_a_biopython_efetch_maps() -> None:
    articles = pubmed_articles("pubmed_biopython_pubmed1.xml")
    assert articles
    for article in articles:
        record = pubmed_article_to_csl(article)
        assert record.identifier.isdigit() and record.item.title and record.item.year()


def test_notices_carry_link_date_source_and_reason() -> None:
    """The documented shapes on real records: a Retraction Watch `updated-by` entry with its
    reasons; PubMed's RetractionIn with the notice's citation and note."""
    work = crossref_work("10.3389_fgene.2017.00147")
    work["updated-by"] = [
        {
            "DOI": "10.3389/fgene.2018.99999",
            "type": "retraction",
            "label": "Retraction",
            "source": "retraction-watch",
            "record-id": 41234,
            "reasons": ["+Concerns/Issues About Data", "+Duplication of Image"],
            "updated": {"date-parts": [[2024, 3, 5]]},
        },
        {
            "DOI": "10.3389/fgene.2017.00200",
            "type": "correction",
            "source": "publisher",
            "updated": {"date-parts": [[2017, 11]]},
        },
    ]
    record = crossref_work_to_csl(work)
    assert record.notices == [
        Notice(
            kind="retraction",
            identifier="10.3389/fgene.2018.99999",
            url="https://doi.org/10.3389/fgene.2018.99999",
            date="2024-03-05",
            source="retraction-watch",
            reason="Concerns/Issues About Data; Duplication of Image",
        ),
        Notice(
            kind="correction",
            identifier="10.3389/fgene.2017.00200",
            url="https://doi.org/10.3389/fgene.2017.00200",
            date="2017-11",
            source="publisher",
        ),
    ]

    (article,) = pubmed_articles("pubmed_38147649.xml")
    link = article.find("MedlineCitation/CommentsCorrectionsList/CommentsCorrections")
    assert link is not None
    link.set("RefType", "RetractionIn")
    source = link.find("RefSource")
    assert source is not None
    source.text = "Proc Natl Acad Sci U S A. 2024 Dec 24;121(52):e2424323121."
    note = SafeET.fromstring("<Note>Data could not be reproduced.</Note>")
    link.append(note)
    (notice,) = pubmed_article_to_csl(article).notices
    assert notice == Notice(
        kind="retraction",
        identifier="39705317",
        url="https://pubmed.ncbi.nlm.nih.gov/39705317/",
        date="2024-12",
        source="pubmed",
        reason="Data could not be reproduced.",
    )
