"""Markdown crew report: reference list, inline identifiers, claims."""

from pathlib import Path

import pytest

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


NUMBERED = REPORT.parent / "crew_numbered_sections.md"  # a crew run's report, as written
IEEE = REPORT.parent / "crew_ieee_edges.md"
AUTHOR_YEAR = REPORT.parent / "crew_author_year.md"


def claims_of(result: ReadResult) -> dict[str, str]:
    return {c.claim_id: c.claim_text for c in result.claims}


def cited_by(result: ReadResult) -> dict[str, list[str]]:
    """claim id -> entry keys of the references that name it, in reference order."""
    cited: dict[str, list[str]] = {}
    for ref in result.references:
        for claim_id in ref.claim_ids:
            cited.setdefault(claim_id, []).append(ref.provenance.entry_key)
    return cited


HEADINGS = ["## 2. References", "## 6. Sources cited", "## IV. References"]


@pytest.mark.parametrize("heading", HEADINGS)
def test_a_numbered_reference_heading_is_the_reference_list(tmp_path: Path, heading: str) -> None:
    path = tmp_path / "report.md"
    path.write_text(f"# R\n\n## 1. Findings\n\nHeat kills [1].\n\n{heading}\n\n1. Smith J. 2020.\n")
    result = read([path])
    assert [r.provenance.entry_key for r in result.references] == ["[1]"]
    assert result.references[0].claim_ids == ["p1-s1"] and result.errors == []


def test_a_crew_report_with_numbered_sections_reads_its_list_and_claims() -> None:
    result = read([NUMBERED])
    listed = [r.provenance.entry_key for r in result.references if r.provenance.line]
    assert listed == ["[^1]", *(f"[{n}]" for n in range(1, 12)), "p9-s1:doi", "p9-s2:pmid"]
    # the list items are references, not claims citing themselves
    assert not any(text.startswith("O'Byrne") for text in claims_of(result).values())


def test_a_claim_citing_a_missing_source_is_kept_with_it_and_reported() -> None:
    result = read([NUMBERED])
    claims = {c.claim_id: c for c in result.claims}
    assert claims["p8-s1"].claim_text.endswith("missing from the list [12].")
    assert claims["p8-s1"].missing_citations == ["[12]"]
    assert "p8-s1" not in cited_by(result)
    assert claims["p8-s2"].missing_citations == ["[13]"]
    assert cited_by(result)["p8-s2"] == ["[1]"]
    assert all(c.missing_citations == [] for c in result.claims if c.claim_id[:2] != "p8")
    assert [(e.entry_key, e.line, e.reason) for e in result.errors] == [
        ("p8-s1", 17, "cites [12], which the reference list does not have"),
        ("p8-s2", 17, "cites [13], which the reference list does not have"),
    ]


def test_list_items_and_table_rows_are_claims_of_their_own() -> None:
    claims = claims_of(read([NUMBERED]))
    assert claims["p3-s1"] == (
        "Ergothioneine is an antioxidant nutraceutical with a dedicated transporter [5]."
    )
    assert claims["p4-s1"] == "Indoor environments have their own oxidant chemistry [4]."
    assert claims["p5-s1"] == "The London Patient was the second person cured of HIV [7]."
    table = claims_of(read([IEEE]))
    assert table["p3-s1"] == "Ergothioneine is an antioxidant [6]"
    assert table["p4-s1"] == "Treg repertoires differ in RA [7]"


def test_sentences_end_after_glued_markers_and_not_at_abbreviations() -> None:
    result = read([IEEE])
    assert claims_of(result) == {
        "p1-s1": "Asthma control improved with as-needed therapy.[1]",
        "p1-s2": "Heatwaves are more frequent.[2]",
        "p1-s3": "Indoor chemistry differs outdoors [3]\u2013[5].",
        "p1-s4": "Fig. 2 shows the effect of dose on outcome in adults [1].",
        "p1-s5": "Results were robust, cf. Smith et al. 2019 and others [2].",
        "p1-s6": "Our approach (Section 3) follows prior work [4]; however, see [6][7].",
        "p3-s1": "Ergothioneine is an antioxidant [6]",
        "p4-s1": "Treg repertoires differ in RA [7]",
    }
    cited = cited_by(result)
    assert cited["p1-s1"] == ["[1]"] and cited["p1-s2"] == ["[2]"]
    assert cited["p1-s6"] == ["[4]", "[6]", "[7]"]


@pytest.mark.parametrize("dash", ["\u2013", "-"])
def test_an_ieee_range_cites_every_number_in_it(tmp_path: Path, dash: str) -> None:
    path = tmp_path / "report.md"
    items = "\n".join(f"[{n}] Author{n} A. 2020." for n in range(1, 7))
    path.write_text(f"# R\n\nWarming is real [3]{dash}[5].\n\n## References\n\n{items}\n")
    assert cited_by(read([path])) == {"p1-s1": ["[3]", "[4]", "[5]"]}
    assert cited_by(read([IEEE]))["p1-s3"] == ["[3]", "[4]", "[5]"]


def test_footnotes_are_citations_and_their_definitions_references() -> None:
    result = read([NUMBERED])
    footnote = next(r for r in result.references if r.provenance.entry_key == "[^1]")
    assert footnote.provenance.line == 21 and footnote.ids.doi == "10.5761/atcs.ra.19-00158"
    assert footnote.claim_ids == ["p7-s1"]
    claims = claims_of(result)
    assert claims["p7-s1"].endswith("catheter-directed therapy.[^1]")
    assert not any(text.startswith("[^1]") or "Martinez" in text for text in claims.values())


def test_link_definition_lines_are_references_and_stray_lines_input_errors() -> None:
    refs = {r.provenance.entry_key: r for r in read([IEEE]).references}
    assert refs["[1]"].ids.doi == "10.7717/peerj.10734" and refs["[1]"].provenance.line == 14
    assert refs["[2]"].ids.doi == "10.4202/app.01105.2023"
    assert refs["[1]"].claim_ids == ["p1-s1", "p1-s4"]
    errors = read([AUTHOR_YEAR]).errors
    stray = [e for e in errors if e.entry_key is None]
    assert [(e.source_file, e.line, e.reason) for e in stray] == [
        (
            str(AUTHOR_YEAR),
            10,
            "cannot read this line of the reference list: \u201cSources used in this review:\u201d",
        )
    ]


def test_author_year_citations_link_to_the_one_item_of_that_first_author_and_year() -> None:
    crew = cited_by(read([NUMBERED]))
    assert crew["p6-s1"] == ["[9]"]  # (Park, 2020)
    assert crew["p6-s2"] == ["[10]"]  # (Tosatto et al., 2015)
    result = read([AUTHOR_YEAR])
    claims = {c.claim_id: c for c in result.claims}
    assert cited_by(result) == {"p1-s1": ["[1]"]}  # (March 2020) is no citation
    assert claims["p1-s2"].missing_citations == ["(Smith, 2019)"]
    assert claims["p1-s3"].missing_citations == ["(Nobody, 2001)"]
    errors = {e.entry_key: e for e in result.errors if e.entry_key}
    assert set(errors) == {"p1-s2", "p1-s3"}
    assert all(e.source_file == str(AUTHOR_YEAR) and e.line == 5 for e in errors.values())
    assert errors["p1-s2"].reason == (
        "cites (Smith, 2019), but 2 reference-list items match ([2], [3]) by first author and"
        " year: \u201cExercise improves fitness (Smith, 2019).\u201d"
    )
    assert errors["p1-s3"].reason.startswith("cites (Nobody, 2001), but no reference-list item")
    assert "Nobody wrote this (Nobody, 2001)." in errors["p1-s3"].reason


def test_a_report_citing_by_number_keeps_its_parentheses_as_prose(tmp_path: Path) -> None:
    path = tmp_path / "numbered.md"
    path.write_text(
        "# R\n\nTransformers dominate translation (NeurIPS 2017) [1]. The answer is no. "
        "Smoking causes cancer (Nature, 2019) [1]. See No. 3 of the series [1].\n\n"
        "## 2. Literature review\n\nEarlier work found that taxes cut smoking [1].\n\n"
        "## 3. References\n\n1. Vaswani A. Attention is all you need. NeurIPS. 2017.\n"
    )
    result = read([path])
    assert result.errors == []
    assert all(not claim.missing_citations for claim in result.claims)
    texts = [claim.claim_text for claim in result.claims]
    assert "Smoking causes cancer (Nature, 2019) [1]." in texts  # "no." ended a sentence
    assert "See No. 3 of the series [1]." in texts  # "No. 3" did not
    assert "Earlier work found that taxes cut smoking [1]." in texts  # not a reference list
