"""pytest fixtures for the fake registry; tests/conftest.py imports them.

A registry starts in about a millisecond once the bundled fixtures are parsed (about 0.3 s, once
per process), so every test gets its own server: no state leaks between tests.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_registry.server import FakeRegistry


@pytest.fixture
def fake_registry() -> Iterator[FakeRegistry]:
    """The bundled real records (plus synthetic retraction cases) with real rate limits."""
    with FakeRegistry() as registry:
        yield registry


@pytest.fixture
def fake_registry_unlimited() -> Iterator[FakeRegistry]:
    """The bundled records with rate limits off: for tests about data, not pacing."""
    with FakeRegistry(rate_limits=False) as registry:
        yield registry


@pytest.fixture
def empty_registry() -> Iterator[FakeRegistry]:
    """A registry with no records, limits off: add what the test needs."""
    with FakeRegistry.empty(rate_limits=False) as registry:
        yield registry


@pytest.fixture
def registry_env(
    fake_registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> FakeRegistry:
    """The fake registry, with the CITEAUDIT_* URLs pointing at it, a fresh HTTP cache and a
    DuckDB library in this test's temp folder."""
    for name, value in point_env_at(fake_registry, tmp_path).items():
        monkeypatch.setenv(name, value)
    return fake_registry


def point_env_at(registry: FakeRegistry, folder: Path) -> dict[str, str]:
    """The environment that makes citeaudit use `registry` (and keep its state in `folder`)."""
    urls = {f"CITEAUDIT_{name.upper()}": url for name, url in registry.urls().items()}
    return {
        **urls,
        "CITEAUDIT_CACHE_DIR": str(folder / "http-cache"),
        "CITEAUDIT_DB": str(folder / "citeaudit.duckdb"),
    }
