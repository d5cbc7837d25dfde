"""Shared fixtures: one Prefect test server per session, the fake registry, temp outputs; and
the `slow` mark (the README's fast subset, `pytest -m "not slow"`, leaves those tests out)."""

import logging
import os
from collections.abc import Iterator

import pytest

from tests.fake_registry.fixtures import (  # noqa: F401
    empty_registry,
    fake_registry,
    fake_registry_unlimited,
    registry_env,
)
from tests.prefect_server import prefect_server, this_process_on_prefect_server  # noqa: F401

# Quiet Prefect before it is imported anywhere in the test session.
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
logging.getLogger("sqlalchemy").setLevel(logging.CRITICAL)


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[str]:
    """A temporary Prefect server for the whole session (starting one costs 7-20 s); yields its
    API URL."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield str(PREFECT_API_URL.value())


# What makes a test slow: a Prefect server (started once per worker, 7-20 s) and the flow runs
# on it, or a module whose every test runs the CLI in fresh processes, builds snapshots or
# large hostile inputs, or searches with Hypothesis. CI runs them all; the edit-test loop need
# not.
SLOW_FIXTURES = frozenset({"prefect_harness", "prefect_server", "this_process_on_prefect_server"})
SLOW_MODULES = frozenset(
    {
        "test_agent_mcp.py",
        "test_exit_codes.py",
        "test_fix.py",
        "test_hostile_dumps.py",
        "test_hostile_linear.py",
        "test_hostile_properties.py",
        "test_hostile_regex.py",
        "test_library_lake.py",
        "test_server.py",
        "test_snapshots_store.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SLOW_FIXTURES or item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
