"""The circuit breaker of one registry host: stop asking a host that does not answer."""

import threading
import time


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
