"""The shared models: bounds, CSL-JSON aliases and round trips."""

import json

import pytest
from pydantic import ValidationError

from models.audit import FieldAgreement, Status, ValidationResult
from models.citation import Citation, CitationMap
from models.csl import CSLDate, CSLItem


def test_citation_bounds_and_round_trip():
    c = Citation(source="10.1038/nature12373", location="Page 4", confidence=0.9)
    assert Citation.model_validate_json(c.model_dump_json()) == c
    for bad in (-0.01, 1.01):
        with pytest.raises(ValidationError):
            Citation(source="x", confidence=bad)
    with pytest.raises(ValidationError):
        Citation(source="", confidence=0.5)


def test_citation_map_bounds_and_round_trip():
    m = CitationMap(
        claim_id="c1",
        claim_text="Transformers scale.",
        citations=[Citation(source="arXiv:1706.03762", confidence=0.8, metadata={"year": 2017})],
        strength=0.7,
    )
    assert CitationMap.model_validate_json(m.model_dump_json()) == m
    with pytest.raises(ValidationError):
        CitationMap(claim_id="", claim_text="x", strength=0.5)
    with pytest.raises(ValidationError):
        CitationMap(claim_id="c", claim_text="x", strength=1.5)


def test_csl_item_reads_and_writes_hyphenated_keys():
    data = {
        "id": "x",
        "type": "article-journal",
        "title": "A title",
        "container-title": "Journal of Things",
        "author": [{"family": "Beethoven", "given": "Ludwig", "non-dropping-particle": "van"}],
        "issued": {"date-parts": [["2019", 5]]},
        "DOI": "10.1/x",
        "volume": 12,
        "custom-field": "kept",
    }
    item = CSLItem.from_csl(data)
    assert item.container_title == "Journal of Things"
    assert item.year() == 2019
    assert item.volume == "12"
    assert item.first_author_family() == "Beethoven"
    out = item.to_csl()
    assert out["container-title"] == "Journal of Things"
    assert out["author"][0]["non-dropping-particle"] == "van"
    assert out["custom-field"] == "kept"
    assert CSLItem.from_csl(json.loads(json.dumps(out))) == item


def test_csl_dates_from_raw_and_literal():
    assert CSLDate(raw="Spring 2004").year() == 2004
    assert CSLDate(literal="n.d.").year() is None
    assert CSLDate(date_parts=[[]]).year() is None


def test_completeness_counts_what_a_reader_needs():
    assert CSLItem(id="a").completeness() == 0
    full = CSLItem.from_csl(
        {
            "id": "a",
            "title": "T",
            "author": [{"family": "F"}],
            "issued": {"date-parts": [[2020]]},
            "container-title": "J",
            "DOI": "10.1/x",
        }
    )
    assert full.completeness() == 1


def test_validation_result_agreement_bounds():
    with pytest.raises(ValidationError):
        FieldAgreement(title=1.2)
    r = ValidationResult(
        citation_id="c", status=Status.MISMATCH, agreement=FieldAgreement(title=0.3)
    )
    assert ValidationResult.model_validate_json(r.model_dump_json()) == r
