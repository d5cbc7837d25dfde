"""Server-side rate and concurrency limits, as Crossref and NCBI enforce them.

A pool admits a request when fewer than `rate` requests were admitted in the last second (a
sliding window, shortened by `tolerance` to forgive clock jitter between client and server) and
fewer than `concurrency` admitted requests are still being answered. A client that paces itself
evenly (one request every 1/rate s) passes; a client that bursts `rate` requests and then keeps
going at `rate`/s, as a token bucket allows, gets 429s.
"""

import threading
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class PoolLimit:
    """Requests per window and concurrent requests one pool admits (None: unlimited)."""

    rate: int | None
    concurrency: int | None = None
    window: float = 1.0  # seconds `rate` is counted over (arXiv: 1 request per 3 s)


@dataclass
class Pool:
    """One rate-limit pool, e.g. Crossref's public pool or NCBI's callers with an api_key."""

    name: str
    limit: PoolLimit
    tolerance: float = 0.05
    _admitted: deque[float] = field(default_factory=deque)
    _active: int = 0
    _in_flight: int = 0
    max_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arrive(self) -> None:
        """Count a request in flight, admitted or not (the client's real concurrency)."""
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def depart(self, admitted: bool) -> None:
        with self._lock:
            self._in_flight -= 1
            if admitted:
                self._active -= 1

    def admit(self, enforce: bool) -> bool:
        """Admit the request (then call depart(True) when answered) or refuse it."""
        now = time.monotonic()
        with self._lock:
            window_start = now - (self.limit.window - self.tolerance)
            while self._admitted and self._admitted[0] <= window_start:
                self._admitted.popleft()
            if enforce:
                rate, concurrency = self.limit.rate, self.limit.concurrency
                if rate is not None and len(self._admitted) >= rate:
                    return False
                if concurrency is not None and self._active >= concurrency:
                    return False
            self._admitted.append(now)
            self._active += 1
            return True

    def reset(self) -> None:
        with self._lock:
            self._admitted.clear()
            self.max_in_flight = self._in_flight
