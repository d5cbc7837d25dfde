"""The transport layers under the retry loop, each with one concern (httpx-transport style):

    CredentialsTransport  mailto / api_key / User-Agent, to the registry's own origin only;
                          follows redirects itself (credentials never follow to another host)
      ThrottledTransport  the host's limiter (rate, in-flight), capped body, request counts
        network           httpx.HTTPTransport, sockets bounded by the request's deadline

Credentials sit below the cache, so they never reach the disk.
"""

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus

import httpx

from tasks.errors import InfrastructureError
from tasks.registries.limits import HostLimiter

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024  # 200 efetch articles with references: a few MB
_SECRET_PARAMS = re.compile(r"\b(api_key|mailto|email)=[^&\s\"']+", re.IGNORECASE)


@dataclass(frozen=True)
class Credentials:
    """What identifies us to a registry: query parameters and headers added to live requests."""

    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    # Only the origin's own answer counts (the judge: another host's verdict is nobody's):
    # a redirect elsewhere is returned unfollowed, a failed request.
    origin_only: bool = False


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


class RequestCounter:
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


class BodyTooLarge(httpx.TransportError, InfrastructureError):
    """An answer larger than we are willing to hold in memory."""


class ThrottledTransport(httpx.BaseTransport):
    """Waits for the host's limiter, sends, reads the whole (capped) body, and teaches the
    limiter. The body is returned still encoded (gzip), as a transport should, so the cache
    above stores it consistently with its Content-Encoding header."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        limiter: HostLimiter,
        counter: RequestCounter,
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
    and cached answers are shared whatever the identity. Follows redirects itself: credentials
    go only to the registry's own origin, never to a host a redirect names (and parameters a
    Location echoes back are dropped before the next hop). With `origin_only`, a redirect to
    another host is not followed at all."""

    MAX_REDIRECTS = 5

    def __init__(self, inner: httpx.BaseTransport, credentials: Credentials) -> None:
        self._inner = inner
        self._credentials = credentials

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin = _origin(request.url)
        for _ in range(self.MAX_REDIRECTS + 1):
            own = _origin(request.url) == origin
            response = self._inner.handle_request(self._identified(request) if own else request)
            location = response.headers.get("location")
            if not (response.is_redirect and location):
                return response
            target = request.url.join(location)
            if self._credentials.origin_only and _origin(target) != origin:
                return response
            response.close()
            request = self._next_hop(request, response.status_code, target)
        raise httpx.TooManyRedirects(f"more than {self.MAX_REDIRECTS} redirects", request=request)

    def _identified(self, request: httpx.Request) -> httpx.Request:
        url = request.url.copy_merge_params(dict(self._credentials.params))
        headers = httpx.Headers(request.headers)
        headers.update(self._credentials.headers)
        return httpx.Request(
            request.method,
            url,
            headers=headers,
            content=request.content,
            extensions=request.extensions,
        )

    def _next_hop(self, request: httpx.Request, status: int, url: httpx.URL) -> httpx.Request:
        for name in self._credentials.params:
            url = url.copy_remove_param(name)
        method = request.method
        if status == 303 or (status in (301, 302) and method == "POST"):
            method = "GET"  # what browsers and httpx do: the form is not sent again
        headers = httpx.Headers(request.headers)
        headers.pop("host", None)  # set afresh from the new URL
        content = request.content if method == request.method else b""
        if method != request.method:
            for name in ("content-length", "content-type", "transfer-encoding"):
                headers.pop(name, None)
        return httpx.Request(
            method, url, headers=headers, content=content, extensions=request.extensions
        )

    def close(self) -> None:
        self._inner.close()


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)
