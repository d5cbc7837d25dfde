"""The Checker (tasks/lookup/checker.py), the one way references are looked up, over real HTTP to
the fake registry: it decides, offline or past its deadline it asks nothing, it closes only the
clients it built, and the agent service that builds one imports no Prefect."""

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from models.audit import Status
from tasks.lookup import Checker
from tasks.registries import RegistrySettings
from tasks.registries.clients import RegistryPool
from tests.fake_registry import FakeRegistry
from tests.test_routing import FAST, cited, dblp_hit


@pytest.fixture
def fake() -> Iterator[FakeRegistry]:
    with FakeRegistry.empty(rate_limits=False) as registry:
        registry.scholarly.add_dblp_hit(dblp_hit("NeurIPS"))
        yield registry


def settings_for(fake: FakeRegistry, **options: Any) -> RegistrySettings:
    return fake.settings(max_attempts=2, backoff_base_s=0.01, s2_api_key=None, **FAST, **options)


def test_a_checker_looks_each_reference_up_and_decides_it(fake: FakeRegistry) -> None:
    with Checker(settings_for(fake)) as checker:
        [checked] = checker.check([cited()])
    assert checked.citation_id == "vaswani"
    assert checked.result.status is Status.VERIFIED, checked.result.reason
    assert checked.result.registry == "dblp"
    assert fake.counts() == {"dblp_search": 1}


def test_an_offline_checker_asks_no_registry(fake: FakeRegistry) -> None:
    with Checker(None) as checker:
        [checked] = checker.check([cited()])
    assert checked.result.status is not Status.VERIFIED
    assert "offline" in checked.result.reason
    assert fake.counts() == {}


def test_past_its_deadline_a_checker_asks_nothing(fake: FakeRegistry) -> None:
    with Checker(settings_for(fake), deadline=time.time() - 1) as checker:
        [checked] = checker.check([cited()])
    assert checked.result.status is Status.UNVERIFIED
    assert fake.counts() == {}


def test_a_checker_leaves_a_given_pools_clients_open(fake: FakeRegistry) -> None:
    """The pool's owner (a process, the agent service) closes its clients, not each checker."""
    pool = RegistryPool()
    settings = settings_for(fake)
    with Checker(settings, pool=pool) as checker:
        clients = checker.registries
    assert pool.registries(settings) is clients
    with Checker(settings, pool=pool) as again:
        [checked] = again.check([cited()])
    assert checked.result.status is Status.VERIFIED
    pool.close()


def test_the_agent_service_imports_no_prefect() -> None:
    code = (
        "import sys, flows.agents.service\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] == 'prefect'"
        " or m == 'flows.steps'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
