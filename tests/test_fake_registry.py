"""The fake registry itself, spoken to with plain httpx over real sockets."""

import gzip
import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from defusedxml import ElementTree as SafeET
from defusedxml.common import EntitiesForbidden

from tests.fake_registry import FakeRegistry
from tests.fake_registry.build_fixtures import SHARED, build

FIXTURES = Path(__file__).parent / "fixtures" / "registry"
POLITE = {"mailto": "tests@example.org"}
CSL = {"Accept": "application/vnd.citationstyles.csl+json"}


def recorded_works() -> dict[str, dict[str, Any]]:
    with gzip.open(FIXTURES / "crossref_works.jsonl.gz", "rt", encoding="utf-8") as lines:
        return {work["DOI"].lower(): work for work in map(json.loads, lines)}


def recorded_articles() -> dict[str, str]:
    with gzip.open(FIXTURES / "pubmed_articles.jsonl.gz", "rt", encoding="utf-8") as lines:
        return {row["pmid"]: row["xml"] for row in map(json.loads, lines)}


def pmids_in(xml_text: str) -> list[str]:
    root = SafeET.fromstring(xml_text)
    return [a.findtext("MedlineCitation/PMID") or "" for a in root.iter("PubmedArticle")]


@pytest.fixture(scope="module")
def works() -> dict[str, dict[str, Any]]:
    return recorded_works()


# -- Crossref ---------------------------------------------------------------------------------


def test_single_work_is_the_recorded_record(
    fake_registry: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    doi = "10.1371/journal.pone.0033693"
    response = httpx.get(f"{fake_registry.crossref_url}/works/{doi.upper()}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["message-type"] == "work"
    assert body["message"] == works[doi]
    assert response.headers["x-rate-limit-limit"] == "5"
    assert response.headers["x-rate-limit-interval"] == "1s"
    assert response.headers["x-concurrency-limit"] == "1"


def test_unknown_doi_gets_the_real_404_body(fake_registry: FakeRegistry) -> None:
    response = httpx.get(f"{fake_registry.crossref_url}/works/10.1371/notarealdoi")
    assert response.status_code == 404
    assert response.content == (FIXTURES / "crossref_not_found.txt").read_bytes()
    assert response.headers["content-type"] == "text/plain"


def test_filter_returns_known_dois_only(
    fake_registry: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    known = sorted(works)[:3]
    dois = [known[0].upper(), known[1], known[2], "10.9999/not-registered"]
    response = httpx.get(
        f"{fake_registry.crossref_url}/works",
        params={"filter": ",".join(f"doi:{d}" for d in dois), "rows": 50, **POLITE},
    )
    message = response.json()["message"]
    assert response.json()["message-type"] == "work-list"
    assert message["total-results"] == 3
    assert sorted(item["DOI"].lower() for item in message["items"]) == known
    assert response.headers["x-api-pool"] == "polite"
    assert response.headers["x-rate-limit-limit"] == "10"


def test_bibliographic_query_ranks_the_cited_work_first(
    fake_registry_unlimited: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    work = works["10.7554/elife.01567"]
    year = work["issued"]["date-parts"][0][0]
    citation = f"{work['author'][0]['family']} ({year}) {work['title'][0]}"
    url = f"{fake_registry_unlimited.crossref_url}/works"
    items = httpx.get(url, params={"query.bibliographic": citation, "rows": 5}).json()["message"][
        "items"
    ]
    assert items[0]["DOI"].lower() == "10.7554/elife.01567"
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    nonsense = httpx.get(url, params={"query.bibliographic": "zzqx wvut", "rows": 4}).json()
    assert len(nonsense["message"]["items"]) == 4  # weak candidates still come back


def test_rows_above_crossref_maximum_is_a_validation_failure(
    fake_registry_unlimited: FakeRegistry,
) -> None:
    response = httpx.get(
        f"{fake_registry_unlimited.crossref_url}/works",
        params={"filter": "doi:10.1/x", "rows": 1001},
    )
    assert response.status_code == 400
    assert response.json()["message-type"] == "validation-failure"


def test_agency_crossref_datacite_recorded_and_unknown(
    fake_registry_unlimited: FakeRegistry,
) -> None:
    url = fake_registry_unlimited.crossref_url
    recorded = json.loads((FIXTURES / "crossref_agencies.json").read_text())
    cases = {
        "10.1371/journal.pone.0033693": "crossref",
        "10.5061/dryad.8515": "datacite",
        "10.1430/8105": recorded["10.1430/8105"]["id"],
    }
    for doi, agency in cases.items():
        body = httpx.get(f"{url}/works/{doi}/agency").json()
        assert body["message-type"] == "work-agency"
        assert body["message"] == {"DOI": doi, "agency": body["message"]["agency"]}
        assert body["message"]["agency"]["id"] == agency
    missing = httpx.get(f"{url}/works/10.9999/nothing/agency")
    assert missing.status_code == 404
    assert missing.text == "Resource not found."


def test_content_negotiation_serves_csl_for_crossref_and_datacite(
    fake_registry_unlimited: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    url = fake_registry_unlimited.doi_url
    crossref = httpx.get(f"{url}/10.7554/elife.01567", headers=CSL)
    assert crossref.headers["content-type"] == "application/vnd.citationstyles.csl+json"
    assert crossref.json()["title"] == works["10.7554/elife.01567"]["title"][0]
    datacite = httpx.get(f"{url}/10.5061/dryad.8515", headers=CSL).json()
    assert datacite["type"] == "dataset" and datacite["publisher"] == "Dryad"
    assert datacite["author"][0]["family"] == "Ollomo"
    missing = httpx.get(f"{url}/10.1126/made-up", headers=CSL)
    assert missing.status_code == 404
    assert "DOI Not Found" in missing.text and "10.1126/made-up" in missing.text


# -- E-utilities ------------------------------------------------------------------------------


def test_efetch_by_get_and_post_returns_stored_articles(
    fake_registry_unlimited: FakeRegistry,
) -> None:
    articles = recorded_articles()
    wanted = sorted(articles)[:3]
    url = f"{fake_registry_unlimited.pubmed_url}/efetch.fcgi"
    ids = ",".join([wanted[0], "1", *wanted[1:]])
    by_get = httpx.get(url, params={"db": "pubmed", "id": ids, "retmode": "xml"})
    by_post = httpx.post(url, data={"db": "pubmed", "id": ids, "retmode": "xml"})
    for response in (by_get, by_post):
        assert response.status_code == 200
        assert response.text.startswith('<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet')
        assert pmids_in(response.text) == wanted  # unknown id 1 left out
        assert articles[wanted[0]] in response.text
    assert fake_registry_unlimited.count("efetch") == 2


def test_esearch_finds_by_title_and_by_doi(fake_registry_unlimited: FakeRegistry) -> None:
    pmid, title, doi = next(
        (pmid, "".join(title.itertext()), ids[0].text)
        for pmid, xml in sorted(recorded_articles().items())
        if (root := SafeET.fromstring(xml)) is not None
        and (title := root.find(".//ArticleTitle")) is not None
        and (
            ids := [
                e
                for e in root.iterfind("PubmedData/ArticleIdList/ArticleId")
                if e.get("IdType") == "doi"
            ]
        )
    )
    url = f"{fake_registry_unlimited.pubmed_url}/esearch.fcgi"
    by_title = httpx.get(url, params={"db": "pubmed", "term": f"{title}[Title]", "retmax": 3})
    ids = [e.text for e in SafeET.fromstring(by_title.text).iter("Id")]
    assert ids[0] == pmid
    by_doi = httpx.get(url, params={"db": "pubmed", "term": f"{doi}[doi]", "retmode": "json"})
    assert by_doi.json()["esearchresult"]["idlist"] == [pmid]


# -- rate limits ------------------------------------------------------------------------------


def test_a_burst_gets_429s_and_even_pacing_does_not(fake_registry: FakeRegistry) -> None:
    url = f"{fake_registry.crossref_url}/works/10.7554/elife.01567"
    with httpx.Client() as client:
        burst = [client.get(url).status_code for _ in range(12)]
        assert burst.count(429) >= 5
        assert fake_registry.rate_limited("crossref") == burst.count(429)
        time.sleep(1.0)
        paced = []
        for _ in range(8):
            paced.append(client.get(url).status_code)
            time.sleep(1 / 5)
    assert paced == [200] * 8


def test_public_pool_allows_one_request_in_flight(fake_registry: FakeRegistry) -> None:
    fake_registry.latency = 0.3
    url = f"{fake_registry.crossref_url}/works/10.7554/elife.01567"
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda: statuses.append(httpx.get(url).status_code))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 429]
    assert fake_registry.max_in_flight("crossref") == 2


def test_lowered_limit_is_advertised_and_enforced(fake_registry: FakeRegistry) -> None:
    url = f"{fake_registry.crossref_url}/works/10.7554/elife.01567"
    fake_registry.set_crossref_limit(limit=2, concurrency=1)
    with httpx.Client() as client:
        responses = [client.get(url, params=POLITE) for _ in range(3)]
    assert [r.headers["x-rate-limit-limit"] for r in responses] == ["2"] * 3
    assert [r.status_code for r in responses] == [200, 200, 429]


def test_ncbi_limit_depends_on_api_key(fake_registry: FakeRegistry) -> None:
    url = f"{fake_registry.pubmed_url}/esearch.fcgi"
    with httpx.Client() as client:
        anonymous = [client.get(url, params={"term": "x"}) for _ in range(5)]
        keyed = [client.get(url, params={"term": "x", "api_key": "k"}) for _ in range(5)]
    assert [r.status_code for r in anonymous] == [200] * 3 + [429] * 2
    assert anonymous[-1].json()["error"] == "API rate limit exceeded"
    assert [r.status_code for r in keyed] == [200] * 5


def test_limits_can_be_disabled() -> None:
    with FakeRegistry(rate_limits=False) as registry, httpx.Client() as client:
        url = f"{registry.crossref_url}/works/10.7554/elife.01567"
        assert {client.get(url).status_code for _ in range(20)} == {200}


# -- faults -----------------------------------------------------------------------------------


def _statuses(registry: FakeRegistry, n: int) -> list[int]:
    url = f"{registry.crossref_url}/works/10.7554/elife.01567"
    with httpx.Client() as client:
        return [client.get(url).status_code for _ in range(n)]


def test_rate_fault_fires_at_the_configured_rate_deterministically() -> None:
    runs = []
    for _ in range(2):
        with FakeRegistry(rate_limits=False, seed=7) as registry:
            rule = registry.inject_fault("server_error", rate=0.3, service="crossref")
            runs.append(_statuses(registry, 200))
            assert rule.fired == runs[-1].count(500)
    assert runs[0] == runs[1]
    assert 40 <= runs[0].count(500) <= 80  # 60 expected


def test_next_n_fault_on_a_path_then_recovery(fake_registry_unlimited: FakeRegistry) -> None:
    fake_registry_unlimited.inject_fault("unavailable", count=2, path_contains="elife")
    url = f"{fake_registry_unlimited.crossref_url}/works/10.7554/elife.01567"
    other = f"{fake_registry_unlimited.crossref_url}/works/10.1371/journal.pone.0033693"
    assert httpx.get(other).status_code == 200
    first = httpx.get(url)
    assert first.status_code == 503 and first.headers["retry-after"] == "1"
    assert [httpx.get(url).status_code for _ in range(2)] == [503, 200]


@pytest.mark.parametrize(
    ("fault", "error"),
    [("drop", httpx.RemoteProtocolError), ("truncated", httpx.RemoteProtocolError)],
)
def test_connection_faults_break_the_exchange(
    fake_registry_unlimited: FakeRegistry, fault: str, error: type[Exception]
) -> None:
    fake_registry_unlimited.inject_fault(fault, count=1)
    url = f"{fake_registry_unlimited.crossref_url}/works/10.7554/elife.01567"
    with pytest.raises(error):
        httpx.get(url)
    assert httpx.get(url).status_code == 200


def test_slow_answer_times_the_client_out(fake_registry_unlimited: FakeRegistry) -> None:
    fake_registry_unlimited.inject_fault("slow", count=1, slow_seconds=1.0)
    url = f"{fake_registry_unlimited.crossref_url}/works/10.7554/elife.01567"
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(url, timeout=0.2)


def test_wrong_content_type_and_huge_body(fake_registry_unlimited: FakeRegistry) -> None:
    url = f"{fake_registry_unlimited.crossref_url}/works/10.7554/elife.01567"
    fake_registry_unlimited.inject_fault("wrong_content_type", count=1)
    page = httpx.get(url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    fake_registry_unlimited.inject_fault("huge", count=1, huge_bytes=3_000_000)
    with httpx.stream("GET", url) as response:
        assert "content-length" not in response.headers
        received = sum(len(chunk) for chunk in response.iter_bytes())
    assert received >= 3_000_000


@pytest.mark.parametrize("fault", ["billion_laughs", "external_entity"])
@pytest.mark.parametrize("endpoint", ["efetch", "esearch"])
def test_hostile_xml_is_refused_by_a_safe_parser(
    fake_registry_unlimited: FakeRegistry, fault: str, endpoint: str
) -> None:
    fake_registry_unlimited.inject_fault(fault, count=1, endpoint=endpoint)
    response = httpx.get(
        f"{fake_registry_unlimited.pubmed_url}/{endpoint}.fcgi", params={"id": "1", "term": "x"}
    )
    assert response.status_code == 200 and "<!ENTITY" in response.text
    with pytest.raises(EntitiesForbidden):
        SafeET.fromstring(response.text)
    assert fake_registry_unlimited.count("xxe_canary") == 0


def test_xml_attacks_are_for_eutils_only(fake_registry: FakeRegistry) -> None:
    with pytest.raises(ValueError, match="E-utilities"):
        fake_registry.inject_fault("billion_laughs", service="crossref")


# -- counters and data ------------------------------------------------------------------------


def test_counters_count_filter_batches_and_reset(
    fake_registry_unlimited: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    dois = sorted(works)[:120]
    with httpx.Client() as client:
        for start in range(0, len(dois), 50):
            batch = dois[start : start + 50]
            client.get(
                f"{fake_registry_unlimited.crossref_url}/works",
                params={"filter": ",".join(f"doi:{d}" for d in batch), "rows": 50},
            )
    assert fake_registry_unlimited.count("works_filter") == math.ceil(len(dois) / 50)
    assert fake_registry_unlimited.counts() == {"works_filter": 3}
    assert all(r.status == 200 for r in fake_registry_unlimited.log)
    fake_registry_unlimited.reset()
    assert fake_registry_unlimited.count() == 0


def test_empty_registry_serves_only_what_was_added(
    empty_registry: FakeRegistry, works: dict[str, dict[str, Any]]
) -> None:
    work = works["10.7554/elife.01567"]
    url = f"{empty_registry.crossref_url}/works/10.7554/elife.01567"
    assert httpx.get(url).status_code == 404
    empty_registry.add_crossref_work(work)
    assert httpx.get(url).json()["message"] == work
    article = next(iter(recorded_articles().values()))
    pmid = empty_registry.add_pubmed_article(article)
    fetched = httpx.get(f"{empty_registry.pubmed_url}/efetch.fcgi", params={"id": pmid})
    assert pmids_in(fetched.text) == [pmid]
    empty_registry.add_datacite_record("10.1234/Data.1", {"type": "dataset", "title": "D"})
    csl = httpx.get(f"{empty_registry.doi_url}/10.1234/data.1", headers=CSL).json()
    assert csl["title"] == "D"


def test_synthetic_retractions_are_served(fake_registry_unlimited: FakeRegistry) -> None:
    url = fake_registry_unlimited.crossref_url
    work = httpx.get(f"{url}/works/10.5555/citeaudit.retracted-rw").json()["message"]
    assert work["updated-by"][0]["type"] == "retraction"
    assert work["updated-by"][0]["source"] == "retraction-watch"
    notice = httpx.get(f"{url}/works/10.5555/citeaudit.retracted-publisher.notice").json()
    assert notice["message"]["update-to"][0]["DOI"] == "10.5555/citeaudit.retracted-publisher"
    xml = httpx.get(f"{fake_registry_unlimited.pubmed_url}/efetch.fcgi", params={"id": "99000001"})
    root = SafeET.fromstring(xml.text)
    assert "Retracted Publication" in [e.text for e in root.iter("PublicationType")]
    links = [e.get("RefType") for e in root.iter("CommentsCorrections")]
    assert "RetractionIn" in links


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
def test_fixtures_rebuild_identically_from_shared_data(tmp_path: Path) -> None:
    build(SHARED, tmp_path)
    for built in tmp_path.iterdir():
        assert built.read_bytes() == (FIXTURES / built.name).read_bytes(), built.name


def test_the_readme_recipe_leaves_nothing_behind(tmp_path: Path) -> None:
    """`python -m tests.fake_registry --env-file F`, as the README's no-internet recipe runs it:
    F appears once the registry answers, and stopping it removes F and its throwaway cache."""
    env_file = tmp_path / "fake.env"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_registry", "--env-file", str(env_file)],
        cwd=Path(__file__).parents[1],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        env = dict(
            line.removeprefix("export ").split("=", 1)
            for line in env_file.read_text(encoding="utf-8").splitlines()
        )
        assert httpx.get(f"{env['CITEAUDIT_CROSSREF_URL']}/works", timeout=10).status_code == 200
        state = Path(env["CITEAUDIT_CACHE_DIR"]).parent
        assert state.is_dir()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert not env_file.exists()
    assert not state.exists()
