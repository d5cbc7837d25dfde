"""Faults injected on demand: which request gets which failure, decided by a seeded RNG."""

import random
import threading
from dataclasses import dataclass, field
from enum import StrEnum


class Fault(StrEnum):
    SERVER_ERROR = "server_error"  # 500 with the real Crossref exception body
    UNAVAILABLE = "unavailable"  # 503 with Retry-After: 1
    DROP = "drop"  # close the connection without answering
    SLOW = "slow"  # wait `slow_seconds`, then answer normally
    TRUNCATED = "truncated"  # promise the full Content-Length, send half, close
    WRONG_CONTENT_TYPE = "wrong_content_type"  # 200 text/html maintenance page
    HUGE = "huge"  # 200 with a `huge_bytes` body of the right type, no Content-Length
    BILLION_LAUGHS = "billion_laughs"  # efetch/esearch only: nested entity expansion
    EXTERNAL_ENTITY = "external_entity"  # efetch/esearch only: SYSTEM entities (file, canary URL)
    NOT_FOUND = "not_found"  # a gateway's 404 HTML page (a wrong base path, a proxy)
    EMPTY = "empty"  # list endpoints only: a well-formed answer holding no records
    PARTIAL = "partial"  # batch endpoints only: records at odd positions of the request left out
    TRICKLE = "trickle"  # headers, then the body one byte every `slow_seconds`
    # 301 to the same path and query at another host name (localhost), or a 307 (method and
    # body kept) to the same path at `redirect_to`, another server
    REDIRECT = "redirect"
    CHATTY = "chatty"  # chat completions only: a well-formed answer that is not just a verdict


HOSTILE_XML = {Fault.BILLION_LAUGHS, Fault.EXTERNAL_ENTITY}
# Which endpoint kinds a fault can apply to (any, when absent).
ENDPOINTS = {
    Fault.EMPTY: {"works_filter", "works_query", "works_list", "efetch", "esearch"},
    Fault.PARTIAL: {"works_filter", "efetch"},
    Fault.CHATTY: {"chat_completions"},
}
# The host name a redirect points at; requests arriving there are never redirected again.
REDIRECT_HOST = "localhost"
SERVICES = ("crossref", "doi", "eutils", "dblp", "arxiv", "s2", "openalex", "europepmc", "llm")


@dataclass
class FaultRule:
    """Fire `fault` on matching requests: each with probability `rate`, or on the next `count`."""

    fault: Fault
    rate: float = 0.0
    count: int | None = None
    service: str | None = None
    endpoint: str | None = None
    path_contains: str | None = None
    slow_seconds: float = 5.0
    huge_bytes: int = 20_000_000
    redirect_to: str | None = None  # REDIRECT's target server (http://host:port)
    fired: int = 0

    def matches(self, service: str, endpoint: str, path: str, host: str = "") -> bool:
        if self.fault in HOSTILE_XML and service != "eutils":
            return False
        if endpoint not in ENDPOINTS.get(self.fault, {endpoint}):
            return False
        if self.fault is Fault.REDIRECT and host.split(":")[0] == REDIRECT_HOST:
            return False
        return (
            (self.service is None or self.service == service)
            and (self.endpoint is None or self.endpoint == endpoint)
            and (self.path_contains is None or self.path_contains in path)
            and (self.count is None or self.count > 0)
        )


@dataclass
class FaultPlan:
    seed: int = 0
    rules: list[FaultRule] = field(default_factory=list)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def add(self, rule: FaultRule) -> FaultRule:
        if rule.service is not None and rule.service not in SERVICES:
            raise ValueError(f"unknown service {rule.service!r}; use one of {SERVICES}")
        if rule.fault in HOSTILE_XML and rule.service not in (None, "eutils"):
            raise ValueError(f"{rule.fault} is an XML attack: E-utilities only")
        if rule.count is None and not 0.0 < rule.rate <= 1.0:
            raise ValueError("give count=N, or a rate in (0, 1]")
        with self._lock:
            self.rules.append(rule)
        return rule

    def pick(self, service: str, endpoint: str, path: str, host: str = "") -> FaultRule | None:
        """The first matching rule that fires for this request, if any."""
        with self._lock:
            for rule in self.rules:
                if not rule.matches(service, endpoint, path, host):
                    continue
                if rule.count is not None:
                    rule.count -= 1
                elif self._rng.random() >= rule.rate:
                    continue
                rule.fired += 1
                return rule
            return None

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self._rng = random.Random(self.seed)
