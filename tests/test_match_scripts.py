"""Matching in every script, and a registry's other titles (subtitle, original-language and
translated titles), on real Crossref and PubMed records (tests/fixtures/registries/README.md)."""

import copy
import json
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as SafeET
import pytest

from models.audit import Lookup, Provenance, Reference, RegistryRecord, Status
from models.csl import CSLItem
from tasks.match.authors import author_agreement
from tasks.match.decide import decide_identified
from tasks.match.titles import title_similarity
from tasks.registries.crossref_map import crossref_work_to_csl
from tasks.registries.pubmed_map import pubmed_article_to_csl
from tasks.textnorm import fold, normalise_title, words

FIXTURES = Path(__file__).parent / "fixtures" / "registries"
JAPANESE = "10.15281_jplantres1887.22.259_307"  # 雜録・雜報・東京植物學會録事, 1908
VIETNAMESE_SUBTITLE = "10.13141_jve.vol6.no3.pp212-219"
GERMAN_ENGLISH = "10.1007_s00120-007-1345-2"


def crossref(safe_doi: str, **changes: Any) -> RegistryRecord:
    body = json.loads((FIXTURES / f"crossref_{safe_doi}.json").read_text())
    work = copy.deepcopy(body["message"])
    work.update(changes)
    return crossref_work_to_csl(work)


def pubmed(pmid: str) -> RegistryRecord:
    root = SafeET.fromstring((FIXTURES / f"pubmed_{pmid}.xml").read_bytes(), forbid_dtd=False)
    return pubmed_article_to_csl(next(child for child in root if child.tag == "PubmedArticle"))


def audit(found: RegistryRecord, **claimed: Any) -> tuple[Status, str]:
    reference = Reference.model_validate(
        {
            "citation_id": "c1",
            "item": CSLItem.model_validate({"id": "k", **claimed}),
            "provenance": Provenance(source_file="refs.bib", entry_key="k"),
        }
    )
    result = decide_identified(reference, Lookup(identifier=found.identifier, record=found))
    return result.status, result.reason


def people(*names: tuple[str, str]) -> list[dict[str, str]]:
    return [{"family": family, "given": given} for family, given in names]


def test_folding_keeps_every_script_and_strips_only_latin_accents() -> None:
    assert fold("Schölkopf") == "scholkopf"
    assert fold("Ёжик и йогурт") == "ёжик и йогурт"  # й is a letter of its own, not и + breve
    assert fold("ｶﾞｲﾄﾞ") == "ガイド"  # NFKC: half-width kana composed, voicing kept
    assert words("模糊测试技术研究") == ["模", "糊", "测", "试", "技", "术", "研", "究"]
    assert words("딥러닝 기반 음성 인식") == ["딥러닝", "기반", "음성", "인식"]
    assert words("تحليل البيانات") == ["تحليل", "البيانات"]
    assert normalise_title("{BERT}: Pre-training") == "bert pre training"


def test_real_japanese_record_cited_as_it_is_verified() -> None:
    record = crossref(JAPANESE)
    status, reason = audit(
        record,
        title="雜録・雜報・東京植物學會録事",
        **{"container-title": "Shokubutsugaku Zasshi", "issued": {"date-parts": [[1908]]}},
    )
    assert status is Status.VERIFIED, reason


@pytest.mark.parametrize(
    ("title", "authors", "other_title"),
    [
        ("模糊测试技术研究", [("张", "伟"), ("李", "娜")], "模糊测试工具研究"),
        (
            "Нейронные сети для распознавания речи",
            [("Иванов", "Иван"), ("Петрова", "Анна")],
            "Нейронные сети для синтеза речи",
        ),
        (
            "تحليل البيانات الضخمة في التعليم العالي",
            [("الخطيب", "محمد")],
            "تحليل البيانات الضخمة في الطب",
        ),
        ("딥러닝 기반 음성 인식 연구", [("김", "철수")], "딥러닝 기반 영상 인식 연구"),
    ],
    ids=["chinese", "russian", "arabic", "korean"],
)
def test_native_script_titles_and_names(
    title: str, authors: list[tuple[str, str]], other_title: str
) -> None:
    """Crossref records in the documented shape, built on a real record: the same title and
    names are verified; one changed word is still caught."""
    record = crossref(JAPANESE, title=[title], author=people(*authors))
    claim = {"author": people(*authors), "issued": {"date-parts": [[1908]]}}
    status, reason = audit(record, title=title, **claim)
    assert status is Status.VERIFIED, reason
    status, reason = audit(record, title=other_title, **claim)
    assert status is Status.MISMATCH, reason


def test_romanised_names_and_titles_against_native_script() -> None:
    record = crossref(JAPANESE, title=["Нейронные сети"], author=people(("Иванов", "Иван")))
    assert author_agreement(record.item.author or [], record.item.author or []) == 1.0
    romanised = CSLItem.model_validate({"id": "k", "author": people(("Ivanov", "I."))})
    assert author_agreement(romanised.author or [], record.item.author or []) == 1.0
    chinese = CSLItem.model_validate({"id": "k", "author": people(("张", "伟"))})
    pinyin = CSLItem.model_validate({"id": "k", "author": people(("Zhang", "Wei"))})
    assert author_agreement(pinyin.author or [], chinese.author or []) == 1.0
    whole = CSLItem.model_validate({"id": "k", "author": [{"family": "张伟"}]})
    initial = CSLItem.model_validate({"id": "k", "author": people(("Zhang", "W."))})
    other = CSLItem.model_validate({"id": "k", "author": people(("Zhang", "Min"))})
    assert author_agreement(pinyin.author or [], whole.author or []) == 1.0
    assert author_agreement(initial.author or [], whole.author or []) == 1.0
    assert author_agreement(other.author or [], whole.author or []) == 0.0
    assert title_similarity("Neironnye seti", "Нейронные сети") >= 0.9
    assert title_similarity("Svertochnye seti", "Нейронные сети") < 0.9


def test_title_cited_without_a_subtitle_in_another_language() -> None:
    """Real record: an English title with its Vietnamese translation deposited as `subtitle`."""
    record = crossref(VIETNAMESE_SUBTITLE)
    status, reason = audit(
        record,
        title="Human ecology and gender: a framework to discover natural and cultural "
        "resources with climate change accommodation",
        author=people(("Teherani-Kroenner", "P."), ("Dang", "T. H.")),
        issued={"date-parts": [[2014]]},
    )
    assert status is Status.VERIFIED, reason


def test_second_language_title_of_a_crossref_record() -> None:
    """Real Springer record with a German and an English title, each with a subtitle."""
    record = crossref(GERMAN_ENGLISH)
    assert record.item.original_title == (
        "Penile injury caused by a Moulinette: Result of autoerotic self-mutilation"
    )
    authors = [{"family": n.family, "given": n.given} for n in record.item.author or []]
    for title in ("Penile injury caused by a Moulinette", "Penisverletzung durch eine Moulinette"):
        status, reason = audit(record, title=title, author=authors, issued={"date-parts": [[2007]]})
        assert status is Status.VERIFIED, reason


@pytest.mark.parametrize(
    ("pmid", "vernacular", "authors"),
    [
        (
            "38048813",
            "A Broader Scope – Bio-psycho-soziale Medizin im globalen Fokus",
            [("Zipfel", "S."), ("Stengel", "A."), ("Erschens", "R."), ("Becker", "R."),
             ("Giel", "K.")],
        ),
        (
            "36987902",
            "Pasienter over 75 år innlagt ved Brannskadeavdelinga, Haukeland "
            "universitetssjukehus 2000–19",
            [("Bruserud", "Ø."), ("Arnes", "K."), ("Kjørsvik", "C. R."), ("Brekke", "R. L."),
             ("Almeland", "S. K."), ("Guttormsen", "A. B."), ("Onarheim", "H.")],
        ),
    ],
)  # fmt: skip
def test_pubmed_vernacular_title(
    pmid: str, vernacular: str, authors: list[tuple[str, str]]
) -> None:
    """Real PubMed records: ArticleTitle is the English translation, VernacularTitle the
    original; a citer of the original-language title cites the same work."""
    record = pubmed(pmid)
    assert record.item.original_title is not None
    status, reason = audit(record, title=vernacular, author=people(*authors))
    assert status is Status.VERIFIED, reason
    english = record.item.title or ""
    status, reason = audit(record, title=english.strip("[]."), author=people(*authors))
    assert status is Status.VERIFIED, reason
