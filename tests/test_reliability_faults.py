"""Transient registry faults change nothing but the time taken: every citation gets exactly one
status, and the same one as in a fault-free run (real HTTP against tests/fake_registry)."""

import bisect
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from models.audit import Reference, Status, ValidationResult
from models.job import JobParams
from tasks.citation_ids import plan_chunks
from tasks.lookup import lookup_references
from tasks.registries.clients import Registries, RegistryPool
from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at
from tests.reliability_data import bundled_works, mixed_references, write_doi_list

TRANSIENT = ("server_error", "unavailable", "drop", "slow")
# Quick retries; a read timeout well under the `slow` fault's delay so slow answers are retried.
FAST_RETRIES = {
    "max_attempts": 8,
    "backoff_base_s": 0.01,
    "backoff_cap_s": 0.1,
    "retry_after_cap_s": 1.0,
    "read_timeout_s": 0.5,
    "connect_timeout_s": 0.5,
}


def inject_transient_faults(registry: FakeRegistry, total_rate: float = 0.10) -> None:
    """`total_rate` of all requests get one of the transient faults, split evenly; and each kind
    surely hits a Crossref and a PubMed request once, however few requests the run makes."""
    for kind in TRANSIENT:
        registry.inject_fault(kind, rate=total_rate / len(TRANSIENT), slow_seconds=2.0)
    for kind in TRANSIENT:
        for service in ("crossref", "eutils"):
            registry.inject_fault(kind, count=1, service=service, slow_seconds=2.0)


@pytest.fixture
def faulty_registry() -> Iterator[FakeRegistry]:
    with FakeRegistry(seed=6) as registry:
        yield registry


def check_in_chunks(
    refs: list[Reference], registry: FakeRegistry, max_attempts: int = 8
) -> list[ValidationResult]:
    """The way the flow does it: chunks of one lookup kind, each checked on its own."""
    settings = registry.settings(
        mailto="reliability@example.org",
        crossref_batch_size=10,  # more requests: more of them meet a fault
        pubmed_batch_size=20,
        **{**FAST_RETRIES, "max_attempts": max_attempts},  # type: ignore[arg-type]
    )
    with Registries.from_settings(settings, RegistryPool()) as registries:
        results: list[ValidationResult] = []
        for chunk in plan_chunks(refs, 60):
            results += lookup_references(chunk, registries)
    return results


class _LimitDropper(threading.Thread):
    """Lowers Crossref's advertised and enforced limit once `requests` have arrived."""

    def __init__(self, registry: FakeRegistry, requests: int, limit: int) -> None:
        super().__init__(daemon=True)
        self.registry, self.requests, self.limit = registry, requests, limit
        self.at = float("inf")

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while self.registry.count(service="crossref") < self.requests:
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)
        self.registry.set_crossref_limit(limit=self.limit)
        self.at = time.monotonic()


def lower_limit_after(registry: FakeRegistry, requests: int, limit: int) -> _LimitDropper:
    dropper = _LimitDropper(registry, requests, limit)
    dropper.start()
    return dropper


def most_in_window(times: list[float], window: float) -> int:
    """Most arrivals in any sliding window of `window` seconds."""
    times = sorted(times)
    return max((bisect.bisect_left(times, t + window) - i for i, t in enumerate(times)), default=0)


def outcome(results: list[ValidationResult]) -> dict[str, tuple[Status, str | None]]:
    return {r.citation_id: (r.status, r.matched_id) for r in results}


def test_faults_leave_every_status_as_in_a_fault_free_run(faulty_registry: FakeRegistry) -> None:
    refs = mixed_references(n_dois=300, n_pmids=120, n_fabricated=20)
    clean = check_in_chunks(refs, faulty_registry)
    assert faulty_registry.rate_limited() == 0

    faulty_registry.reset()
    inject_transient_faults(faulty_registry)
    faulty = check_in_chunks(refs, faulty_registry)

    hit = [r for r in faulty_registry.log if r.fault]
    assert {r.fault for r in hit} == set(TRANSIENT), "every fault kind must have been exercised"
    assert len(hit) >= 5
    ids = [r.citation_id for r in faulty]
    assert sorted(ids) == sorted(ref.citation_id for ref in refs)  # exactly one each
    assert outcome(faulty) == outcome(clean)
    statuses = {status for status, _ in outcome(clean).values()}
    assert {Status.VERIFIED, Status.MISMATCH, Status.NOT_FOUND} <= statuses
    assert Status.UNVERIFIED not in statuses
    assert max(r.attempts for r in faulty) > 1  # the faults really were retried


def test_persistent_failure_is_unverified_never_not_found(faulty_registry: FakeRegistry) -> None:
    """When retries run out, the fault shows as `unverified`, not as a verdict on the paper."""
    refs = mixed_references(n_dois=40, n_pmids=20, n_fabricated=5)
    faulty_registry.inject_fault("server_error", rate=1.0)
    results = check_in_chunks(refs, faulty_registry, max_attempts=2)
    assert len(results) == len(refs)
    assert {r.status for r in results} == {Status.UNVERIFIED}
    assert all(r.error for r in results)


@pytest.mark.usefixtures("prefect_harness")
def test_flow_with_faults_and_four_workers_matches_a_clean_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end through `audit_job`: 4 chunks in parallel under the real rate limits,
    10% transient faults, a lowered rate limit mid-run; no 429 and the clean run's statuses."""
    from flows.audit import audit_job
    from flows.runners import task_runner

    dois = [w["DOI"] for w in bundled_works()[:150]] + [
        f"10.5555/citeaudit.nope.{n}" for n in range(10)
    ]
    source = write_doi_list(tmp_path / "dois.txt", dois)
    flow = audit_job.with_options(task_runner=task_runner(workers=4))

    def run(registry: FakeRegistry, job: str) -> pl.DataFrame:
        for name, value in point_env_at(registry, tmp_path / job).items():
            monkeypatch.setenv(name, value)
        for setting, number in FAST_RETRIES.items():
            monkeypatch.setenv(f"CITEAUDIT_{setting.upper()}", str(number))
        monkeypatch.setenv("CITEAUDIT_MAILTO", "reliability@example.org")
        monkeypatch.setenv("CITEAUDIT_CROSSREF_BATCH_SIZE", "5")  # more requests, more faults
        flow(
            JobParams(
                inputs=[str(source)], job_id=job, out_dir=str(tmp_path / "out"), chunk_size=25
            )
        )
        frame = pl.read_parquet(tmp_path / "out" / job / "citations.parquet")
        return frame.select("citation_id", "status", "matched_id").sort("citation_id")

    with FakeRegistry(seed=7) as clean_registry:
        clean = run(clean_registry, "clean")
        assert clean_registry.rate_limited() == 0

    with FakeRegistry(seed=7) as registry:
        inject_transient_faults(registry)
        lowered_at = lower_limit_after(registry, requests=15, limit=4)
        faulty = run(registry, "faulty")
        lowered_at.join()
        crossref = [r for r in registry.log if r.service == "crossref"]
        # Requests already admitted under the old limit may exceed the new one: the client learns
        # of the drop from the next answers' headers, so 429s are allowed in that first second.
        settled = lowered_at.at + 1.0
        after = [r.at for r in crossref if r.at >= settled]
        assert len(after) > 10, "the limit must drop while the job is running"
        # Counted over the window the fake enforces (1 s less its clock-jitter tolerance), as
        # Crossref counts: arrival jitter under load can bring five into a full second when the
        # client spaced them 1/3.6 s apart, and the server rightly lets that pass.
        polite = registry.pools["crossref-polite"]
        assert most_in_window(after, polite.limit.window - polite.tolerance) <= 4
        assert not [r for r in crossref if r.status == 429 and not lowered_at.at <= r.at < settled]
        assert registry.max_in_flight("crossref") >= 1
        assert any(r.fault for r in registry.log)

    assert clean.height == len(dois)
    assert faulty.equals(clean)
    assert set(clean["status"]) == {"verified", "not_found"}
