"""The one HTTP stack of citeaudit, layer by layer (each one concern, see transports.py):

    RegistryHttp.request  retries (backoff with full jitter, Retry-After), deadlines, circuit
                          breaker, body checks, authoritative 404s; forgets unaccepted answers
      httpx.Client        one per registry host, thread-safe, shared by the flow's threads
        ResponseCache     24 h on disk (hishel), keyed without credentials
          CredentialsTransport  identity to the registry's own origin only; redirects
            ThrottledTransport  token bucket + in-flight cap; counts live requests only
              network_transport (or an injected transport): sockets bounded by deadlines

Cache hits never reach the limiter, so they cost no rate-limit token and are not counted as
registry requests. Every error string this module produces is redacted of secrets.
"""

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
import httpx
from defusedxml import DefusedXmlException

from models.audit import Lookup
from tasks.errors import InfrastructureError
from tasks.registries.breaker import Unreachable
from tasks.registries.cache import ResponseCache
from tasks.registries.deadline import (
    job_deadline_passed,
    network_transport,
    request_ends_at,
    sending_until,
)
from tasks.registries.limits import HostLimiter, parse_retry_after
from tasks.registries.transports import (
    DEFAULT_MAX_BODY_BYTES,
    Credentials,
    CredentialsTransport,
    HttpStats,
    RequestCounter,
    ThrottledTransport,
    redact,
)

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class RegistryUnavailable(InfrastructureError):
    """We could not get an answer (after retries): the citation stays `unverified`."""

    def __init__(self, reason: str, attempts: int) -> None:
        plural = "s" if attempts != 1 else ""
        tried = f"after {attempts} attempt{plural}" if attempts else "not sent"
        super().__init__(f"{reason} ({tried})")
        self.reason = reason
        self.attempts = attempts


class RegistryRequestError(InfrastructureError):
    """The registry rejected the request itself (HTTP 400 and other 4xx: a bug on our side), or
    redirected it to a host whose answer would not count (Credentials.origin_only)."""

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


class InvalidResponse(InfrastructureError):
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


# Is this 404 the registry's own, authoritative "no such record"?
Absent = Callable[[httpx.Response], bool]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """A registry's answer: `value` is the parsed body, or None when it answered authoritatively
    that there is no such record."""

    value: T | None
    attempts: int


class RegistryHttp:
    """One registry host: base URL, limiter, cache, credentials and retries. Thread-safe.
    The limiter is passed in: every client of one registry in a process or job must hold the
    same one (`RegistryPool.limiter`), or threads and rebuilt clients multiply the pace."""

    def __init__(
        self,
        base_url: str,
        limiter: HostLimiter,
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
        self.limiter = limiter
        self._retry = retry or RetryPolicy()
        self._cache = cache
        self._credentials = credentials or Credentials()
        self._counter = RequestCounter()
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
            follow_redirects=False,  # CredentialsTransport follows them, without credentials
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
                        return self._done(Reply(None, attempt), response)
                    self._forget(response)
                    reason = "HTTP 404 that is not the registry's own 'no such record' answer"
                    if response.extensions.get("from_cache"):
                        continue  # an entry cached before this rule: ask the registry itself
                    self._unreachable.record(None)
                    raise RegistryUnavailable(self.redact(f"{endpoint}: {reason}"), attempt)
                if 200 <= status < 300:
                    try:
                        return self._done(Reply(parse(response), attempt), response)
                    except InvalidResponse as exc:
                        self._forget(response)
                        reason = f"unusable answer: {exc}"
                elif status in RETRYABLE_STATUSES:
                    reason = f"HTTP {status}"
                else:
                    self._unreachable.record(None)
                    snippet = response.text[:300].strip()
                    if response.is_redirect:  # left unfollowed: Credentials.origin_only
                        location = response.headers.get("location", "")
                        snippet = f"redirected to another host ({location}), not followed"
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

    def _done(self, reply: Reply[T], response: httpx.Response) -> Reply[T]:
        self._unreachable.record(None)
        if self._cache is not None:
            self._cache.keep(response)
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
