"""Shared fixtures: one Prefect test server per session, the fake registry, temp outputs."""

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
