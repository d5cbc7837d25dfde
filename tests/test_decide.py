"""validate.py on real Crossref records: real citations are not flagged, fabrications are."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from models.audit import Identifiers, Lookup, Provenance, Reference, RegistryRecord, Status
from models.csl import CSLDate, CSLItem, CSLName
from tasks.match.decide import compare, decide, decide_identified, decide_unidentified
from tasks.registries.crossref_map import crossref_work_to_csl

FIXTURES = Path(__file__).parent / "fixtures" / "validate"
WORKS = {w["DOI"].lower(): w for w in json.loads((FIXTURES / "crossref_works.json").read_text())}
PLOS = "10.1371/journal.pone.0033693"
SCIREP = "10.1038/srep16696"
SIGMOD = "10.1145/3448016.3452841"
LAK = "10.1145/3027385.3027428"


def record(doi: str, **changes: Any) -> RegistryRecord:
    work = copy.deepcopy(WORKS[doi])
    work.update(changes)
    return crossref_work_to_csl(work)


def person(given: str | None, family: str, particle: str | None = None) -> CSLName:
    return CSLName.model_validate(
        {"given": given, "family": family, "non-dropping-particle": particle}
    )


def ref(raw: str | None = None, **fields: Any) -> Reference:
    item = CSLItem.model_validate({"id": "r1", **fields})
    return Reference.model_validate(
        {
            "citation_id": "c1",
            "item": item,
            "raw": raw,
            "provenance": Provenance(source_file="refs.bib", entry_key="r1"),
        }
    )


def found(doi: str, rec: RegistryRecord | None = None) -> Lookup:
    return Lookup(identifier=doi, record=rec or record(doi), attempts=1)


def plos_as_cited(**changes: Any) -> Reference:
    """PLOS ONE 10.1371/journal.pone.0033693 as a citer writes it: initials, abbreviated journal,
    sentence-case title, e-page."""
    fields: dict[str, Any] = {
        "title": "Methylphenidate exposure induces dopamine neuron loss and activation of "
        "microglia in the basal ganglia of mice",
        "author": [
            person("S.", "Sadasivan"),
            person("B. B.", "Pond"),
            person("A. K.", "Pani"),
            person("C.", "Qu"),
            person("Y.", "Jiao"),
            person("R. J.", "Smeyne"),
        ],
        "container-title": "PLoS One",
        "issued": CSLDate.from_year(2012),
        "page": "e33693",
        "DOI": PLOS,
    }
    fields.update(changes)
    return ref(**fields)


# --- real citations are verified -------------------------------------------------------------


def test_citer_style_citation_is_verified_with_full_agreement() -> None:
    result = decide_identified(plos_as_cited(), found(PLOS))
    assert result.status == Status.VERIFIED
    assert result.agreement.title == 1.0
    assert result.agreement.authors == 1.0
    assert result.agreement.container == 1.0
    assert result.agreement.pages == 1.0
    assert result.matched_id == PLOS and result.registry == "crossref"
    assert "agrees on title, authors, year and venue" in result.reason


@pytest.mark.parametrize(
    "changes",
    [
        {"issued": CSLDate.from_year(2013)},  # print year after online-first
        {"container-title": "PLOS ONE"},
        {
            "title": "{Methylphenidate} Exposure Induces Dopamine Neuron Loss and Activation of "
            "Microglia in the Basal Ganglia of Mice."
        },
        {"author": [person("Shankar", "Sadasivan"), person("B.", "Pond"), {"literal": "others"}]},
    ],
    ids=["online-first-year", "journal-casing", "latex-braces", "et-al"],
)
def test_ordinary_citer_variation_is_verified(changes: dict[str, Any]) -> None:
    result = decide_identified(plos_as_cited(**changes), found(PLOS))
    assert result.status == Status.VERIFIED, result.reason


def test_abbreviated_journal_greek_letter_and_compound_surname_are_verified() -> None:
    cited = ref(
        title="Single-molecule FRET studies on α-synuclein oligomerization of Parkinson's "
        "disease genetically related mutants",
        author=[
            person("L.", "Tosatto"),
            person("M. H.", "Horrocks"),
            person("A. J.", "Dear"),
            person("T. P. J.", "Knowles"),
            person("M.", "Serra", "Dalla"),
            person("N.", "Cremades"),
            person("C. M.", "Dobson"),
            person("D.", "Klenerman"),
        ],
        **{"container-title": "Sci. Rep."},
        issued=CSLDate.from_year(2015),
    )
    result = decide_identified(cited, found(SCIREP))
    assert result.status == Status.VERIFIED, result.reason
    assert result.agreement.authors == 1.0


def test_conference_acronym_particle_and_page_range_style_are_verified() -> None:
    cited = ref(
        title="Widget, Widget as You Lead, I Am Performing Well Indeed!",
        author=[
            person("M.", "Scheffel"),
            person("H.", "Drachsler"),
            person("K.", "Kreijns"),
            person("J.", "Kraker", "de"),
            person("M.", "Specht"),
        ],
        **{
            "container-title": "Proceedings of the 7th International Learning Analytics and "
            "Knowledge Conference (LAK '17)"
        },
        issued=CSLDate.from_year(2017),
        page="289--98",
    )
    result = decide_identified(cited, found(LAK))
    assert result.status == Status.VERIFIED, result.reason


def test_sigmod_acronym_matches_the_acm_proceedings_title() -> None:
    cited = ref(
        title="Vector quotient filters",
        author=[
            person("P.", "Pandey"),
            person("A.", "Conway"),
            person("J.", "Durie"),
            person("M. A.", "Bender"),
            person("M.", "Farach-Colton"),
            person("R.", "Johnson"),
        ],
        **{"container-title": "SIGMOD"},
        issued=CSLDate.from_year(2021),
    )
    result = decide_identified(cited, found(SIGMOD))
    assert result.status == Status.VERIFIED, result.reason
    assert result.agreement.container == 1.0
    assert result.agreement.title == pytest.approx(0.95)  # the citation drops the subtitle


# --- fabrications are caught -----------------------------------------------------------------


def test_real_doi_attached_to_another_paper_is_a_mismatch() -> None:
    cited = plos_as_cited(title="Deep residual learning for image recognition")
    result = decide_identified(cited, found(PLOS))
    assert result.status == Status.MISMATCH
    assert result.reason.startswith("DOI resolves to a different paper: 'Methylphenidate")
    assert result.agreement.title is not None and result.agreement.title < 0.6
    assert result.record is not None and result.matched_id == PLOS


def test_near_miss_title_is_a_mismatch() -> None:
    cited = plos_as_cited(
        title="Methylphenidate exposure induces dopamine neuron loss and activation of "
        "astrocytes in the basal ganglia of mice"
    )
    result = decide_identified(cited, found(PLOS))
    assert result.status == Status.MISMATCH
    assert "title" in result.reason and "different paper" not in result.reason


def test_swapped_authors_are_a_mismatch() -> None:
    scirep_authors = record(SCIREP).item.author
    result = decide_identified(plos_as_cited(author=scirep_authors), found(PLOS))
    assert result.status == Status.MISMATCH
    assert "authors" in result.reason and result.agreement.authors == 0.0


def test_partial_author_list_without_et_al_is_a_mismatch() -> None:
    cited = plos_as_cited(author=[person("S.", "Sadasivan"), person("R. J.", "Smeyne")])
    result = decide_identified(cited, found(PLOS))
    assert result.status == Status.MISMATCH
    assert result.agreement.authors == pytest.approx(2 / 6)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"container-title": "Nature Communications"}, "venue"),
        ({"issued": CSLDate.from_year(2009)}, "year"),
        ({"issued": CSLDate.from_year(2031)}, "year"),
    ],
    ids=["wrong-venue", "wrong-year", "future-year"],
)
def test_wrong_venue_or_year_is_a_mismatch(changes: dict[str, Any], field: str) -> None:
    result = decide_identified(plos_as_cited(**changes), found(PLOS))
    assert result.status == Status.MISMATCH
    assert f"disagrees on {field}" in result.reason


def test_preprint_venue_is_not_compared_and_preprint_year_gap_is_tolerated() -> None:
    cited = plos_as_cited(**{"container-title": "bioRxiv"}, issued=CSLDate.from_year(2010))
    agreement = compare(cited.item, None, record(PLOS).item)
    assert agreement.container is None
    assert agreement.year == 0.5
    assert decide(agreement).consistent


# --- lookups that found nothing or failed ----------------------------------------------------


def test_transport_error_is_unverified_never_not_found() -> None:
    lookup = Lookup(identifier=PLOS, error="ConnectTimeout after 5 attempts", attempts=5)
    result = decide_identified(plos_as_cited(), lookup)
    assert result.status == Status.UNVERIFIED
    assert result.error == "ConnectTimeout after 5 attempts" and result.attempts == 5
    assert "could not check DOI" in result.reason


def test_registry_answer_without_record_is_not_found_and_says_who_was_asked() -> None:
    result = decide_identified(plos_as_cited(), Lookup(identifier="10.9999/fake.1", attempts=1))
    assert result.status == Status.NOT_FOUND
    assert result.reason == (
        "Crossref does not hold DOI 10.9999/fake.1 and its registration-agency lookup names no "
        "agency for it"
    )
    pmid = decide_identified(plos_as_cited(), Lookup(identifier="99999999", attempts=1))
    assert pmid.status == Status.NOT_FOUND
    assert pmid.reason == "PubMed does not hold PMID 99999999"


def test_identifier_only_reference_checks_existence_only() -> None:
    result = decide_identified(ref(DOI=PLOS), found(PLOS))
    assert result.status == Status.VERIFIED
    assert "only existence was checked" in result.reason
    assert result.agreement.title is None


def test_record_without_metadata_is_verified_existence() -> None:
    bare = RegistryRecord(
        registry="other-agency",
        identifier="10.1400/12345",
        item=CSLItem(id="10.1400/12345", DOI="10.1400/12345"),
        metadata_missing=True,
    )
    result = decide_identified(plos_as_cited(), found("10.1400/12345", bare))
    assert result.status == Status.VERIFIED
    assert "gives no metadata" in result.reason and result.registry == "other-agency"


def test_retraction_and_relations_are_carried_from_the_record() -> None:
    retraction = {
        "DOI": "10.1371/notice",
        "type": "retraction",
        "source": "retraction-watch",
        "updated": {"date-parts": [[2024, 1, 1]]},
    }
    relation = {"has-preprint": [{"id": "10.1101/x", "id-type": "doi", "asserted-by": "subject"}]}
    rec = record(PLOS, **{"updated-by": [retraction], "relation": relation})
    result = decide_identified(plos_as_cited(), found(PLOS, rec))
    assert result.status == Status.VERIFIED
    assert result.retracted and not result.corrected
    assert result.relations == rec.relations and rec.relations


# --- references without identifier: search candidates ----------------------------------------


def candidates() -> list[RegistryRecord]:
    return [record(doi) for doi in sorted(WORKS)]


def test_free_text_reference_matches_its_record() -> None:
    raw = (
        "Sadasivan S, Pond BB, Pani AK, Qu C, Jiao Y, Smeyne RJ. Methylphenidate exposure induces "
        "dopamine neuron loss and activation of microglia in the basal ganglia of mice. PLoS One. "
        "2012;7(3):e33693."
    )
    result = decide_unidentified(ref(raw=raw), candidates())
    assert result.status == Status.VERIFIED, result.reason
    assert result.matched_id == PLOS
    assert result.agreement.title == 1.0 and result.agreement.authors == 1.0
    assert result.match_score is not None and result.match_score > 0.9


def test_fabricated_free_text_reference_is_unmatched() -> None:
    raw = (
        "Sadasivan S, Smeyne RJ. Methylphenidate exposure protects dopamine neurons in the "
        "striatum of aged rats. PLoS One. 2014;9:e41122."
    )
    result = decide_unidentified(ref(raw=raw), candidates())
    assert result.status == Status.UNMATCHED
    assert "closest candidate 10.1371/journal.pone.0033693" in result.reason
    assert result.record is None and result.matched_id is None


def test_a_candidate_with_nothing_in_common_is_not_quoted() -> None:
    """A 'closest candidate' scoring near zero is no lead: the reason says none came close."""
    cited = ref(raw="Kingma DP, Welling M. Auto-Encoding Variational Bayes. ICLR 2014.")
    result = decide_unidentified(cited, candidates())
    assert result.status == Status.UNMATCHED
    assert "no candidate came close" in result.reason
    assert "closest candidate" not in result.reason


def test_structured_reference_picks_the_right_candidate() -> None:
    cited = plos_as_cited(DOI=None)
    result = decide_unidentified(cited, candidates())
    assert result.status == Status.VERIFIED and result.matched_id == PLOS


def test_search_with_no_candidate_is_unmatched_not_not_found() -> None:
    result = decide_unidentified(plos_as_cited(DOI=None), [])
    assert result.status == Status.UNMATCHED
    assert result.reason == "no registry candidate found by search"


def test_a_reference_giving_only_an_identifier_we_do_not_look_up_says_so() -> None:
    pmcid_only = ref().model_copy(update={"ids": Identifiers(pmcid="PMC1234567")})
    result = decide_unidentified(pmcid_only, [])
    assert result.status == Status.UNMATCHED
    assert result.reason.startswith("the reference gives only PMCID PMC1234567, which")
    assert decide_unidentified(ref(), []).reason.startswith("the reference gives no identifier")


def test_title_alone_is_not_enough_to_accept_a_candidate() -> None:
    cited = ref(title="Vector Quotient Filters")
    result = decide_unidentified(cited, candidates())
    assert result.status == Status.UNMATCHED
    assert "too few fields" in result.reason
