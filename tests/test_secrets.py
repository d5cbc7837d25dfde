"""The NCBI, Semantic Scholar and OpenAlex API keys and the Crossref mailto are sent to the
registries and nowhere else: not in logs, Parquet, DuckDB, reports, the HTTP cache or Prefect
artifacts, error paths included."""

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from tests.fake_registry import FakeRegistry
from tests.reliability_data import bundled_pmids, bundled_works

API_KEY = "ncbiKEY9f3c1d7e5b2a8c6d4e0f"
MAILTO = "secret.agent.7734@citeaudit-test.example"
S2_KEY = "s2SECRETkey4d9a1c0e77b2"
OPENALEX_KEY = "oaSECRETkey8e2f6b1d93c4"


def secret_forms() -> list[bytes]:
    """Each secret as written plainly, URL-encoded and in part (a log may cut it)."""
    forms = set()
    for secret in (API_KEY, MAILTO, S2_KEY, OPENALEX_KEY):
        forms |= {secret, quote(secret), quote_plus(secret), secret[: len(secret) // 2 + 4]}
    forms.add("secret.agent.7734")
    return sorted(f.encode() for f in forms)


def leaks_in(data: bytes) -> list[bytes]:
    return [form for form in secret_forms() if form in data]


# Prefect's filter endpoints, with the body each accepts (the bundled clients send nulls the
# server refuses, so ask over plain HTTP).
PREFECT_FILTERS: dict[str, dict[str, Any]] = {
    # the job's own artifacts, by key: a long session holds more than one page of others
    "artifacts/filter": {
        "sort": "CREATED_DESC",
        "artifacts": {"key": {"any_": ["audit-secrets", "flagged-secrets", "validate-secrets"]}},
        "flow_runs": {},
        "task_runs": {},
    },
    "logs/filter": {"sort": "TIMESTAMP_ASC", "logs": {}},
    "flow_runs/filter": {"sort": "ID_DESC"},
    "task_runs/filter": {"sort": "ID_DESC"},
}


def prefect_records(harness_url: str) -> bytes:
    """Everything the Prefect servers hold about runs: artifacts, logs, parameters, states.

    Every server a session may have: the test harness's, and the real one that
    tests/prefect_server.py starts for Dask tests (settings and environment), whichever ran it."""
    from prefect.settings import PREFECT_API_URL

    urls = {harness_url, PREFECT_API_URL.value(), os.environ.get("PREFECT_API_URL")} - {None}
    parts = ["", "", "", ""]
    for url in sorted(str(u) for u in urls):
        with httpx.Client(base_url=f"{url}/") as client:
            for n, (endpoint, body) in enumerate(PREFECT_FILTERS.items()):
                answer = client.post(endpoint, json={"limit": 200, "offset": 0, **body})
                assert answer.status_code == 200, answer.text
                parts[n] += answer.text
    if "PREFECT_API_URL" not in os.environ:
        # Only the harness runs flows: the job's artifacts must be found, or the search below
        # proves nothing. (Once tests/prefect_server.py has started its server for the Dask
        # tests, Prefect's clients in this process do not reliably report to either server;
        # the files, library, cache and output checks still apply then.)
        assert "audit-secrets" in parts[0], "the job's artifact must be there"
    return "\n".join(parts).encode()


def test_secrets_never_leave_the_requests(
    prefect_harness: str,
    registry_env: FakeRegistry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NCBI_API_KEY", API_KEY)
    monkeypatch.setenv("CITEAUDIT_MAILTO", MAILTO)
    monkeypatch.setenv("S2_API_KEY", S2_KEY)
    monkeypatch.setenv("OPENALEX_API_KEY", OPENALEX_KEY)
    monkeypatch.setenv("CITEAUDIT_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CITEAUDIT_BACKOFF_BASE_S", "0.01")
    monkeypatch.setenv("CITEAUDIT_RETRY_AFTER_CAP_S", "0.2")
    monkeypatch.setenv("CITEAUDIT_READ_TIMEOUT_S", "0.5")
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")  # the most a log could say
    # Error paths: failures that exhaust retries, bodies that do not parse, hostile XML.
    for fault in ("server_error", "unavailable", "drop", "slow", "truncated"):
        registry_env.inject_fault(fault, rate=0.08, slow_seconds=1.0)
    registry_env.inject_fault("server_error", count=4, service="crossref")
    registry_env.inject_fault("external_entity", count=1, service="eutils")
    registry_env.inject_fault("wrong_content_type", count=1, service="eutils")
    # arXiv cannot be asked: the arXiv id goes to Semantic Scholar, with its key.
    registry_env.inject_fault("server_error", count=2, service="arxiv")

    source = tmp_path / "refs.txt"
    lines = [f"doi:{w['DOI']}" for w in bundled_works()[:120]]
    lines += [f"PMID: {pmid}" for pmid in bundled_pmids()[:40]]
    lines += [
        "Smith J. A study that was never written about fabricated results. Nature. 2021;5:1-9.",
        "doi:10.5555/citeaudit.fabricated.secret-test",
        "arXiv:1707.08567",
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["audit", str(source), "--job", "secrets", "--out", str(tmp_path / "out")],
    )
    assert result.exit_code == 0, result.output

    sent = [r.path for r in registry_env.log]
    assert any(quote_plus(MAILTO) in p or MAILTO in p for p in sent), "mailto must be sent"
    assert any(API_KEY in p for p in sent) or registry_env.count("efetch") == 0
    assert any(r.fault for r in registry_env.log)
    assert any(r.pool == "s2-api-key" for r in registry_env.log), "the S2 key must be sent"

    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != source]
    assert any(p.suffix == ".duckdb" for p in files)
    assert any("http-cache" in p.parts for p in files), "the cache must have been written"
    assert any(p.name == "citations.parquet" for p in files)
    for path in files:
        assert not leaks_in(path.read_bytes()), path
    captured = capfd.readouterr()
    assert not leaks_in((captured.out + captured.err + result.output).encode())
    assert not leaks_in(prefect_records(prefect_harness))
