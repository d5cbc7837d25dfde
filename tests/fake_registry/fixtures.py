"""pytest fixtures for the fake registry; tests/conftest.py imports them.

A registry starts in about a millisecond once the bundled fixtures are parsed (about 0.3 s, once
per process), so every test gets its own server: no state leaks between tests.
"""

from collections.abc import Iterator

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
def registry_env(fake_registry: FakeRegistry, monkeypatch: pytest.MonkeyPatch) -> FakeRegistry:
    """The fake registry, with CITEAUDIT_CROSSREF_URL / CITEAUDIT_PUBMED_URL pointing at it."""
    monkeypatch.setenv("CITEAUDIT_CROSSREF_URL", fake_registry.crossref_url)
    monkeypatch.setenv("CITEAUDIT_PUBMED_URL", fake_registry.pubmed_url)
    return fake_registry
