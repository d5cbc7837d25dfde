"""Deadlines: every request and every job ends in bounded time.

httpx's timeouts bound each socket operation, not a request: a server sending one byte every
20 s never trips a 30 s read timeout. So the network layer clamps each socket operation to the
time left before the request's deadline, and the job's deadline (set around a job's lookups)
clamps every request deadline in turn.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

# Wall-clock time (time.time()) the current job's lookups must end by: it crosses processes.
_job_ends_at: ContextVar[float | None] = ContextVar("citeaudit_job_ends_at", default=None)
# Monotonic time the request being sent on this thread must end by.
_request_ends_at: ContextVar[float | None] = ContextVar("citeaudit_request_ends_at", default=None)


@contextmanager
def job_deadline(ends_at: float | None) -> Iterator[None]:
    """Registry requests made inside end by `ends_at` (epoch seconds; None: no job deadline)."""
    token = _job_ends_at.set(ends_at)
    try:
        yield
    finally:
        _job_ends_at.reset(token)


def request_ends_at(request_deadline_s: float) -> float:
    """The monotonic time a request starting now must end by: its own deadline or the job's,
    whichever comes first (in the past when the job's deadline has passed)."""
    now = time.monotonic()
    ends_at = now + request_deadline_s
    job = _job_ends_at.get()
    if job is not None:
        ends_at = min(ends_at, now + (job - time.time()))
    return ends_at


def job_deadline_passed() -> bool:
    job = _job_ends_at.get()
    return job is not None and time.time() >= job


@contextmanager
def sending_until(ends_at: float) -> Iterator[None]:
    """Socket operations of the request sent inside end by `ends_at` (monotonic)."""
    token = _request_ends_at.set(ends_at)
    try:
        yield
    finally:
        _request_ends_at.reset(token)


def _clamp(timeout: float | None, error: type[Exception]) -> float | None:
    ends_at = _request_ends_at.get()
    if ends_at is None:
        return timeout
    left = ends_at - time.monotonic()
    if left <= 0:
        raise error("request deadline reached")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = _clamp(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        timeout = _clamp(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def network_transport() -> httpx.HTTPTransport:
    """httpx's own transport, its sockets bounded by the deadline of the request they carry.
    httpx offers no parameter for the network backend: it is set on the pool before any
    connection exists."""
    transport = httpx.HTTPTransport(retries=0)
    pool = transport._pool
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return transport
