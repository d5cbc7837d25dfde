"""The DBLP, arXiv, Semantic Scholar, OpenAlex and Europe PMC clients over real HTTP against the
fake registry's recorded answers: lookups, batches, not found, 429s, unusable bodies, keys."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tasks.registries import RegistrySettings
from tasks.registries.clients import Registries, RegistryPool
from tasks.registries.http import RegistryUnavailable
from tests.fake_registry.server import FakeRegistry

S2_KEY = "s2KEY-7c1e9a33d05b"
OPENALEX_KEY = "oaKEY-41f2d8e6b7c9"
SEQ2SQL = (
    "Seq2SQL: Generating Structured Queries from Natural Language using Reinforcement Learning"
)
ALPHAFOLD_DOI = "10.1038/s41586-021-03819-2"


@pytest.fixture
def fake() -> Iterator[FakeRegistry]:
    with FakeRegistry() as registry:
        yield registry


@pytest.fixture
def registries(fake: FakeRegistry, tmp_path: Path) -> Iterator[Registries]:
    with make(fake, tmp_path) as built:
        yield built


def make(fake: FakeRegistry, tmp_path: Path, **options: Any) -> Registries:
    """Clients aimed at the fake, quick retries, a private cache, both keys unless overridden."""
    settings: dict[str, Any] = {
        "cache_dir": tmp_path / "cache",
        "max_attempts": 3,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
        "s2_api_key": S2_KEY,
        "openalex_api_key": OPENALEX_KEY,
        **options,
    }
    return Registries.from_settings(fake.settings(**settings), RegistryPool())


# --- DBLP -----------------------------------------------------------------------------------


def test_dblp_title_search_maps_keys_venues_and_homonym_numbers(registries: Registries) -> None:
    assert registries.dblp is not None
    records = registries.dblp.search(
        "Large Language Models on Tabular Data: Prediction, Generation, and Understanding"
    )
    by_key = {r.identifier: r for r in records}
    tmlr = by_key["journals/tmlr/FangXTH0QSF24"]
    assert tmlr.registry == "dblp"
    assert tmlr.item.container_title == "Trans. Mach. Learn. Res."
    assert not tmlr.item.title.endswith(".")  # DBLP's closing period is not the title's
    names = {(n.given, n.family) for n in tmlr.item.author or []}
    assert ("Jiani", "Zhang") in names  # "Jiani Zhang 0003": the homonym number is dropped
    assert by_key["journals/corr/abs-2402-17944"].item.container_title == "CoRR"


def test_dblp_finds_nothing_for_a_title_it_does_not_hold(
    fake: FakeRegistry, registries: Registries
) -> None:
    assert registries.dblp is not None
    assert registries.dblp.search("Quantum gardening with transformer-based hedgehogs") == []
    assert fake.count("dblp_search") == 1


def test_dblp_is_asked_the_plain_words_of_an_accented_or_tex_title(
    fake: FakeRegistry, registries: Registries
) -> None:
    """DBLP ANDs the query's words: `nystrom` (the title's words folded) does not find its
    `Nyström`, nor `varepsilon` its `ε`. The plain words alone find both."""
    for key, title in (
        ("nystrom", "Distributed Nyström Kernel Learning with Communications."),
        ("epsilon", "Augmenting Online Algorithms with ε-Accurate Predictions."),
    ):
        info = {"title": title, "venue": "ICML", "year": "2021", "key": f"conf/x/{key}"}
        fake.scholarly.add_dblp_hit({"info": info, "url": f"URL#{key}"})
    assert registries.dblp is not None
    for cited in (
        "Distributed Nyström Kernel Learning with Communications",
        "Augmenting Online Algorithms with $\\varepsilon$-Accurate Predictions",
    ):
        [found] = registries.dblp.search(cited)
        assert found.item.title == cited.replace("$\\varepsilon$", "ε")


def test_dblp_429_page_is_waited_out(fake: FakeRegistry, tmp_path: Path) -> None:
    """Asked faster than DBLP allows, the client gets DBLP's HTML 429 and honours Retry-After."""
    with make(fake, tmp_path, dblp_max_rate=50.0, max_attempts=4) as registries:
        assert registries.dblp is not None
        for title in ("Seq2SQL", "tabular data survey", "AlphaFold"):
            registries.dblp.search(title)
    assert fake.rate_limited("dblp") >= 1
    assert fake.count("dblp_search", status=200) == 3


# --- arXiv ----------------------------------------------------------------------------------


def test_arxiv_ids_are_fetched_in_one_batch_and_missing_ids_are_not_found(
    fake: FakeRegistry, registries: Registries
) -> None:
    assert registries.arxiv is not None
    lookups = registries.arxiv.fetch_ids(["arXiv:1707.08567v1", "0000.0000", "1605.08386"])
    assert fake.count("arxiv_ids") == 1
    assert lookups["1707.08567"].record is not None
    record = lookups["1707.08567"].record
    assert record.item.DOI == "10.48550/arXiv.1707.08567"
    assert record.item.year() == 2017
    assert lookups["0000.0000"].record is None and lookups["0000.0000"].error is None


def test_arxiv_paces_one_request_per_three_seconds(fake: FakeRegistry, tmp_path: Path) -> None:
    with make(fake, tmp_path, arxiv_batch_size=1) as registries:
        assert registries.arxiv is not None
        assert registries.arxiv.fetch_ids(["1707.08567", "1605.08386"])
    first, second = (r.at for r in fake.log if r.service == "arxiv")
    assert second - first >= 2.9
    assert fake.rate_limited("arxiv") == 0


def test_arxiv_title_search(registries: Registries) -> None:
    assert registries.arxiv is not None
    records = registries.arxiv.search(SEQ2SQL)
    assert [r.identifier for r in records][:1] == ["1709.00103"]
    assert records[0].item.container_title == "arXiv"


def test_arxiv_malformed_feed_is_unavailable_not_absent(fake: FakeRegistry, tmp_path: Path) -> None:
    fake.rate_limits = False  # the retries come quickly: this is about the body, not pacing
    fake.inject_fault("wrong_content_type", count=10, service="arxiv")
    with make(fake, tmp_path, arxiv_max_rate=100.0) as registries:
        assert registries.arxiv is not None
        lookup = registries.arxiv.fetch_ids(["1707.08567"])["1707.08567"]
    assert lookup.record is None and lookup.error and "content type" in lookup.error


# --- Semantic Scholar -----------------------------------------------------------------------


def test_s2_batch_aligns_nulls_with_the_ids_and_sends_the_key(
    fake: FakeRegistry, registries: Registries
) -> None:
    assert registries.semantic_scholar is not None
    lookups = registries.semantic_scholar.fetch_ids(["ARXIV:1709.00103", "DOI:10.9999/none"])
    assert lookups["ARXIV:1709.00103"].record is not None
    assert lookups["ARXIV:1709.00103"].record.item.title == SEQ2SQL
    assert lookups["DOI:10.9999/none"].record is None
    assert lookups["DOI:10.9999/none"].error is None
    assert [r.pool for r in fake.log if r.service == "s2"] == ["s2-api-key"]


def test_s2_title_match_and_no_match(fake: FakeRegistry, registries: Registries) -> None:
    assert registries.semantic_scholar is not None
    assert [r.item.title for r in registries.semantic_scholar.search(SEQ2SQL)] == [SEQ2SQL]
    assert registries.semantic_scholar.search("A survey of nothing in particular at all") == []
    assert fake.count("s2_match", status=404) == 1


def test_s2_without_key_uses_the_shared_pool(fake: FakeRegistry, tmp_path: Path) -> None:
    with make(fake, tmp_path, s2_api_key=None) as registries:
        assert registries.semantic_scholar is not None
        assert registries.semantic_scholar.search(SEQ2SQL)
    assert [r.pool for r in fake.log] == ["s2-shared"]


def test_s2_truncated_body_is_retried(fake: FakeRegistry, registries: Registries) -> None:
    fake.inject_fault("truncated", count=1, service="s2")
    assert registries.semantic_scholar is not None
    assert registries.semantic_scholar.search(SEQ2SQL)
    assert fake.count("s2_match") == 2


# --- OpenAlex -------------------------------------------------------------------------------


def test_openalex_needs_a_key(fake: FakeRegistry, tmp_path: Path) -> None:
    with make(fake, tmp_path, openalex_api_key=None) as registries:
        assert not registries.asks("openalex")
        assert "OPENALEX_API_KEY" in (registries.status()["openalex"] or "")


def test_openalex_dois_in_one_batch_and_title_search(
    fake: FakeRegistry, registries: Registries
) -> None:
    assert registries.asks("openalex") and registries.openalex is not None
    lookups = registries.openalex.fetch_dois([ALPHAFOLD_DOI, "10.9999/none"])
    assert fake.count("openalex_dois") == 1
    assert lookups[ALPHAFOLD_DOI].record is not None
    assert lookups[ALPHAFOLD_DOI].record.item.container_title == "Nature"
    assert lookups["10.9999/none"].record is None and lookups["10.9999/none"].error is None
    found = registries.openalex.search("Highly accurate protein structure prediction AlphaFold")
    assert found[0].identifier == "W3177828909"
    assert all(r.pool == "openalex-api-key" for r in fake.log)


def test_openalex_server_errors_leave_the_lookup_unanswered(
    fake: FakeRegistry, registries: Registries
) -> None:
    fake.inject_fault("server_error", count=10, service="openalex")
    assert registries.openalex is not None
    lookup = registries.openalex.fetch_dois([ALPHAFOLD_DOI])[ALPHAFOLD_DOI]
    assert lookup.record is None and "HTTP 500" in (lookup.error or "")
    with pytest.raises(RegistryUnavailable):
        registries.openalex.search("AlphaFold")


# --- Europe PMC -----------------------------------------------------------------------------


def test_europepmc_pmcids_in_one_batch(fake: FakeRegistry, registries: Registries) -> None:
    held = sorted(r["pmcid"] for r in fake.scholarly.europepmc.values() if r.get("pmcid"))[:2]
    assert registries.europepmc is not None
    lookups = registries.europepmc.fetch_pmcids([*held, "PMC1"])
    assert fake.count("europepmc_search") == 1
    assert all(lookups[p].record is not None for p in held)
    assert lookups["PMC1"].record is None and lookups["PMC1"].error is None


def test_europepmc_title_search_reads_author_lists_and_drops_the_period(
    registries: Registries,
) -> None:
    assert registries.europepmc is not None
    (record,) = registries.europepmc.search(
        "Abscopal response in a patient with fibrolamellar hepatocellular carcinoma"
        " following radiotherapy"
    )
    assert record.identifier == "MED:39709209"
    assert record.item.title and not record.item.title.endswith(".")
    assert record.item.author and record.item.author[0].family == "Schoenfeld"
    assert record.item.container_title == "Lancet (London, England)"


def test_keys_never_reach_the_cache_or_errors(fake: FakeRegistry, tmp_path: Path) -> None:
    fake.inject_fault("server_error", count=10, service="openalex")
    with make(fake, tmp_path, cache_enabled=True) as registries:
        assert registries.semantic_scholar is not None and registries.openalex is not None
        registries.semantic_scholar.search(SEQ2SQL)
        error = registries.openalex.fetch_dois([ALPHAFOLD_DOI])[ALPHAFOLD_DOI].error or ""
    assert OPENALEX_KEY not in error
    cached = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert cached and S2_KEY.encode() not in cached and OPENALEX_KEY.encode() not in cached


def test_registries_selects_by_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEAUDIT_REGISTRIES", "crossref, s2")
    status = Registries.from_settings(
        RegistrySettings(cache_enabled=False), RegistryPool()
    ).status()
    assert status["crossref"] is None and status["semantic_scholar"] is None
    assert status["dblp"] == "not in CITEAUDIT_REGISTRIES"


@pytest.mark.parametrize(
    ("service", "fault"),
    [
        ("dblp", "wrong_content_type"),
        ("dblp", "truncated"),
        ("europepmc", "wrong_content_type"),
        ("openalex", "truncated"),
    ],
)
def test_searches_with_unusable_answers_are_unavailable_not_empty(
    fake: FakeRegistry, registries: Registries, service: str, fault: str
) -> None:
    """A body that cannot be read is no answer: the search raises, it never returns nothing."""
    fake.inject_fault(fault, rate=1.0, service=service)
    client = {
        "dblp": registries.dblp,
        "europepmc": registries.europepmc,
        "openalex": registries.openalex,
    }[service]
    assert client is not None
    with pytest.raises(RegistryUnavailable):
        client.search("Highly accurate protein structure prediction")
    assert fake.count(service=service) == 3  # every attempt made
