"""Hostile registry answers (entity bombs, external entities, huge, truncated or mislabelled
bodies) at the `lookup_references` level: the citation is `unverified`, nothing is fetched for an
entity, and the process's memory stays bounded (peak RSS measured in a fresh subprocess)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

CHECK_UNDER_FAULT = """
import json, resource, sys
from models.audit import Identifiers
from tasks.lookup import lookup_references
from tasks.registries.clients import Registries, RegistryPool
from tests.fake_registry import FakeRegistry
from tests.reliability_data import bare_id_reference, bundled_pmids, bundled_works

fault, service = sys.argv[1], sys.argv[2]
with FakeRegistry(rate_limits=False) as registry:
    registry.inject_fault(fault, rate=1.0, service=service, huge_bytes=200_000_000)
    settings = registry.settings(
        max_attempts=2, backoff_base_s=0.01,
        read_timeout_s=5, max_body_bytes=8_000_000,
    )
    refs = [bare_id_reference("p", pmid=bundled_pmids()[0]),
            bare_id_reference("d", doi=bundled_works()[0]["DOI"])]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with Registries.from_settings(settings, RegistryPool()) as registries:
        results = lookup_references(refs, registries)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "statuses": {r.citation_id: r.status.value for r in results},
        "growth_mb": (after - before) / 1024,
        "canary": registry.count("xxe_canary"),
        "faults": sum(1 for r in registry.log if r.fault),
    }))
"""
# The citation whose registry is attacked, per service.
TARGET = {"eutils": "p", "crossref": "d"}


@pytest.mark.parametrize(
    ("fault", "service"),
    [
        ("billion_laughs", "eutils"),
        ("external_entity", "eutils"),
        ("huge", "eutils"),
        ("huge", "crossref"),
        ("truncated", "eutils"),
        ("truncated", "crossref"),
        ("wrong_content_type", "eutils"),
        ("wrong_content_type", "crossref"),
    ],
)
def test_hostile_answer_makes_the_citation_unverified_in_bounded_memory(
    fault: str, service: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK_UNDER_FAULT, fault, service],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.splitlines()[-1])
    assert measured["faults"] >= 1
    target = TARGET[service]
    other = next(key for key in TARGET.values() if key != target)
    assert measured["statuses"][target] == "unverified"
    assert measured["statuses"][other] == "verified"  # the other registry is unaffected
    assert measured["canary"] == 0
    assert measured["growth_mb"] < 100  # a 200 MB body never lands in memory
