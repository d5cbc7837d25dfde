"""Markdown crew report: reference list, inline identifiers, claims."""

from pathlib import Path

from models.audit import ReadResult
from tasks.read.markdown import read

REPORT = Path(__file__).parent / "fixtures" / "reflists" / "crew_report.md"


def read_report() -> ReadResult:
    return read([REPORT])


def test_reference_list_items_in_all_three_spellings() -> None:
    result = read_report()
    listed = [r for r in result.references if r.provenance.entry_key.startswith("[")]
    assert [r.provenance.entry_key for r in listed] == ["[1]", "[2]", "[3]", "[4]", "[5]"]
    assert [r.ids.doi for r in listed[:3]] == [
        "10.1038/srep16696",
        "10.1371/journal.pone.0000030",
        "10.1016/j.neurobiolaging.2010.03.024",
    ]
    assert listed[3].ids.doi is None and listed[3].raw and "Unitary control" in listed[3].raw
    assert listed[4].raw and listed[4].raw.endswith("Frontiers in Genetics (2017) 8:147.")
    assert listed[1].item.year() == 2006
    lines = REPORT.read_text().splitlines()
    assert all(
        lines[r.provenance.line - 1].lstrip("-[ ").startswith(r.provenance.entry_key.strip("[]"))
        for r in listed
        if r.provenance.line
    )


def test_claims_and_the_references_they_cite() -> None:
    result = read_report()
    claims = {c.claim_id: c.claim_text for c in result.claims}
    refs = {r.provenance.entry_key: r for r in result.references}

    assert "p1-s1" not in claims  # the byline paragraph cites nothing
    assert claims["p2-s1"].startswith("Alpha-synuclein variants")
    assert refs["[1]"].claim_ids == ["p2-s1"]
    assert refs["[2]"].claim_ids == ["p2-s2", "p4-s2"]  # [2-3] is a range
    assert refs["[3]"].claim_ids == ["p3-s1", "p4-s2"]
    assert refs["[4]"].claim_ids == ["p3-s1"]  # [3, 4]
    assert refs["[5]"].claim_ids == ["p4-s1"]
    assert all(c.citation_ids == [] and c.source_file == str(REPORT) for c in result.claims)
    assert not any("not-a-claim" in text for text in claims.values())  # code block skipped
    assert not any(text.startswith("Nothing in this sentence") for text in claims.values())


def test_identifiers_in_the_body_that_are_not_in_the_list() -> None:
    result = read_report()
    body = {
        r.provenance.entry_key: r
        for r in result.references
        if not r.provenance.entry_key.startswith("[")
    }
    assert set(body) == {"p3-s2:doi", "p4-s3:pmid"}
    assert body["p3-s2:doi"].ids.doi == "10.7554/elife.01567"
    assert body["p3-s2:doi"].claim_ids == ["p3-s2"]
    assert body["p4-s3:pmid"].ids.pmid == "29424689"


def test_a_marker_without_a_list_item_is_an_input_error() -> None:
    result = read_report()
    assert [(e.entry_key, e.reason) for e in result.errors] == [
        ("p5-s2", "cites [9], which the reference list does not have")
    ]
