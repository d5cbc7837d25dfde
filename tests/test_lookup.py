"""lookup_references over real HTTP against the fake registry (tests/fake_registry)."""

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.audit import Identifiers, Provenance, Reference, Status
from models.csl import CSLDate, CSLItem, CSLName
from tasks.lookup import lookup_references
from tasks.read.bibtex import read_bibtex
from tasks.registries.clients import Registries, RegistryPool
from tests.fake_registry import FakeRegistry

ICLR_CROSSREF = Path(__file__).parent / "fixtures" / "registry" / "iclr_crossref_works.jsonl.gz"
PLOS = "10.1371/journal.pone.0033693"
PLOS_TITLE = (
    "Methylphenidate exposure induces dopamine neuron loss and activation of microglia in the "
    "basal ganglia of mice"
)
PLOS_RAW = (
    "Sadasivan S, Pond BB, Pani AK, Qu C, Jiao Y, Smeyne RJ. " + PLOS_TITLE + ". PLoS One. 2012;"
    "7(3):e33693."
)

SIGMOD = "10.1145/3448016.3452841"
TOPOI = "10.1007/s11245-019-09640-x"
BALLARD = "10.1016/j.matpur.2014.02.004"
BALLARD_RAW = (
    "Ballard M, Favero D, Katzarkov L. A category of kernels for equivariant factorizations, II: "
    "further implications. J Math Pures Appl. {year};102(4):702-57. doi:" + BALLARD
)


@pytest.fixture
def registries(fake_registry: FakeRegistry) -> Iterator[Registries]:
    settings = fake_registry.settings(
        max_attempts=2,
        backoff_base_s=0.01,
        backoff_cap_s=0.05,
    )
    with Registries.from_settings(settings, RegistryPool()) as clients:
        yield clients


@pytest.fixture
def crossref_pubmed(fake_registry: FakeRegistry) -> Iterator[Registries]:
    """Only Crossref and PubMed asked (CITEAUDIT_REGISTRIES=crossref,pubmed): arXiv ids go to
    Crossref as their DataCite DOIs."""
    settings = fake_registry.settings(
        max_attempts=2, backoff_base_s=0.01, backoff_cap_s=0.05, registries="crossref,pubmed"
    )
    with Registries.from_settings(settings, RegistryPool()) as clients:
        yield clients


def ref(
    key: str, raw: str | None = None, ids: Identifiers | None = None, **fields: Any
) -> Reference:
    return Reference.model_validate(
        {
            "citation_id": key,
            "item": CSLItem.model_validate({"id": key, **fields}),
            "provenance": Provenance(source_file="refs.bib", entry_key=key),
            "ids": ids or Identifiers(),
            "raw": raw,
        }
    )


def people(*names: str) -> list[CSLName]:
    return [CSLName(family=n.split()[-1], given=" ".join(n.split()[:-1]) or None) for n in names]


def plos(key: str, **changes: Any) -> Reference:
    fields: dict[str, Any] = {
        "title": PLOS_TITLE,
        "author": people(
            "S. Sadasivan", "B. B. Pond", "A. K. Pani", "C. Qu", "Y. Jiao", "R. J. Smeyne"
        ),
        "container-title": "PLoS One",
        "issued": CSLDate.from_year(2012),
    }
    fields.update(changes)
    return ref(key, ids=Identifiers(doi=fields.get("DOI")), **fields)


def test_dois_are_fetched_in_one_batch_and_each_gets_its_status(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    refs = [
        plos("real", DOI=PLOS),
        plos("wrong-title", DOI=PLOS, title="Deep residual learning for image recognition"),
        plos("fabricated", DOI="10.5555/citeaudit.no-such-work"),
    ]
    results = lookup_references(refs, registries)
    assert [r.citation_id for r in results] == ["real", "wrong-title", "fabricated"]
    assert [r.status for r in results] == [Status.VERIFIED, Status.MISMATCH, Status.NOT_FOUND]
    assert results[1].reason.startswith("DOI resolves to a different paper")
    assert results[2].reason.startswith("Crossref does not hold DOI 10.5555/citeaudit.no-such-work")
    assert fake_registry.count("works_filter") == 1


def test_doi_decides_when_a_pmid_is_also_given(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    both = plos("both", DOI=PLOS, PMID="24349601")
    both.ids = Identifiers(doi=PLOS, pmid="24349601")
    [result] = lookup_references([both], registries)
    assert result.status == Status.VERIFIED and result.matched_id == PLOS
    assert fake_registry.count("efetch") == 0


def test_a_doi_not_found_beside_a_pmid_that_verifies_is_a_real_work(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    # PubMed holds PMID 9997 (DOI 10.1016/0005-2795(76)90109-4); the citer mistyped the DOI.
    fields: dict[str, Any] = {
        "title": "Magnetic studies of Chromatium flavocytochrome C552. A mechanism for "
        "heme-flavin interaction",
        "issued": CSLDate.from_year(1976),
        "container-title": "Biochimica et biophysica acta",
    }
    typo = ref("typo", ids=Identifiers(doi="10.1016/0005-2795(76)90109-9", pmid="9997"), **fields)
    # Neither identifier held: the DOI's not_found stands.
    made_up = ref("made-up", ids=Identifiers(doi="10.5555/citeaudit.no-such", pmid="1"), **fields)
    results = lookup_references([typo, made_up], registries)
    assert [r.status for r in results] == [Status.VERIFIED, Status.NOT_FOUND], results[0].reason
    assert results[0].registry == "pubmed" and results[0].matched_id == "9997"
    assert "Crossref does not hold DOI 10.1016/0005-2795(76)90109-9" in results[0].reason
    assert results[0].asked == ["crossref", "pubmed"]
    assert results[1].reason.startswith("Crossref does not hold DOI 10.5555/citeaudit.no-such")


def test_an_arxiv_paper_retitled_between_versions_is_not_called_another_paper(
    registries: Registries,
) -> None:
    # arXiv 1711.05101 is "Fixing Weight Decay Regularization in Adam" in the fake (its v1 title);
    # cited as it has been titled since, by its two authors: a title to correct, not another
    # paper the id names.
    retitled = ref(
        "adamw",
        ids=Identifiers(arxiv="1711.05101"),
        title="Decoupled weight decay regularization",
        author=people("Ilya Loshchilov", "Frank Hutter"),
        issued=CSLDate.from_year(2019),
    )
    other_authors = retitled.model_copy(
        update={"item": retitled.item.model_copy(update={"author": people("Jane Doe")})}
    )
    results = lookup_references([retitled, other_authors], registries)
    assert [r.status for r in results] == [Status.MISMATCH, Status.MISMATCH]
    assert results[0].reason.startswith(
        "arXiv id 1711.05101 exists, but the reference disagrees on title (record: 'Fixing"
    ), results[0].reason
    assert "different paper" in results[1].reason


def test_aistats_cited_by_its_subject_is_its_venue(registries: Registries) -> None:
    # Google Scholar's venue for AISTATS papers; the registries write the conference's name.
    cited = ref(
        "hyperband",
        title="Non-stochastic best arm identification and hyperparameter optimization",
        author=people("Kevin Jamieson", "Ameet Talwalkar"),
        issued=CSLDate.from_year(2016),
        **{"container-title": "Artificial intelligence and statistics"},
    )
    [result] = lookup_references([cited], registries)
    assert result.status == Status.VERIFIED, result.reason
    assert "venue" in result.reason


def test_a_book_cited_by_its_publisher_is_not_contradicted_by_its_series(
    fake_registry: FakeRegistry,
) -> None:
    # RefChecker's ICLR lists give a book's publisher as its venue; OpenAlex names its series.
    settings = fake_registry.settings(max_attempts=1, openalex_api_key="key")
    books = [
        ref(
            "fsda",
            title="Functional and shape data analysis",
            author=people("A. Srivastava", "E. P. Klassen"),
            issued=CSLDate.from_year(2016),
            **{"container-title": "Springer"},  # record: 'Springer series in statistics'
        ),
        ref(
            "hep",
            title="Sex and Gender Differences in Pharmacology",
            author=people("Vera Regitz-Zagrosek"),
            issued=CSLDate.from_year(2012),
            **{"container-title": "Springer"},  # record: 'Handbook of experimental pharmacology'
        ),
    ]
    with Registries.from_settings(settings, RegistryPool()) as clients:
        results = lookup_references(books, clients)
    assert [r.status for r in results] == [Status.VERIFIED] * 2, [r.reason for r in results]
    assert [r.agreement.container for r in results] == [None, None]


def test_an_institutional_repository_is_no_venue(fake_registry: FakeRegistry) -> None:
    # OpenAlex's record of this ICML 2015 paper is Caltech's copy: its source, a repository
    # named 'CaltechAUTHORS', says nothing of where the paper appeared.
    settings = fake_registry.settings(max_attempts=1, openalex_api_key="key")
    cited = ref(
        "safeopt",
        title="Safe Exploration for Optimization with Gaussian Processes",
        author=people("Yanan Sui", "Alkis Gotovos", "Joel W. Burdick", "Andreas Krause"),
        issued=CSLDate.from_year(2015),
        **{"container-title": "Proceedings of the 32nd International Conference on Machine "
           "Learning, ICML 2015"},
    )  # fmt: skip
    with Registries.from_settings(settings, RegistryPool()) as clients:
        [result] = lookup_references([cited], clients)
    assert result.status == Status.VERIFIED, result.reason
    assert result.registry == "openalex" and result.record is not None
    assert result.record.container_title is None


def test_free_text_year_is_read_from_its_words_not_from_its_doi(registries: Registries) -> None:
    # The record is 2014 and so is the DOI's "matpur.2014": a citer's 2011 is still wrong.
    refs = [
        ref(key, raw=BALLARD_RAW.format(year=year), ids=Identifiers(doi=BALLARD))
        for key, year in (("wrong-year", 2011), ("right-year", 2014))
    ]
    results = lookup_references(refs, registries)
    assert [r.status for r in results] == [Status.MISMATCH, Status.VERIFIED], results[0].reason
    assert results[0].reason.endswith("disagrees on year (claimed 2011, record 2014)")
    assert results[0].agreement.year == 0.0 and results[1].agreement.year == 1.0


def test_free_text_without_the_subtitle_is_verified(registries: Registries) -> None:
    # Recorded title: "Vector Quotient Filters: Overcoming the Time/Space Trade-Off in ...".
    raw = "Pandey P, et al. Vector Quotient Filters. SIGMOD 2021. https://doi.org/" + SIGMOD
    [result] = lookup_references([ref("vqf", raw=raw, ids=Identifiers(doi=SIGMOD))], registries)
    assert result.status == Status.VERIFIED, result.reason
    assert result.agreement.title == 0.95


def test_print_year_years_after_online_first_is_the_works_year(registries: Registries) -> None:
    # Recorded: online 2019-04-22, in print Topoi 40(5), 2021-11.
    raw = (
        "Hoffmann MHG. Consensus building and its epistemic conditions. Topoi. {year};40(5):"
        "1173-86. doi:" + TOPOI
    )
    structured = {
        "title": "Consensus building and its epistemic conditions",
        "author": people("M. H. G. Hoffmann"),
        "container-title": "Topoi",
    }
    refs = [
        ref("text-print", raw=raw.format(year=2021), ids=Identifiers(doi=TOPOI)),
        ref("text-online", raw=raw.format(year=2019), ids=Identifiers(doi=TOPOI)),
        ref("bib-print", ids=Identifiers(doi=TOPOI), issued=CSLDate.from_year(2021), **structured),
        ref("bib-wrong", ids=Identifiers(doi=TOPOI), issued=CSLDate.from_year(2015), **structured),
    ]
    results = lookup_references(refs, registries)
    statuses = [r.status for r in results]
    assert statuses == [Status.VERIFIED] * 3 + [Status.MISMATCH], [r.reason for r in results]
    assert results[3].reason.endswith("disagrees on year (claimed 2015, record 2019 or 2021)")


def test_pmid_reference_is_checked_at_pubmed(registries: Registries) -> None:
    cited = ref(
        "pmid",
        ids=Identifiers(pmid="24349601"),
        title="Genes, economics, and happiness",
        author=people("J.-E. De Neve", "N. A. Christakis", "J. H. Fowler", "B. S. Frey"),
        issued=CSLDate.from_year(2012),
    )
    [result] = lookup_references([cited], registries)
    assert result.status == Status.VERIFIED, result.reason
    assert result.registry == "pubmed" and result.matched_id == "24349601"


def test_a_record_keeping_only_the_first_author_does_not_contradict_the_rest(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    # Crossref's real record of the Protein Data Bank paper (an old deposit) names only its first
    # author; the eight the paper has, cited in full, are not a wrong list.
    record = iclr_crossref_work("10.1093/nar/28.1.235")
    assert [a["family"] for a in record["author"]] == ["Berman"]
    fake_registry.add_crossref_work(record)
    authors = people(
        "Helen M. Berman", "John Westbrook", "Zukang Feng", "Gary Gilliland", "T. N. Bhat",
        "Helge Weissig", "Ilya N. Shindyalov", "Philip E. Bourne",
    )  # fmt: skip
    cited = ref(
        "pdb",
        ids=Identifiers(doi="10.1093/nar/28.1.235"),
        title="The protein data bank",
        author=authors,
        issued=CSLDate.from_year(2000),
        **{"container-title": "Nucleic Acids Research"},
    )
    # Another first author is still a wrong list.
    wrong = ref(
        "pdb-wrong",
        ids=Identifiers(doi="10.1093/nar/28.1.235"),
        title="The protein data bank",
        author=people("John Westbrook", "Helen M. Berman"),
        issued=CSLDate.from_year(2000),
    )
    results = lookup_references([cited, wrong], registries)
    assert [r.status for r in results] == [Status.VERIFIED, Status.MISMATCH], results[1].reason
    assert "authors" in results[0].reason and "authors" in results[1].reason


def iclr_crossref_work(doi: str) -> dict[str, Any]:
    """A real Crossref record recorded for the ICLR bibliographies (tests/test_iclr_audit.py)."""
    with gzip.open(ICLR_CROSSREF, "rt") as lines:
        return next(w for w in map(json.loads, lines) if w["DOI"] == doi)


def test_the_sponsors_a_record_lists_as_authors_are_not_missing_people(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    # OSTI's Crossref record of an RMI report lists its five authors among three organisations
    # (its sponsors and contractors); the report is cited by its five authors.
    record = iclr_crossref_work("10.2172/2589179")
    assert sum("name" in a for a in record["author"]) == 3
    fake_registry.add_crossref_work(record)
    cited = ref(
        "der",
        ids=Identifiers(doi="10.2172/2589179"),
        title="Aggregated distributed energy resources in 2024: The fundamentals",
        author=people("Stephanie Bieler", "Cara Goldenberg", "Avery McEvoy", "Katerina Stephan",
                      "Alex Walmsley"),
        issued=CSLDate.from_year(2024),
    )  # fmt: skip
    [result] = lookup_references([cited], registries)
    assert result.status == Status.VERIFIED, result.reason
    assert result.agreement.authors == 1.0


def test_a_group_author_is_not_compared_with_the_people_a_record_lists(
    registries: Registries,
) -> None:
    # The GPT-4 report's byline is "OpenAI"; arXiv lists its 279 people. "Meta Team" likewise.
    gpt4 = ref(
        "gpt4",
        ids=Identifiers(arxiv="2303.08774"),
        title="GPT-4 technical report",
        author=[CSLName(literal="OpenAI")],
        issued=CSLDate.from_year(2023),
    )
    llama = ref(
        "llama",
        ids=Identifiers(arxiv="2407.21783"),
        title="The llama 3 herd of models",
        author=[CSLName(given="Meta", family="Team")],
        issued=CSLDate.from_year(2024),
    )
    # A person the record does not list still contradicts it.
    person = ref(
        "person",
        ids=Identifiers(arxiv="2303.08774"),
        title="GPT-4 technical report",
        author=people("Jane Doe"),
        issued=CSLDate.from_year(2023),
    )
    results = lookup_references([gpt4, llama, person], registries)
    assert [r.status for r in results] == [Status.VERIFIED, Status.VERIFIED, Status.MISMATCH], [
        r.reason for r in results
    ]
    assert results[0].registry == "arxiv" and results[0].agreement.authors is None


def test_arxiv_id_is_looked_up_as_its_datacite_doi_when_arxiv_is_off(
    crossref_pubmed: Registries,
) -> None:
    cited = ref(
        "arxiv",
        ids=Identifiers(arxiv="1902.02534"),
        title="Crowdsourcing open citations with CROCI",
        author=people("I. Heibi", "S. Peroni", "D. Shotton"),
        issued=CSLDate.from_year(2019),
    )
    [result] = lookup_references([cited], crossref_pubmed)
    assert result.status == Status.VERIFIED, result.reason
    assert result.registry == "datacite" and result.matched_id == "10.48550/arxiv.1902.02534"


def test_datacite_doi_whose_metadata_could_not_be_fetched_is_unverified(
    fake_registry: FakeRegistry, crossref_pubmed: Registries
) -> None:
    fake_registry.inject_fault("server_error", service="doi", rate=1.0)
    cited = ref(
        "arxiv",
        ids=Identifiers(doi="10.48550/arxiv.1902.02534"),
        title="Deep residual learning for image recognition",
        author=people("K. He", "X. Zhang"),
        issued=CSLDate.from_year(2016),
    )
    [result] = lookup_references([cited], crossref_pubmed)
    assert result.status == Status.UNVERIFIED, result.reason
    assert result.reason.startswith("could not check DOI 10.48550/arxiv.1902.02534")
    assert result.error and "HTTP 500" in result.error


def test_free_text_is_matched_by_search_and_fabrication_is_unmatched(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    fabricated = PLOS_RAW.replace(
        "microglia in the basal ganglia of mice", "astrocytes in aged rats"
    )
    results = lookup_references(
        [ref("found", raw=PLOS_RAW), ref("made-up", raw=fabricated)], registries
    )
    assert results[0].status == Status.VERIFIED and results[0].matched_id == PLOS
    assert results[1].status == Status.UNMATCHED
    assert fake_registry.count("works_query") >= 2


def test_biomedical_reference_without_match_also_asks_pubmed(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    cited = plos("bio", title="Dopamine neuron loss in mice treated with a novel stimulant")
    [result] = lookup_references([cited], registries)
    assert result.status == Status.UNMATCHED
    assert fake_registry.count("esearch") == 1


def test_search_failure_is_unverified_never_unmatched(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    fake_registry.inject_fault("server_error", service="crossref", endpoint="works_query", rate=1.0)
    [result] = lookup_references([ref("free", raw=PLOS_RAW)], registries)
    assert result.status == Status.UNVERIFIED
    assert result.reason.startswith("registry search failed") and result.error


def test_a_failed_index_after_the_venues_registry_of_record_leaves_it_unmatched(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    """A made-up NeurIPS paper: DBLP, which indexes every NeurIPS paper, answers no; Semantic
    Scholar fails (its keyless pool refusing). Unmatched, the reason naming who failed. Cited at
    a NeurIPS workshop (DBLP lacks many), the failure keeps it unverified, as does DBLP's own."""
    fake_registry.inject_fault("server_error", service="s2", rate=1.0)
    made_up = {
        "title": "Recursive gradient folding for sparse transformers",
        "author": people("Ada Quill", "Bo Ren"),
        "issued": CSLDate.from_year(2023),
    }
    main, workshop = lookup_references(
        [
            ref(
                "main",
                **made_up,
                **{"container-title": "Advances in Neural Information Processing Systems"},
            ),
            ref(
                "workshop",
                **made_up,
                **{"container-title": "NeurIPS 2023 Workshop on Efficient Models"},
            ),
        ],
        registries,
    )
    assert fake_registry.count(service="dblp") >= 2 and fake_registry.count(service="s2") >= 2
    assert main.status is Status.UNMATCHED
    assert "semantic_scholar could not be asked" in main.reason and "dblp answered" in main.reason
    assert workshop.status is Status.UNVERIFIED
    assert workshop.reason.startswith("registry search failed at semantic_scholar")
    fake_registry.inject_fault("server_error", service="dblp", rate=1.0)
    [main] = lookup_references(
        [
            ref(
                "main",
                **made_up,
                **{"container-title": "Advances in Neural Information Processing Systems"},
            )
        ],
        registries,
    )
    assert main.status is Status.UNVERIFIED and "dblp" in main.reason


def test_lookup_failure_is_unverified_never_not_found(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    fake_registry.inject_fault("unavailable", service="crossref", rate=1.0)
    [result] = lookup_references([plos("doi", DOI=PLOS)], registries)
    assert result.status == Status.UNVERIFIED and result.error


def test_offline_asks_nobody(fake_registry: FakeRegistry, registries: Registries) -> None:
    refs = [plos("a", DOI=PLOS), ref("b", raw=PLOS_RAW)]
    results = lookup_references(refs, registries, offline=True)
    assert [(r.citation_id, r.status, r.reason) for r in results] == [
        ("a", Status.UNVERIFIED, "offline"),
        ("b", Status.UNVERIFIED, "offline"),
    ]
    assert lookup_references(refs, None, offline=True)[0].reason == "offline"
    assert sum(fake_registry.counts().values()) == 0


def test_non_scholarly_source_is_never_sent(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    email = ref("mail", raw="E-mail from J. Smith, 3 May 2024")
    email.scholarly = False
    [result] = lookup_references([email], registries)
    assert result.status == Status.UNVERIFIED
    assert sum(fake_registry.counts().values()) == 0


def test_empty_reference_is_unmatched_without_a_request(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    [result] = lookup_references([ref("empty")], registries)
    assert result.status == Status.UNMATCHED
    assert sum(fake_registry.counts().values()) == 0


def test_arxiv_ids_where_google_scholar_writes_them_are_one_batched_lookup(
    fake_registry: FakeRegistry, registries: Registries
) -> None:
    """`journal = {arXiv preprint arXiv:2207.05221}`, `CoRR abs/...`, `arXiv:... [cs.LG]` in
    note, howpublished and eprint: one arXiv id_list request, no title search anywhere."""
    bib = Path(__file__).parent / "fixtures" / "reflists" / "scholar" / "shapes.bib"
    keys = {
        "kadavath2022language",
        "DBLP:journals/corr/VaswaniSPUJGKP17",
        "hendrycks2016gelu",
        "loshchilov2017decoupled",
        "kingma2014adam",
    }
    refs = [r for r in read_bibtex([bib]).references if r.provenance.entry_key in keys]
    refs = [r.model_copy(update={"citation_id": r.provenance.entry_key}) for r in refs]
    assert len(lookup_references(refs, registries)) == 5
    assert fake_registry.counts() == {"arxiv_ids": 1}
