"""Claim support's optional entailment judge: the chat-completions client against the fake
endpoint (real HTTP), strict parsing, the key kept secret, and verdicts through the pipeline."""

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from tasks.registries import RegistrySettings
from tasks.registries.clients import Registries, RegistryPool
from tasks.registries.judge import parse_verdict
from tasks.support.relevance import Pair
from tests.fake_registry import FakeRegistry

KEY = "sk-judge-secret-4711"
MUSCLE = Pair(
    "A growth hormone secretagogue increased muscle strength in dogs.",
    "Growth hormone secretagogue increases muscle strength in dogs",
    "We gave dogs a growth hormone secretagogue after immobilization; strength increased.",
)
NEGATED = Pair(MUSCLE.claim.replace("increased", "did not increase"), MUSCLE.title, MUSCLE.abstract)
TRANSFORMER = Pair(
    "The transformer architecture relies entirely on self-attention.",
    MUSCLE.title,
    MUSCLE.abstract,
)
NO_ABSTRACT = Pair(MUSCLE.claim, MUSCLE.title, None)


def _registries(registry: FakeRegistry, tmp_path: Path, **overrides: object) -> Registries:
    settings = registry.settings(
        llm_url=registry.llm_url,
        llm_model="fake-judge",
        llm_max_rate=50.0,
        max_attempts=2,
        backoff_base_s=0.01,
        **overrides,
    )
    return Registries.from_settings(settings, RegistryPool())


def test_verdicts_are_parsed_strictly() -> None:
    assert parse_verdict("SUPPORT") == "SUPPORT"
    assert parse_verdict(" contradict.\n") == "CONTRADICT"
    assert parse_verdict("Not  enough info") == "NOT ENOUGH INFO"
    for answer in ("SUPPORTS", "SUPPORT, mostly", "SUPPORT\nCONTRADICT", "NEI", "", "maybe"):
        assert parse_verdict(answer) is None


def test_the_judge_is_off_without_an_endpoint_and_needs_a_model() -> None:
    assert Registries.from_settings(RegistrySettings(llm_url=None), RegistryPool()).judge is None
    with pytest.raises(ValidationError, match="CITEAUDIT_LLM_MODEL"):
        RegistrySettings(llm_url="http://127.0.0.1:9/v1", llm_model=None)


def test_each_pair_with_an_abstract_gets_the_endpoints_verdict(empty_registry, tmp_path) -> None:
    with _registries(empty_registry, tmp_path) as registries:
        assert registries.judge is not None
        verdicts = registries.judge.verdicts([MUSCLE, NEGATED, TRANSFORMER, NO_ABSTRACT])
    assert verdicts == ["SUPPORT", "CONTRADICT", "NOT ENOUGH INFO", None]
    assert empty_registry.count("chat_completions") == 3  # no abstract: nothing to ask


def test_an_answer_that_is_not_a_verdict_leaves_it_empty(empty_registry, tmp_path) -> None:
    empty_registry.inject_fault("chatty", count=1)
    empty_registry.inject_fault("wrong_content_type", count=2)  # every attempt of one request
    with _registries(empty_registry, tmp_path) as registries:
        assert registries.judge is not None
        first = registries.judge.verdict(MUSCLE)
        second = registries.judge.verdict(MUSCLE)
        third = registries.judge.verdict(MUSCLE)
    assert (first, second, third) == (None, None, "SUPPORT")


def test_the_key_is_sent_but_never_cached_nor_logged(empty_registry, tmp_path, caplog) -> None:
    empty_registry.llm_key = KEY
    cache = tmp_path / "http-cache"
    caplog.set_level(logging.DEBUG)
    with _registries(
        empty_registry, tmp_path, llm_key=KEY, cache_enabled=True, cache_dir=cache
    ) as registries:
        assert registries.judge is not None
        assert registries.judge.verdicts([MUSCLE, TRANSFORMER]) == ["SUPPORT", "NOT ENOUGH INFO"]
        assert registries.judge.verdict(MUSCLE) == "SUPPORT"  # from the cache
        assert registries.stats()["llm"].cache_hits == 1
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and not any(KEY.encode() in p.read_bytes() for p in files)
    assert KEY not in caplog.text


def test_a_refused_key_stops_the_judge_and_stays_secret(empty_registry, tmp_path, caplog) -> None:
    """OpenAI's 401 echoes the key it was given: the logged error must not."""
    empty_registry.llm_key = "sk-the-right-one"
    with _registries(empty_registry, tmp_path, llm_key=KEY) as registries:
        assert registries.judge is not None
        assert registries.judge.verdicts([MUSCLE, NEGATED, TRANSFORMER]) == [None, None, None]
    assert "HTTP 401" in caplog.text and KEY not in caplog.text
    assert empty_registry.count("chat_completions") <= 2  # one per worker at most, then none


def test_a_redirect_to_another_host_gives_no_verdict(empty_registry, tmp_path, caplog) -> None:
    """Another host's answer is not the configured judge's, whatever it says: the request failed.
    (A 307 keeps the method and body; the key is rightly not sent along.)"""
    empty_registry.llm_key = KEY
    with FakeRegistry.empty(rate_limits=False) as elsewhere:  # answers anyone, no key asked
        empty_registry.inject_fault(
            "redirect", rate=1.0, service="llm", redirect_to=elsewhere.base_url
        )
        with _registries(empty_registry, tmp_path, llm_key=KEY) as registries:
            assert registries.judge is not None
            verdicts = registries.judge.verdicts([MUSCLE, NEGATED, TRANSFORMER])
        asked_elsewhere = elsewhere.count("chat_completions")
    assert verdicts == [None, None, None]
    assert asked_elsewhere == 0
    assert "redirected to another host" in caplog.text and KEY not in caplog.text


# Through the pipeline: tests/test_support.py runs its crew report with this judge configured.
