"""Citation confidence and claim strength, on real Deep Review references and generated inputs."""

from pathlib import Path
from statistics import mean

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.audit import CitationSupport, Reference, Stance, Status, ValidationResult
from models.citation import Citation, CitationMap
from tasks.citation_ids import assign_citation_ids, link_claims
from tasks.read.markdown import read as read_markdown
from tasks.score.confidence import (
    CONCERN_CAP,
    DEFAULT_CONFIDENCE,
    FAILED_CAPS,
    RETRACTED_CAP,
    calculate_citation_confidence,
    calculate_citation_map_confidence,
    citation_from_reference,
    score_reference,
)
from tasks.score.metrics import score_claims
from tests.score_data import deep_review_references

NUMBERED_REPORT = Path(__file__).parent / "fixtures" / "reflists" / "crew_numbered_sections.md"

REFERENCES = deep_review_references()


def _validation(
    citation_id: str,
    status: Status,
    *,
    match_score: float | None = None,
    retracted: bool = False,
    concern: bool = False,
) -> ValidationResult:
    return ValidationResult(
        citation_id=citation_id,
        status=status,
        matched_id=None,
        match_score=match_score,
        retracted=retracted,
        expression_of_concern=concern,
        reason="test evidence",
    )


def _by_id(key: str) -> Reference:
    return next(ref for ref in REFERENCES if ref.item.id == key)


# --- the documented formula ------------------------------------------------------------------


def test_the_worked_example_of_the_module_docstring_holds() -> None:
    citation = Citation(
        source="https://arxiv.org/abs/1106.5730",
        location="Section 3.2",
        confidence=0.9,
        metadata={"author": "Niu et al.", "year": 2011, "title": "HOGWILD!", "citation_id": "a"},
    )
    engine = calculate_citation_confidence(citation)
    assert engine["overall_confidence"] == pytest.approx(0.86)
    assert (engine["metadata_score"], engine["source_quality_score"]) == (0.75, 1.0)
    assert engine["location_score"] == 0.75
    assert engine["decided"] is False

    verified = _validation("a", Status.VERIFIED, match_score=0.96)
    assert calculate_citation_confidence(citation, verified)["overall_confidence"] == 0.927
    not_found = _validation("a", Status.NOT_FOUND)
    assert calculate_citation_confidence(citation, not_found)["overall_confidence"] == 0.2
    retracted = _validation("a", Status.VERIFIED, retracted=True)
    assert calculate_citation_confidence(citation, retracted)["overall_confidence"] == 0.05
    unverified = calculate_citation_confidence(citation, _validation("a", Status.UNVERIFIED))
    assert unverified["overall_confidence"] == 0.86
    assert unverified["decided"] is False
    assert "undecided" in unverified["validation_effect"]

    second = Citation(
        source="doi:10.9999/invented", location=None, confidence=0.6, metadata={"citation_id": "b"}
    )
    claim = CitationMap(
        claim_id="c1", claim_text="SGD parallelises.", citations=[citation, second], strength=0.8
    )
    validations = {"a": verified, "b": _validation("b", Status.NOT_FOUND)}
    scores = calculate_citation_map_confidence(claim, validations)
    assert scores["strength"] == pytest.approx(0.6)
    assert scores["overall_confidence"] == 0.502
    assert (scores["supporting_count"], scores["failed_count"], scores["unsupported"]) == (
        1,
        1,
        False,
    )


# --- real references -------------------------------------------------------------------------


def test_real_references_become_citations_with_their_identifier_as_source() -> None:
    for ref in REFERENCES:
        citation = citation_from_reference(ref)
        assert citation.metadata["citation_id"] == ref.citation_id
        assert citation.confidence == DEFAULT_CONFIDENCE
        if ref.item.DOI:
            assert citation.source == f"doi:{ref.item.DOI.lower()}"
        elif ref.item.PMID:
            assert citation.source == f"PMID:{ref.item.PMID}"
        if ref.item.title:
            assert citation.metadata["title"] == ref.item.title
        if ref.item.year() is not None:
            assert citation.metadata["year"] == ref.item.year()


def test_a_reference_without_identifier_or_url_is_cited_by_its_title() -> None:
    bare = next(ref for ref in REFERENCES if not ref.ids.any())
    citation = citation_from_reference(bare)
    assert citation.source == bare.item.title
    assert calculate_citation_confidence(citation)["factors"]["source_type"] == "unknown"


def test_a_list_marked_et_al_is_labelled_by_its_first_author_et_al() -> None:
    def label(*authors: dict[str, str]) -> str:
        ref = Reference.model_validate(
            {
                "item": {"id": "r", "author": list(authors)},
                "provenance": {"source_file": "a.bib", "entry_key": "r"},
            }
        )
        return str(citation_from_reference(ref).metadata["author"])

    ralser, heeren = {"family": "Ralser"}, {"family": "Heeren"}
    assert label(ralser, {"literal": "others"}) == "Ralser et al."  # not "Ralser & others"
    assert label(ralser, heeren, {"family": "others"}) == "Ralser et al."
    assert label(ralser, heeren) == "Ralser & Heeren"


def test_stated_confidence_location_and_snippet_are_carried_over() -> None:
    ref = REFERENCES[0].model_copy(
        update={"stated_confidence": 0.95, "location": "Page 4, Figure 2", "snippet": "AUC 0.99"}
    )
    citation = citation_from_reference(ref, _validation(ref.citation_id, Status.VERIFIED))
    assert (citation.confidence, citation.location, citation.snippet) == (
        0.95,
        "Page 4, Figure 2",
        "AUC 0.99",
    )
    assert citation.metadata["status"] == "verified"
    assert calculate_citation_confidence(citation)["location_score"] == 1.0


def test_identifier_backed_references_outscore_blogs_and_project_pages() -> None:
    identified = [score_reference(r) for r in REFERENCES if r.ids.doi or r.ids.pmid or r.ids.arxiv]
    web_pages = [score_reference(r) for r in REFERENCES if r.item.type == "webpage"]
    assert identified and web_pages
    assert all(s["source_quality_score"] == 1.0 for s in identified)
    untrusted = [s for s in web_pages if s["factors"]["source_type"].endswith("web page")]
    assert untrusted and all(s["source_quality_score"] < 0.9 for s in untrusted)
    assert mean(s["overall_confidence"] for s in identified) > mean(
        s["overall_confidence"] for s in web_pages
    )


@pytest.mark.parametrize("status", list(Status))
def test_validation_moves_every_real_reference_the_documented_way(status: Status) -> None:
    for ref in REFERENCES:
        engine = score_reference(ref)
        scored = score_reference(ref, _validation(ref.citation_id, status))
        assert scored["engine_confidence"] == engine["overall_confidence"]
        if status is Status.VERIFIED:
            assert scored["overall_confidence"] > engine["overall_confidence"]
            assert scored["decided"]
        elif status is Status.UNVERIFIED:
            assert scored["overall_confidence"] == engine["overall_confidence"]
            assert not scored["decided"]
        else:
            assert scored["overall_confidence"] <= FAILED_CAPS[status]
            assert scored["decided"] and scored["cap"] == FAILED_CAPS[status]
        retracted = score_reference(ref, _validation(ref.citation_id, status, retracted=True))
        assert retracted["overall_confidence"] <= RETRACTED_CAP and retracted["decided"]


# --- the engine's validation checks --------------------------------------------------------


# --- claims -------------------------------------------------------------------------------


def _claim(citations: list[Citation], strength: float = 0.8) -> CitationMap:
    return CitationMap(claim_id="c", claim_text="A claim.", citations=citations, strength=strength)


def test_a_claim_resting_only_on_failed_citations_is_unsupported() -> None:
    citations = [citation_from_reference(ref) for ref in REFERENCES[:3]]
    failed = {
        c.metadata["citation_id"]: _validation(c.metadata["citation_id"], status)
        for c, status in zip(
            citations, (Status.NOT_FOUND, Status.MISMATCH, Status.UNMATCHED), strict=True
        )
    }
    scores = calculate_citation_map_confidence(_claim(citations), failed)
    assert scores["unsupported"] and scores["strength"] == 0.0
    assert scores["overall_confidence"] <= 0.5 * max(FAILED_CAPS.values())

    rescued = dict(failed)
    first = citations[0].metadata["citation_id"]
    rescued[first] = _validation(first, Status.VERIFIED)
    assert not calculate_citation_map_confidence(_claim(citations), rescued)["unsupported"]

    retracted = {k: _validation(k, Status.VERIFIED, retracted=True) for k in failed}
    assert calculate_citation_map_confidence(_claim(citations), retracted)["unsupported"]


def test_a_claim_without_citations_is_unsupported_and_scores_zero() -> None:
    scores = calculate_citation_map_confidence(_claim([]))
    assert scores["unsupported"] and scores["overall_confidence"] == 0.0
    assert scores["citation_count"] == 0


def test_a_citation_naming_no_reference_counts_as_failed() -> None:
    """A crew report's `[12]` past the end of its list: nothing to validate, but not nothing."""
    read = read_markdown([NUMBERED_REPORT])
    refs = assign_citation_ids(read.references)
    claims = link_claims(read.claims, refs)
    verified = {r.citation_id: _validation(r.citation_id, Status.VERIFIED) for r in refs}
    scores = {
        row["claim_id"]: row
        for row in score_claims(claims, {r.citation_id: r for r in refs}, verified).iter_rows(
            named=True
        )
    }
    only_missing, half_missing, sound = scores["p8-s1"], scores["p8-s2"], scores["p1-s1"]
    assert only_missing["unsupported"] and only_missing["strength"] == 0.0
    assert (only_missing["citation_count"], only_missing["failed_count"]) == (1, 1)
    assert not half_missing["unsupported"]
    assert (half_missing["citation_count"], half_missing["verified_count"]) == (2, 1)
    assert half_missing["failed_count"] == 1
    assert half_missing["strength"] < sound["strength"] == 1.0
    assert half_missing["confidence"] < sound["confidence"]


def test_a_cited_work_read_as_contradicting_counts_as_unrelated_does() -> None:
    """Claim support's stance: a verified work the cross-encoder reads as contradicting the
    claim counts 0 towards its strength and is counted apart; `undetermined` changes nothing."""
    read = read_markdown([NUMBERED_REPORT])
    refs = assign_citation_ids(read.references)
    claims = [c for c in link_claims(read.claims, refs) if c.claim_id == "p1-s1"]
    verified = {r.citation_id: _validation(r.citation_id, Status.VERIFIED) for r in refs}

    def scored(stance: Stance) -> dict:
        pairs = [
            CitationSupport(
                claim_id="p1-s1",
                citation_id=cid,
                support=0.6,
                label="related",
                relevance=0.9,
                stance=stance,
            )
            for cid in claims[0].citation_ids
        ]
        by_id = {r.citation_id: r for r in refs}
        return score_claims(claims, by_id, verified, pairs).row(0, named=True)

    undetermined, contradicting = scored("undetermined"), scored("contradicts")
    assert undetermined["strength"] == 1.0 and undetermined["contradicting_count"] == 0
    assert contradicting["unsupported"] and contradicting["strength"] == 0.0
    assert contradicting["contradicting_count"] == len(claims[0].citation_ids)
    assert contradicting["citation_support"][0]["stance"] == "contradicts"


def test_count_factor_plateaus_at_five_citations() -> None:
    citation = citation_from_reference(REFERENCES[0])
    overall = [
        calculate_citation_map_confidence(_claim([citation] * n))["overall_confidence"]
        for n in (1, 4, 5, 8)
    ]
    assert overall[0] < overall[1] < overall[2] == overall[3]


def test_unvalidated_claims_keep_their_stated_strength() -> None:
    citations = [citation_from_reference(ref) for ref in REFERENCES[:2]]
    scores = calculate_citation_map_confidence(_claim(citations, strength=0.35), {})
    assert scores["strength"] == 0.35 and scores["undecided_count"] == 2


# --- properties ---------------------------------------------------------------------------

_SOURCES = st.sampled_from(
    [
        "doi:10.1038/nature14539",
        "https://arxiv.org/abs/1106.5730",
        "https://blog.example.com/p",
        "http://example.com",
        "paper.pdf",
        "PMID: 123",
        "javascript:alert(1)",
        "Smith 2020",
    ]
) | st.text(min_size=1, max_size=40)
_LOCATIONS = (
    st.none()
    | st.sampled_from(["Page 45", "Section 3.2", "00:15:30", "Figure 4, p. 2"])
    | st.text(max_size=20)
)
_METADATA = st.fixed_dictionaries(
    {},
    optional={
        "author": st.text(max_size=10),
        "year": st.integers(1900, 2030),
        "title": st.text(max_size=20),
        "publication_date": st.text(max_size=10),
    },
)
_CITATIONS = st.builds(
    Citation,
    source=_SOURCES,
    location=_LOCATIONS,
    confidence=st.floats(0.0, 1.0),
    snippet=st.none() | st.text(max_size=20),
    metadata=_METADATA,
)
_VALIDATIONS = st.builds(
    ValidationResult,
    citation_id=st.just("x"),
    status=st.sampled_from(list(Status)),
    match_score=st.none() | st.floats(0.0, 1.0),
    retracted=st.booleans(),
    expression_of_concern=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(_CITATIONS, st.none() | _VALIDATIONS)
def test_confidence_is_bounded_and_failures_never_exceed_their_cap(
    citation: Citation, validation: ValidationResult | None
) -> None:
    scores = calculate_citation_confidence(citation, validation)
    assert 0.0 <= scores["overall_confidence"] <= 1.0
    if validation is None:
        return
    if validation.status in FAILED_CAPS:
        assert scores["overall_confidence"] <= FAILED_CAPS[validation.status]
    if validation.retracted:
        assert scores["overall_confidence"] <= RETRACTED_CAP
    if validation.expression_of_concern:
        assert scores["overall_confidence"] <= CONCERN_CAP
    if validation.status is Status.VERIFIED and not (
        validation.retracted or validation.expression_of_concern
    ):
        assert scores["overall_confidence"] >= scores["engine_confidence"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_CITATIONS, st.none() | _VALIDATIONS), max_size=7),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_claim_confidence_is_monotone_in_strength(
    pairs: list[tuple[Citation, ValidationResult | None]], low: float, high: float
) -> None:
    low, high = sorted((low, high))
    citations, validations = [], {}
    for index, (citation, validation) in enumerate(pairs):
        key = f"c{index}"
        citations.append(
            citation.model_copy(update={"metadata": {**citation.metadata, "citation_id": key}})
        )
        if validation is not None:
            validations[key] = validation.model_copy(update={"citation_id": key})
    weak = calculate_citation_map_confidence(_claim(citations, low), validations)
    strong = calculate_citation_map_confidence(_claim(citations, high), validations)
    assert 0.0 <= weak["overall_confidence"] <= strong["overall_confidence"] <= 1.0
    assert weak["strength"] <= strong["strength"]
