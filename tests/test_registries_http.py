"""The HTTP stack's parts: token bucket, adaptive limiter, Retry-After, redaction, cache, caps."""

import gzip
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from tasks.registries.cache import ResponseCache
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    RetryPolicy,
    json_body,
    xml_body,
)
from tasks.registries.limits import (
    HostLimiter,
    HostLimits,
    TokenBucket,
    parse_interval,
    parse_retry_after,
)
from tasks.registries.settings import RegistrySettings
from tasks.registries.transports import redact

FAST = RetryPolicy(max_attempts=3, backoff_base_s=0.001, backoff_cap_s=0.01)


class FakeClock:
    """Time that only moves when the bucket sleeps: makes pacing exact and instant."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_token_bucket_spaces_permits_evenly_and_follows_rate_changes() -> None:
    clock = FakeClock()
    bucket = TokenBucket(4.0, clock=clock, sleep=clock.sleep)
    times = []
    for _ in range(5):
        bucket.acquire()
        times.append(clock.now)
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    bucket.set_rate(1.0)
    bucket.acquire()
    assert clock.now == pytest.approx(2.0)
    clock.now += 0.05  # an answer arrives, advertising less: the next permit is 1/rate after
    bucket.set_rate(0.5)  # the last one, not sooner for what was saved up at the old rate
    bucket.acquire()
    assert clock.now == pytest.approx(4.0)
    bucket.hold(3.0)  # Retry-After
    bucket.acquire()
    assert clock.now == pytest.approx(7.0)


def test_limiter_follows_advertised_limits_down_never_above_the_maximum() -> None:
    limiter = HostLimiter(HostLimits(max_rate=10.0, max_in_flight=5, safety=0.9))
    assert limiter.rate == pytest.approx(9.0) and limiter.in_flight_limit == 5
    limiter.observe(200, {"x-rate-limit-limit": "50", "x-rate-limit-interval": "1s"})
    assert limiter.rate == pytest.approx(9.0)  # the configured maximum wins
    limiter.observe(200, {"x-rate-limit-limit": "2", "x-rate-limit-interval": "1s"})
    assert limiter.rate == pytest.approx(1.8)
    limiter.observe(200, {"x-rate-limit-limit": "60", "x-rate-limit-interval": "60s"})
    assert limiter.rate == pytest.approx(0.9)
    limiter.observe(200, {"x-concurrency-limit": "1"})
    assert limiter.in_flight_limit == 1
    limiter.observe(200, {"x-concurrency-limit": "99"})
    assert limiter.in_flight_limit == 5


def test_an_advertised_limit_of_one_an_hour_is_floored_and_cannot_stall_a_job() -> None:
    limiter = HostLimiter(HostLimits(max_rate=5.0, max_in_flight=1, safety=1.0))
    limiter.observe(200, {"x-rate-limit-limit": "1", "x-rate-limit-interval": "1h"})
    assert limiter.rate == pytest.approx(0.5)  # a tenth of the documented maximum


def test_limiter_halves_its_pace_on_429_and_recovers_on_success() -> None:
    limiter = HostLimiter(HostLimits(max_rate=10.0, max_in_flight=2, safety=1.0))
    limiter.observe(429, {})
    assert limiter.rate == pytest.approx(5.0)
    limiter.observe(429, {})
    assert limiter.rate == pytest.approx(2.5)
    for _ in range(40):
        limiter.observe(200, {})
    assert limiter.rate == pytest.approx(10.0)


def test_after_a_429_the_pace_is_what_the_registry_advertises_not_below_it() -> None:
    """Halving below an advertised limit only slows the job: the 429 came from a request sent
    before the limit was known (or from another client); its Retry-After holds every request."""
    limiter = HostLimiter(HostLimits(max_rate=10.0, max_in_flight=2, safety=0.9))
    advertised = {"x-rate-limit-limit": "2", "x-rate-limit-interval": "1s"}
    limiter.observe(429, {**advertised, "retry-after": "1"})
    assert limiter.rate == pytest.approx(1.8)
    limiter.observe(429, advertised)
    assert limiter.rate == pytest.approx(1.8)
    started = time.monotonic()
    with limiter.slot():
        waited = time.monotonic() - started
    assert 0.9 <= waited < 1.5


@pytest.mark.parametrize(
    ("text", "seconds"), [("1s", 1.0), ("500ms", 0.5), ("1m", 60.0), ("2", 2.0), ("soon", None)]
)
def test_parse_interval(text: str, seconds: float | None) -> None:
    assert parse_interval(text) == seconds


def test_retry_after_as_seconds_or_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3", now) == 3.0
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now) == pytest.approx(30.0)
    assert parse_retry_after(format_datetime(now - timedelta(hours=1), usegmt=True), now) == 0.0
    assert parse_retry_after("whenever", now) is None
    assert parse_retry_after(None, now) is None


def test_retry_after_of_a_hostile_server_is_no_crash() -> None:
    """A header byte 0xB2 reads as '²' (a digit to str.isdigit, not to float): not a wait."""
    headers = httpx.Headers([(b"retry-after", b"\xb2")])
    assert parse_retry_after(headers.get("retry-after")) is None
    assert FAST.wait_before_retry(1, httpx.Response(429, headers=headers)) <= FAST.backoff_cap_s


def test_redact_removes_secrets_in_every_form() -> None:
    text = (
        "GET https://x/works?mailto=me%40lab.org&api_key=abc123 failed for me@lab.org; "
        "efetch.fcgi?email=me+x@lab.org&tool=citeaudit"
    )
    clean = redact(text, ["me@lab.org", "abc123"])
    assert "me@lab.org" not in clean and "me%40lab.org" not in clean and "abc123" not in clean
    assert "me+x@lab.org" not in clean  # parameter names alone are enough
    assert "tool=citeaudit" in clean


def _json_reply(request: httpx.Request, payload: object, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=payload, request=request)


def test_gzip_bodies_survive_the_cache(tmp_path: Path) -> None:
    """Transports return bodies still encoded; the cache must store them that way."""
    calls = []

    def gzip_answer(request: httpx.Request) -> httpx.Response:
        calls.append(request.url)
        body = gzip.compress(json.dumps({"message": {"n": 1}}).encode())
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return httpx.Response(200, content=body, headers=headers)

    cache = ResponseCache(tmp_path)
    http = RegistryHttp(
        "http://gzip.test",
        HostLimiter(HostLimits(1000.0, 4)),
        cache=cache,
        transport=httpx.MockTransport(gzip_answer),
        retry=FAST,
    )
    first = http.get("/works", json_body)
    second = http.get("/works", json_body)
    assert first.value == second.value == {"message": {"n": 1}}
    assert len(calls) == 1 and http.stats.cache_hits == 1 and http.stats.sent == 1


def test_an_answer_is_cached_only_once_the_client_has_checked_it(tmp_path: Path) -> None:
    """While one client checks an answer, another (a thread, or a process on the same cache
    folder) cannot be served it: an answer the first will reject must never reach anyone."""
    calls: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return _json_reply(request, {"n": len(calls)})

    def client() -> RegistryHttp:
        return RegistryHttp(
            "http://check.test",
            HostLimiter(HostLimits(1000.0, 4)),
            cache=ResponseCache(tmp_path),
            transport=httpx.MockTransport(answer),
            retry=FAST,
        )

    first, other = client(), client()
    seen_meanwhile = []

    def checking(response: httpx.Response) -> object:
        seen_meanwhile.append(other.get("/x", json_body).value)
        return json_body(response)

    assert first.get("/x", checking).value == {"n": 1}
    assert seen_meanwhile == [{"n": 2}]  # asked the registry: the unchecked answer was unseen
    assert client().get("/x", json_body).value in ({"n": 1}, {"n": 2})
    assert len(calls) == 2  # checked answers are served from the cache


def test_unusable_cached_body_is_evicted_and_fetched_again(tmp_path: Path) -> None:
    bodies = [b"<html>maintenance</html>", b'{"ok": true}']

    def answer(request: httpx.Request) -> httpx.Response:
        body = bodies.pop(0) if len(bodies) > 1 else bodies[0]
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    http = RegistryHttp(
        "http://evict.test",
        HostLimiter(HostLimits(1000.0, 4)),
        cache=ResponseCache(tmp_path),
        transport=httpx.MockTransport(answer),
        retry=FAST,
    )
    assert http.get("/x", json_body).value == {"ok": True}
    assert http.stats.sent == 2
    assert http.get("/x", json_body).value == {"ok": True}  # the good answer is now cached
    assert http.stats.sent == 2


def test_400_is_a_request_error_an_authoritative_404_an_answer_and_5xx_unavailable() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        status = int(request.url.path.strip("/"))
        return _json_reply(request, {"status": "failed"}, status)

    http = RegistryHttp(
        "http://status.test",
        HostLimiter(HostLimits(1000.0, 4)),
        transport=httpx.MockTransport(answer),
        retry=FAST,
    )
    assert http.get("/404", json_body, absent=lambda r: "failed" in r.text).value is None
    with pytest.raises(RegistryUnavailable, match="not the registry's own") as gateway:
        http.get("/404", json_body, absent=lambda r: "Resource not found." in r.text)
    assert gateway.value.attempts == 1  # a 404 is an answer: not asked again
    with pytest.raises(RegistryRequestError) as rejected:
        http.get("/400", json_body)
    assert rejected.value.status == 400
    with pytest.raises(RegistryUnavailable) as unavailable:
        http.get("/503", json_body)
    assert unavailable.value.attempts == 3 and "HTTP 503" in str(unavailable.value)
    assert http.stats.sent == 2 + 1 + 3


def test_xml_body_refuses_entities_but_allows_a_doctype() -> None:
    doctype = (
        b'<?xml version="1.0"?><!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle//EN"'
        b' "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd"><PubmedArticleSet/>'
    )
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;">]>'
        b"<PubmedArticleSet>&b;</PubmedArticleSet>"
    )
    xml = {"content-type": "text/xml; charset=UTF-8"}
    assert xml_body(httpx.Response(200, content=doctype, headers=xml)).tag == "PubmedArticleSet"
    for hostile in (laughs, b"<PubmedArticleSet><PubmedArt", b"not xml at all"):
        with pytest.raises(InvalidResponse):
            xml_body(httpx.Response(200, content=hostile, headers=xml))
    with pytest.raises(InvalidResponse):
        xml_body(httpx.Response(200, content=doctype, headers={"content-type": "text/html"}))


def test_a_damaged_cache_entry_is_a_miss(tmp_path: Path) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return _json_reply(request, {"message": "fresh"})

    http = RegistryHttp(
        "http://damaged.test",
        HostLimiter(HostLimits(1000.0, 4)),
        cache=ResponseCache(tmp_path),
        transport=httpx.MockTransport(answer),
        retry=FAST,
    )
    http.get("/w", json_body)
    (entry,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    entry.write_bytes(entry.read_bytes()[:40])  # as if another process were mid-write
    assert http.get("/w", json_body).value == {"message": "fresh"}
    assert http.stats.sent == 2
    assert http.get("/w", json_body).value == {"message": "fresh"}
    assert http.stats.sent == 2 and http.stats.cache_hits == 1


def test_settings_come_from_the_environment_and_hide_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CITEAUDIT_CROSSREF_URL", "http://crossref.test")
    monkeypatch.setenv("CITEAUDIT_MAILTO", "me@lab.example")
    monkeypatch.setenv("NCBI_API_KEY", "key-123")
    monkeypatch.setenv("CITEAUDIT_CACHE_DIR", str(tmp_path))
    settings = RegistrySettings()
    assert settings.crossref_url == "http://crossref.test" and settings.cache_dir == tmp_path
    assert settings.mailto_value() == "me@lab.example" and settings.api_key_value() == "key-123"
    assert "me@lab.example" not in repr(settings) and "key-123" not in repr(settings)
    assert (
        settings.crossref_limits() == HostLimits(10.0, 5)
        and settings.pubmed_limits().max_rate == 10.0
    )
    monkeypatch.setenv("CITEAUDIT_MAILTO", "")
    monkeypatch.delenv("NCBI_API_KEY")
    anonymous = RegistrySettings()
    assert anonymous.crossref_limits() == HostLimits(5.0, 1)
    assert anonymous.pubmed_limits().max_rate == 3.0


def test_an_unreachable_host_is_skipped_after_two_failed_requests() -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = RegistryHttp(f"http://127.0.0.1:{port}", HostLimiter(HostLimits(1000.0, 4)), retry=FAST)
    for _ in range(2):
        with pytest.raises(RegistryUnavailable) as failed:
            http.get("/works", json_body)
        assert failed.value.attempts == 3 and "ConnectError" in str(failed.value)
    with pytest.raises(RegistryUnavailable) as skipped:
        http.get("/works", json_body)
    assert skipped.value.attempts == 0 and "unreachable" in str(skipped.value)
    assert http.stats.sent == 6  # the third request never went out


def test_a_host_that_answers_5xx_is_never_skipped() -> None:
    http = RegistryHttp(
        "http://status.test",
        HostLimiter(HostLimits(1000.0, 4)),
        transport=httpx.MockTransport(lambda r: _json_reply(r, {}, 503)),
        retry=FAST,
    )
    for _ in range(4):
        with pytest.raises(RegistryUnavailable) as failed:
            http.get("/works", json_body)
        assert failed.value.attempts == 3
