"""Client-side politeness: a token bucket and an in-flight cap per registry host, shared by threads
(the clients of one `RegistryPool` share one `HostLimiter` per registry).

Registries publish their limits (ADVERTISED_PACES: Crossref's `x-rate-limit-limit` requests per
`x-rate-limit-interval` and `x-concurrency-limit`; NCBI's `x-ratelimit-limit` per second), and
lower them under load. The limiter sends
one request first and holds every other until its answer is in, so the pace is the advertised
one from the second request on; it follows the advertised values down (never above the
configured maxima, never below a tenth of them) and back up. A 429 from a registry that
advertises its limits keeps the advertised pace (a slower one only lengthens the job) and holds
every request for its Retry-After, else for one advertised interval (the host's window is
full); from one that advertises nothing, it halves the pace until answers earn it back.
"""

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class AdvertisedPace:
    """One way a registry advertises its pace: a header counting requests, per the window a
    second header names (or `window_s` when the registry documents a fixed one)."""

    limit_header: str
    window_header: str | None = None
    window_s: float = 1.0

    def read(self, headers: Mapping[str, str]) -> tuple[float, float] | None:
        """(requests per second, window in seconds), or None when not advertised this way."""
        limit = int_header(headers, self.limit_header)
        window: float | None = self.window_s
        if self.window_header is not None and self.window_header in headers:
            window = parse_interval(headers[self.window_header])
        if limit is None or window is None or limit <= 0:
            return None
        return limit / window, window


# Every host is read for each of these; the slowest pace advertised wins. A header that is a
# quota of a longer window elsewhere (OpenAlex's daily credits) reads as a pace far above the
# documented maximum, which caps it: it never slows a job.
ADVERTISED_PACES = (
    AdvertisedPace("x-rate-limit-limit", "x-rate-limit-interval"),  # Crossref
    AdvertisedPace("x-ratelimit-limit"),  # NCBI E-utilities: requests per second
)


@dataclass(frozen=True)
class HostLimits:
    """The most a registry host allows us: requests per second and requests in flight."""

    max_rate: float
    max_in_flight: int
    # Stay this far under the limit so clock jitter between us and the server never trips it.
    safety: float = 0.9
    # An advertised limit is followed down to this share of `max_rate`, no further: a header
    # saying 1 request per hour must not stall a job (real overload still brings 429s).
    advertised_floor: float = 0.1
    # The longest a 429's Retry-After holds every request to the host.
    retry_after_cap_s: float = 120.0


class TokenBucket:
    """Permits at `rate` per second; `burst` permits may be saved up (1 = evenly spaced). A
    lower rate takes effect from the last permit given (not from what was saved up at the old
    rate), and `hold` gives none until a time has passed."""

    def __init__(
        self,
        rate: float,
        burst: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._tokens = burst
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._last_permit = float("-inf")
        self._held_until = float("-inf")
        self._lock = threading.Lock()

    @property
    def rate(self) -> float:
        return self._rate

    def set_rate(self, rate: float) -> None:
        with self._lock:
            self._refill()
            if rate < self._rate:
                since_permit = self._clock() - self._last_permit
                self._tokens = min(self._tokens, since_permit * rate)
            self._rate = rate

    def hold(self, seconds: float) -> None:
        """No permit for `seconds` from now (a Retry-After)."""
        with self._lock:
            self._held_until = max(self._held_until, self._clock() + seconds)

    def acquire(self) -> None:
        while True:
            with self._lock:
                self._refill()
                held = self._held_until - self._clock()
                if held <= 0 and self._tokens >= 1.0:
                    self._tokens -= 1.0
                    self._last_permit = self._clock()
                    return
                wait = max(held, (1.0 - self._tokens) / self._rate)
            self._sleep(wait)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now


class InFlightLimit:
    """A semaphore whose size can change while threads wait on it."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._in_use = 0
        self._changed = threading.Condition()

    @property
    def limit(self) -> int:
        return self._limit

    def set_limit(self, limit: int) -> None:
        with self._changed:
            self._limit = max(1, limit)
            self._changed.notify_all()

    def acquire(self) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._in_use < self._limit)
            self._in_use += 1

    def release(self) -> None:
        with self._changed:
            self._in_use -= 1
            self._changed.notify_all()


class HostLimiter:
    """Pace and in-flight cap for one registry host; adapts to what the host advertises."""

    # After a 429 from a host advertising nothing, the pace halves; each later success earns
    # back 5 % (about 14 answers to double).
    _PENALTY_FLOOR = 1 / 64
    _RECOVERY = 1.05

    def __init__(self, limits: HostLimits) -> None:
        self._limits = limits
        self._advertised_rate: float | None = None
        self._penalty = 1.0
        self._lock = threading.Lock()
        self._bucket = TokenBucket(limits.max_rate * limits.safety)
        self._in_flight = InFlightLimit(limits.max_in_flight)
        self._first_sent = False  # under _lock
        self._first_answered = threading.Event()

    @property
    def rate(self) -> float:
        """Requests per second currently allowed."""
        return self._bucket.rate

    @property
    def in_flight_limit(self) -> int:
        return self._in_flight.limit

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one in-flight place and one rate permit for the duration of a request (call
        `observe` inside it). The host's first request goes alone: the others wait for its
        answer (or failure), and the limits it advertised."""
        first = self._await_first_answer()
        try:
            self._in_flight.acquire()
            try:
                self._bucket.acquire()
                yield
            finally:
                self._in_flight.release()
        finally:
            if first:
                self._first_answered.set()

    def _await_first_answer(self) -> bool:
        """True for the request that goes first; any other returns once it is answered."""
        if not self._first_answered.is_set():
            with self._lock:
                first, self._first_sent = not self._first_sent, True
            if first:
                return True
            self._first_answered.wait()
        return False

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one live answer: advertised limits, and 429s."""
        with self._lock:
            advertised = advertised_pace(headers)
            if advertised is not None:
                floor = self._limits.max_rate * self._limits.advertised_floor
                self._advertised_rate = max(advertised[0], floor)
            if status == 429:
                # The host's window is full: wait as it says, else until a window has passed.
                wait = parse_retry_after(headers.get("retry-after"))
                if wait is None and advertised is not None:
                    wait = advertised[1]
                if wait:
                    self._bucket.hold(min(wait, self._limits.retry_after_cap_s))
                if self._advertised_rate is None:  # the 429 is all we know of the limit
                    self._penalty = max(self._PENALTY_FLOOR, self._penalty / 2)
            else:
                self._penalty = min(1.0, self._penalty * self._RECOVERY)
            ceiling = self._limits.max_rate
            if self._advertised_rate is not None:
                ceiling = min(ceiling, self._advertised_rate)
            self._bucket.set_rate(ceiling * self._limits.safety * self._penalty)
            concurrency = int_header(headers, "x-concurrency-limit")
            if concurrency is not None:
                self._in_flight.set_limit(min(self._limits.max_in_flight, concurrency))


def advertised_pace(headers: Mapping[str, str]) -> tuple[float, float] | None:
    """The slowest pace an answer's headers advertise, as (requests per second, window in
    seconds), or None when they advertise none."""
    paces = [pace for form in ADVERTISED_PACES if (pace := form.read(headers)) is not None]
    return min(paces, default=None)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds to wait: either delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # str.isdigit also takes '²', which float refuses
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def parse_interval(text: str) -> float | None:
    """`1s` -> 1.0, `500ms` -> 0.5, `1m` -> 60.0; a bare number is seconds."""
    match = _INTERVAL.match(text)
    if not match:
        return None
    seconds = float(match.group(1)) * _UNIT_SECONDS[(match.group(2) or "s").lower()]
    return seconds if seconds > 0 else None


def int_header(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None
