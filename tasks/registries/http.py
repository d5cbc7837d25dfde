"""The one HTTP stack of citeaudit: retries above a disk cache above a per-host rate limiter.

    RegistryHttp.request  retry loop: backoff with full jitter, Retry-After, body checks
      httpx.Client        one per registry host, thread-safe, shared by the flow's threads
        hishel cache      24 h on disk, forced (registries send no cache headers), 200/404 only
          CredentialsTransport  mailto / api_key / User-Agent: below the cache, so never on disk
            ThrottledTransport  token bucket + in-flight cap; counts live requests only
              httpx.HTTPTransport (or an injected transport)

Cache hits never reach the limiter, so they cost no rate-limit token and are not counted as
registry requests. Every error string this module produces is redacted of secrets.
"""

import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote, quote_plus
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
import hishel
import httpcore
import httpx
from defusedxml import DefusedXmlException

from models.audit import Lookup
from tasks.registries.deadline import (
    job_deadline_passed,
    network_transport,
    request_ends_at,
    sending_until,
)
from tasks.registries.limits import HostLimiter, HostLimits, shared_limiter

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024  # 200 efetch articles with references: a few MB
_SECRET_PARAMS = re.compile(r"\b(api_key|mailto|email)=[^&\s\"']+", re.IGNORECASE)


class RegistryUnavailable(Exception):
    """We could not get an answer (after retries): the citation stays `unverified`."""

    def __init__(self, reason: str, attempts: int) -> None:
        plural = "s" if attempts != 1 else ""
        tried = f"after {attempts} attempt{plural}" if attempts else "not sent"
        super().__init__(f"{reason} ({tried})")
        self.reason = reason
        self.attempts = attempts


class RegistryRequestError(Exception):
    """The registry rejected the request itself (HTTP 400 and other 4xx): a bug on our side."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


def failed_lookup(
    identifier: str, exc: RegistryUnavailable | RegistryRequestError, attempts: int
) -> Lookup:
    """We could not ask: the error (already redacted) is kept, the identifier stays unverified.
    `attempts` counts the requests made for it before this one."""
    tries = exc.attempts if isinstance(exc, RegistryUnavailable) else 1
    return Lookup(identifier=identifier, error=str(exc), attempts=attempts + tries)


class InvalidResponse(Exception):
    """A 2xx answer whose body we cannot use (truncated, wrong type, hostile XML): retried."""


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 120.0

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter (AWS architecture blog): uniform in [0, cap]."""
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(0.0, ceiling)

    def wait_before_retry(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            if retry_after is not None:
                return min(retry_after, self.retry_after_cap_s)
        return self.backoff(attempt)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds to wait: either delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class Credentials:
    """What identifies us to a registry: query parameters and headers added to live requests."""

    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` without any secret value (plain or URL-encoded) nor secret-bearing parameter."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
                text = text.replace(form, "***")
    return _SECRET_PARAMS.sub(r"\1=***", text)


@dataclass(frozen=True)
class HttpStats:
    sent: int  # requests that went to the wire (every attempt, every redirect hop)
    throttled: int  # 429 answers received
    cache_hits: int


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = 0
        self.throttled = 0
        self.cache_hits = 0

    def add(self, *, sent: int = 0, throttled: int = 0, cache_hits: int = 0) -> None:
        with self._lock:
            self.sent += sent
            self.throttled += throttled
            self.cache_hits += cache_hits


class BodyTooLarge(httpx.TransportError):
    """An answer larger than we are willing to hold in memory."""


class ThrottledTransport(httpx.BaseTransport):
    """Waits for the host's limiter, sends, reads the whole (capped) body, and teaches the
    limiter. The body is returned still encoded (gzip), as a transport should, so the cache
    above stores it consistently with its Content-Encoding header."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        limiter: HostLimiter,
        counter: _Counter,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self._inner = inner
        self._limiter = limiter
        self._counter = counter
        self._max_body_bytes = max_body_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._limiter.slot():
            self._counter.add(sent=1)
            response = self._inner.handle_request(request)
            # Read inside the slot: in flight means until the body is in, and a connection
            # dropped mid-body surfaces here as a transport error (retried above).
            try:
                body = self._read_capped(response, request)
            finally:
                response.close()
        self._limiter.observe(response.status_code, response.headers)
        if response.status_code == 429:
            self._counter.add(throttled=1)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(body),
            extensions=response.extensions,
            request=request,
        )

    def _read_capped(self, response: httpx.Response, request: httpx.Request) -> bytes:
        # The stream itself, not iter_raw(): raw bytes even if a transport pre-read them.
        if not isinstance(response.stream, httpx.SyncByteStream):
            raise TypeError("registry transports must be synchronous")
        chunks, size = [], 0
        for chunk in response.stream:
            size += len(chunk)
            if size > self._max_body_bytes:
                raise BodyTooLarge(f"answer exceeds {self._max_body_bytes} bytes", request=request)
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._inner.close()


class CredentialsTransport(httpx.BaseTransport):
    """Adds identifying parameters and headers below the cache, so they never reach the disk
    and cached answers are shared whatever the identity."""

    def __init__(self, inner: httpx.BaseTransport, credentials: Credentials) -> None:
        self._inner = inner
        self._credentials = credentials

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._credentials.params:
            request.url = request.url.copy_merge_params(dict(self._credentials.params))
        request.headers.update(self._credentials.headers)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


_CACHE_KEY = "citeaudit.cache_key"
_CACHEABLE_STATUSES = [200, 404]


def _cache_key(request: httpcore.Request, body: bytes | None) -> str:
    """Method, URL, Accept and body (POST efetch is keyed on its id list). The key is also left
    on the request so a body that turns out unusable can be evicted."""
    accept = b",".join(v for k, v in request.headers if k.lower() == b"accept")
    parts = [request.method, bytes(request.url), accept, body or b""]
    key = hashlib.sha256(b"\n".join(parts)).hexdigest()
    request.extensions[_CACHE_KEY] = key
    return key


class _TolerantFileStorage(hishel.FileStorage):
    """hishel's file storage, but an entry another process is half-way through writing (its
    writes are not atomic) or a damaged file is a miss, not a crash."""

    def retrieve(self, key: str) -> Any:
        try:
            return super().retrieve(key)
        except (ValueError, KeyError, TypeError, OSError):
            self.remove(key)
            return None


class ResponseCache:
    """Registry answers on disk for `ttl_s`, shared by every client and job using `directory`."""

    def __init__(self, directory: Path, ttl_s: float = 86_400.0) -> None:
        self.directory = directory
        self._storage = _TolerantFileStorage(base_path=directory, ttl=ttl_s)
        # Registries send no cache headers: force caching, but only of real answers (200, 404).
        self._controller = hishel.Controller(
            cacheable_methods=["GET", "POST"],
            cacheable_status_codes=_CACHEABLE_STATUSES,
            force_cache=True,
            key_generator=_cache_key,
        )

    def wrap(self, transport: httpx.BaseTransport) -> httpx.BaseTransport:
        return hishel.CacheTransport(
            transport=transport, storage=self._storage, controller=self._controller
        )

    def forget(self, response: httpx.Response) -> None:
        key = response.request.extensions.get(_CACHE_KEY)
        if isinstance(key, str):
            self._storage.remove(key)


class Unreachable:
    """Stops asking a host that does not answer (no DNS, no route, refused, or it accepts and
    never answers): after `threshold` requests in a row got no answer on any attempt (connect
    failures, timeouts), later requests fail at once for `cooldown_s`; then one more silent
    request opens it again. A 5xx is an answer: the host is there and may recover."""

    def __init__(self, threshold: int = 2, cooldown_s: float = 60.0) -> None:
        self._threshold = threshold
        self._cooldown_s = cooldown_s
        self._failures = 0
        self._open_until = 0.0
        self._reason = ""
        self._lock = threading.Lock()

    def open_reason(self) -> str | None:
        with self._lock:
            return self._reason if time.monotonic() < self._open_until else None

    def record(self, silence: str | None) -> None:
        """One request done: `silence` is why no attempt got an answer, None if one did."""
        with self._lock:
            if silence is None:
                self._failures = 0
                return
            self._failures += 1
            if self._failures >= self._threshold:
                self._open_until = time.monotonic() + self._cooldown_s
                self._reason = silence


# Is this 404 the registry's own, authoritative "no such record"?
Absent = Callable[[httpx.Response], bool]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """A registry's answer: `value` is the parsed body, or None when it answered authoritatively
    that there is no such record."""

    value: T | None
    attempts: int


class RegistryHttp:
    """One registry host: base URL, limiter, cache, credentials and retries. Thread-safe."""

    def __init__(
        self,
        base_url: str,
        limits: HostLimits,
        *,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | None = None,
        cache: ResponseCache | None = None,
        transport: httpx.BaseTransport | None = None,
        credentials: Credentials | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        request_deadline_s: float = 90.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._request_deadline_s = request_deadline_s
        self.limiter = shared_limiter(self.base_url, limits)
        self._retry = retry or RetryPolicy()
        self._cache = cache
        self._credentials = credentials or Credentials()
        self._counter = _Counter()
        self._unreachable = Unreachable()
        stack: httpx.BaseTransport = ThrottledTransport(
            transport or network_transport(),
            self.limiter,
            self._counter,
            max_body_bytes,
        )
        stack = CredentialsTransport(stack, self._credentials)
        if cache is not None:
            stack = cache.wrap(stack)
        self._client = httpx.Client(
            base_url=self.base_url,
            transport=stack,
            timeout=timeout or httpx.Timeout(30.0, connect=10.0),
            follow_redirects=True,
        )

    @property
    def stats(self) -> HttpStats:
        return HttpStats(self._counter.sent, self._counter.throttled, self._counter.cache_hits)

    def redact(self, text: str) -> str:
        return redact(text, self._credentials.secrets)

    def get(
        self,
        path: str,
        parse: Callable[[httpx.Response], T],
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        absent: Absent | None = None,
    ) -> Reply[T]:
        return self.request("GET", path, parse, params=params, headers=headers, absent=absent)

    def post(
        self,
        path: str,
        parse: Callable[[httpx.Response], T],
        *,
        data: Mapping[str, str | int] | None = None,
        json: Any = None,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        absent: Absent | None = None,
    ) -> Reply[T]:
        """A form (`data`) or a JSON body (`json`: Semantic Scholar's batch)."""
        return self.request(
            "POST",
            path,
            parse,
            params=params,
            data=data,
            json=json,
            headers=headers,
            absent=absent,
        )

    def request(
        self,
        method: str,
        path: str,
        parse: Callable[[httpx.Response], T],
        *,
        params: Mapping[str, str | int] | None = None,
        data: Mapping[str, str | int] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        absent: Absent | None = None,
    ) -> Reply[T]:
        """Ask until a usable answer: parsed 2xx, or None for a 404 that `absent` recognises as
        the registry's own "no such record". Any other 404 (a wrong base path, a gateway, a
        proxy) proves nothing: RegistryUnavailable at once. Raises RegistryUnavailable after the
        last attempt or at the request's deadline, RegistryRequestError on 400 and other
        non-retryable 4xx."""
        url = self._client.build_request(method, path, params=params).url
        where = f"{method} {url}"
        # Unavailability is about the service, not the query: name the endpoint, not the ids.
        endpoint = f"{method} {url.scheme}://{url.netloc.decode()}{url.path}"
        if job_deadline_passed():
            raise RegistryUnavailable(f"{endpoint}: the job's deadline has passed", 0)
        if skipped := self._unreachable.open_reason():
            raise RegistryUnavailable(self.redact(f"{endpoint}: unreachable, {skipped}"), 0)
        ends_at = request_ends_at(self._request_deadline_s)
        reason = "no attempt made"
        answered = False
        attempt = 0
        while attempt < self._retry.max_attempts:
            attempt += 1
            response: httpx.Response | None = None
            try:
                with sending_until(ends_at):
                    response = self._client.request(
                        method, path, params=params, data=data, json=json, headers=headers
                    )
            except httpx.RequestError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                answered |= not isinstance(exc, (httpx.ConnectError, httpx.TimeoutException))
            else:
                answered = True
                if response.extensions.get("from_cache"):
                    self._counter.add(cache_hits=1)
                status = response.status_code
                if status == 404:
                    if absent is not None and absent(response):
                        return self._done(Reply(None, attempt))
                    self._forget(response)
                    reason = "HTTP 404 that is not the registry's own 'no such record' answer"
                    if response.extensions.get("from_cache"):
                        continue  # an entry cached before this rule: ask the registry itself
                    self._unreachable.record(None)
                    raise RegistryUnavailable(self.redact(f"{endpoint}: {reason}"), attempt)
                if 200 <= status < 300:
                    try:
                        return self._done(Reply(parse(response), attempt))
                    except InvalidResponse as exc:
                        self._forget(response)
                        reason = f"unusable answer: {exc}"
                elif status in RETRYABLE_STATUSES:
                    reason = f"HTTP {status}"
                else:
                    self._unreachable.record(None)
                    snippet = response.text[:300].strip()
                    raise RegistryRequestError(
                        self.redact(f"{where}: HTTP {status}: {snippet}"), status
                    )
            if attempt < self._retry.max_attempts:
                wait = self._retry.wait_before_retry(attempt, response)
                if time.monotonic() + wait >= ends_at:
                    reason += "; no time left before the request's deadline"
                    break
                time.sleep(wait)
        self._unreachable.record(None if answered else reason)
        raise RegistryUnavailable(self.redact(f"{endpoint}: {reason}"), attempt)

    def _done(self, reply: Reply[T]) -> Reply[T]:
        self._unreachable.record(None)
        return reply

    def _forget(self, response: httpx.Response) -> None:
        """Only answers we accept stay cached: one bad minute must not poison later jobs."""
        if self._cache is not None:
            self._cache.forget(response)

    def close(self) -> None:
        self._client.close()


def json_body(response: httpx.Response) -> Any:
    """The JSON body of a 2xx answer, or InvalidResponse (wrong content type, truncated)."""
    content_type = response.headers.get("content-type", "")
    if "json" not in content_type.lower():
        raise InvalidResponse(f"expected JSON, got content type {content_type or 'none'!r}")
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidResponse(f"body is not valid JSON ({exc.__class__.__name__})") from exc


def xml_body(response: httpx.Response) -> Element:
    """The XML body of a 2xx answer, parsed without entity expansion: a DOCTYPE is allowed
    (real efetch bodies carry one), entity declarations and external references are not."""
    content_type = response.headers.get("content-type", "")
    if "xml" not in content_type.lower():
        raise InvalidResponse(f"expected XML, got content type {content_type or 'none'!r}")
    try:
        root: Element = SafeET.fromstring(
            response.content, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
    except DefusedXmlException as exc:
        raise InvalidResponse(f"refused hostile XML ({exc.__class__.__name__})") from exc
    except ParseError as exc:
        raise InvalidResponse(f"body is not well-formed XML ({exc})") from exc
    return root
