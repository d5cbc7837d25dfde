"""A hostile network never turns a real citation into a fabricated one, never hangs a job and
never learns our credentials (real HTTP against the fake registry's hostile modes)."""

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from models.audit import Identifiers, Reference
from tasks.lookup import lookup_references
from tasks.registries.clients import Registries, RegistryPool
from tests.fake_registry import FakeRegistry
from tests.reliability_data import (
    FABRICATED_PMID_BASE,
    FABRICATED_PREFIX,
    bare_id_reference,
    bundled_pmids,
    bundled_works,
    claiming_reference,
)

FAST: dict[str, Any] = {
    "max_attempts": 2,
    "backoff_base_s": 0.01,
    "backoff_cap_s": 0.02,
    "read_timeout_s": 2.0,
}
ACCUSATIONS = {"not_found", "unmatched", "mismatch"}
T = TypeVar("T")


def free_text_reference(work: dict[str, Any], key: str) -> Reference:
    """A reference that claims what the record says, without any identifier."""
    ref = claiming_reference(work, key)
    item = ref.item.model_copy(update={"DOI": None})
    return ref.model_copy(update={"item": item, "ids": Identifiers()})


def real_references() -> list[Reference]:
    works = bundled_works()
    return [
        *(claiming_reference(work, f"doi-{n}") for n, work in enumerate(works[:3])),
        *(bare_id_reference(f"pmid-{p}", pmid=p) for p in bundled_pmids()[:3]),
        free_text_reference(works[3], "free-text"),
    ]


def statuses(registry: FakeRegistry, refs: list[Reference], **overrides: Any) -> dict[str, str]:
    settings = registry.settings(**{**FAST, **overrides})
    with Registries.from_settings(settings, RegistryPool()) as registries:
        results = lookup_references(refs, registries)
    return {result.citation_id: result.status.value for result in results}


@pytest.mark.parametrize("fault", ["not_found", "empty"])
def test_an_endpoint_answering_nothing_useful_accuses_no_one_and_poisons_no_cache(
    fault: str, tmp_path: Path
) -> None:
    refs = real_references()
    cache = {"cache_enabled": True, "cache_dir": tmp_path / "cache"}
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault(fault, rate=1.0)
        hostile = statuses(registry, refs, **cache)
        registry.reset()  # the registry recovers; a new job on the same cache
        recovered = statuses(registry, refs, **cache)
    assert not ACCUSATIONS & set(hostile.values()), hostile
    if fault == "not_found":
        assert set(hostile.values()) == {"unverified"}
    assert set(recovered.values()) == {"verified"}, recovered


def test_a_batch_answer_missing_ids_is_no_proof_of_absence() -> None:
    pmids = list(bundled_pmids()[:10])
    refs = [bare_id_reference(f"pmid-{p}", pmid=p) for p in pmids]
    refs += [claiming_reference(work, f"doi-{n}") for n, work in enumerate(bundled_works()[:10])]
    refs += [
        bare_id_reference("fabricated-pmid", pmid=str(FABRICATED_PMID_BASE)),
        bare_id_reference("fabricated-doi", doi=f"{FABRICATED_PREFIX}0"),
    ]
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault("partial", rate=1.0)
        found = statuses(registry, refs)
        assert registry.count("efetch") >= 2  # the left-out ids were asked again
    assert found.pop("fabricated-pmid") == "not_found"
    assert found.pop("fabricated-doi") == "not_found"
    assert set(found.values()) == {"verified"}, found


def finishes_within(seconds: float, check: Callable[[], T]) -> T:
    """`check()`'s result, failing the test if it has not returned within `seconds`."""
    outcome: list[T] = []
    worker = threading.Thread(target=lambda: outcome.append(check()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still running after {seconds} s"
    return outcome[0]


def test_a_trickling_answer_meets_the_request_deadline() -> None:
    refs = [bare_id_reference("p", pmid=bundled_pmids()[0])]
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault("trickle", rate=1.0, slow_seconds=1.0)  # 1 byte/s, never idle 5 s
        found = finishes_within(
            30, lambda: statuses(registry, refs, read_timeout_s=5.0, request_deadline_s=2.0)
        )
    assert found == {"p": "unverified"}


def test_a_registry_that_never_answers_is_given_up_after_two_requests() -> None:
    refs = [claiming_reference(work, f"doi-{n}") for n, work in enumerate(bundled_works()[:8])]
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault("slow", rate=1.0, slow_seconds=20.0)
        found = statuses(
            registry,
            refs,
            max_attempts=5,
            read_timeout_s=0.2,
            request_deadline_s=1.0,
            crossref_batch_size=1,
        )
        asked = registry.count(service="crossref")
    assert set(found.values()) == {"unverified"}
    assert asked <= 2 * 5  # two silent requests open the breaker; the six others are not sent


def test_past_the_job_deadline_nothing_more_is_asked() -> None:
    refs = real_references()
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault("slow", rate=1.0, slow_seconds=5.0)
        settings = registry.settings(**{**FAST, "read_timeout_s": 30.0})

        def check() -> list[str]:
            with Registries.from_settings(settings, RegistryPool()) as registries:
                results = lookup_references(refs, registries, deadline=time.time() + 1.0)
            return [result.status.value for result in results]

        found = finishes_within(20, check)
        asked = registry.count()
    assert set(found) == {"unverified"}
    assert asked == 1  # cut off at the job's deadline; nothing sent after it


def test_credentials_never_follow_a_redirect_elsewhere_nor_reach_the_cache(tmp_path: Path) -> None:
    mailto, api_key = "auditor@lab.example", "0123456789abcdef0123456789abcdef0123"
    secrets = [mailto, mailto.replace("@", "%40"), api_key]
    with FakeRegistry(rate_limits=False) as registry:
        registry.inject_fault("redirect", rate=1.0)  # a 301 keeping the query string
        found = statuses(
            registry,
            real_references(),
            mailto=mailto,
            ncbi_api_key=api_key,
            cache_enabled=True,
            cache_dir=tmp_path / "cache",
        )
        log = registry.log
    moved = [record for record in log if record.host.startswith("localhost")]
    assert moved and set(found.values()) == {"verified"}  # redirects were followed
    assert not [record.path for record in moved if any(s in record.path for s in secrets)]
    at_home = [record.path for record in log if not record.host.startswith("localhost")]
    assert any(mailto.replace("@", "%40") in path for path in at_home)  # sent to the registry
    cached = [f.read_bytes() for f in (tmp_path / "cache").rglob("*") if f.is_file()]
    assert cached and not [c for c in cached if any(s.encode() in c for s in secrets)]
