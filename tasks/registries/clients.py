"""The registry clients over one HTTP stack per registry: `Registries` (a client set, built
from settings) and `RegistryPool` (the shared state whoever builds clients passes down).

The HTTP stack's shared state is passed in, not kept in modules: whoever builds clients (a flow's
process, the agent service, a bench, a test) makes one `RegistryPool` and passes it down; every
client built through it shares one limiter per registry. Share one `Registries` across threads:

    pool = RegistryPool()
    with Registries.from_settings(read_settings(), pool) as registries:
        lookups = registries.crossref.fetch_dois(["10.1371/journal.pone.0033693"])
        records = registries.pubmed.fetch_pmids(["11618220"])
        registries.status()   # which registries are asked, and why the others are not
"""

import threading
from collections.abc import Hashable
from dataclasses import replace
from types import TracebackType

import httpx
from pydantic import SecretStr

from tasks.registries.arxiv import ArxivClient
from tasks.registries.cache import ResponseCache
from tasks.registries.crossref import CrossrefClient
from tasks.registries.dblp import DblpClient
from tasks.registries.europepmc import EuropePmcClient
from tasks.registries.http import RegistryHttp, RetryPolicy
from tasks.registries.judge import JudgeClient
from tasks.registries.limits import HostLimiter, HostLimits
from tasks.registries.openalex import OpenAlexClient
from tasks.registries.pubmed import PubMedClient
from tasks.registries.semantic_scholar import SemanticScholarClient
from tasks.registries.settings import REGISTRY_NAMES, RegistrySettings, registry_status
from tasks.registries.transports import Credentials, HttpStats
from tasks.version import citeaudit_version

# The version the registries see is the installed one, read where --version reads it.
USER_AGENT = f"citeaudit/{citeaudit_version()} (https://github.com/citeaudit{{contact}})"


def _crossref_credentials(mailto: str | None) -> Credentials:
    """Crossref's polite pool: mailto as a parameter and in the User-Agent."""
    if not mailto:
        return Credentials(headers={"User-Agent": USER_AGENT.format(contact="")})
    return Credentials(
        params={"mailto": mailto},
        headers={"User-Agent": USER_AGENT.format(contact=f"; mailto:{mailto}")},
        secrets=(mailto,),
    )


def _doi_credentials(mailto: str | None) -> Credentials:
    contact = f"; mailto:{mailto}" if mailto else ""
    secrets = (mailto,) if mailto else ()
    return Credentials(headers={"User-Agent": USER_AGENT.format(contact=contact)}, secrets=secrets)


def _ncbi_credentials(mailto: str | None, api_key: str | None) -> Credentials:
    params = {"tool": "citeaudit"}
    if mailto:
        params["email"] = mailto
    if api_key:
        params["api_key"] = api_key
    secrets = tuple(s for s in (mailto, api_key) if s)
    return Credentials(
        params=params, headers={"User-Agent": USER_AGENT.format(contact="")}, secrets=secrets
    )


def _key_credentials(
    params: dict[str, str] | None = None, headers: dict[str, str] | None = None
) -> Credentials:
    """An API key sent as a parameter or header, and kept secret like the mailto."""
    secrets = tuple((params or {}).values()) + tuple((headers or {}).values())
    return Credentials(
        params=params or {},
        headers={"User-Agent": USER_AGENT.format(contact=""), **(headers or {})},
        secrets=secrets,
    )


def _bearer_credentials(key: str | None) -> Credentials:
    """An OpenAI-style key: `Authorization: Bearer KEY`, the key itself kept secret. Only the
    configured endpoint's answers count: a redirect elsewhere is a failed request."""
    if not key:
        return replace(_key_credentials(), origin_only=True)
    headers = {"Authorization": f"Bearer {key}"}
    return replace(_key_credentials(headers=headers), secrets=(key,), origin_only=True)


class Registries:
    """A client per registry over shared HTTP stacks; thread-safe, close when done."""

    def __init__(
        self,
        crossref: CrossrefClient,
        pubmed: PubMedClient,
        stacks: dict[str, RegistryHttp],
        *,
        dblp: DblpClient | None = None,
        arxiv: ArxivClient | None = None,
        semantic_scholar: SemanticScholarClient | None = None,
        openalex: OpenAlexClient | None = None,
        europepmc: EuropePmcClient | None = None,
        judge: JudgeClient | None = None,
        off: dict[str, str] | None = None,
    ) -> None:
        self.crossref = crossref
        self.pubmed = pubmed
        self.dblp = dblp
        self.arxiv = arxiv
        self.semantic_scholar = semantic_scholar
        self.openalex = openalex
        self.europepmc = europepmc
        self.judge = judge  # claim support's optional entailment judge (None: not configured)
        self.http = stacks  # per host: "crossref", "doi", "pubmed", "dblp", ... (limiter, stats)
        built = {name for name in REGISTRY_NAMES if getattr(self, name) is not None}
        # Registries not asked, and why (None: asked).
        self._off = {name: "not configured" for name in REGISTRY_NAMES if name not in built}
        self._off.update(off or {})

    def asks(self, name: str) -> bool:
        """Whether `name` is asked at all (selected, configured, and keyed where needed)."""
        return name not in self._off

    def status(self) -> dict[str, str | None]:
        """Each registry -> None when asked, else why not."""
        return {name: self._off.get(name) for name in REGISTRY_NAMES}

    @classmethod
    def from_settings(
        cls,
        settings: RegistrySettings,
        pool: "RegistryPool",
        transport: httpx.BaseTransport | None = None,
    ) -> "Registries":
        """A client set over `pool`'s limiters; the caller closes it. `transport` replaces the
        network below limiter and cache (tests, proxies)."""
        retry = RetryPolicy(
            max_attempts=settings.max_attempts,
            backoff_base_s=settings.backoff_base_s,
            backoff_cap_s=settings.backoff_cap_s,
            retry_after_cap_s=settings.retry_after_cap_s,
        )
        timeout = httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s)
        cache = (
            ResponseCache(settings.cache_dir, settings.cache_ttl_s)
            if settings.cache_enabled
            else None
        )
        mailto, api_key = settings.mailto_value(), settings.api_key_value()

        def stack(url: str, limits: HostLimits, credentials: Credentials) -> RegistryHttp:
            return RegistryHttp(
                url,
                pool.limiter(url, limits),
                retry=retry,
                timeout=timeout,
                cache=cache,
                transport=transport,
                credentials=credentials,
                max_body_bytes=settings.max_body_bytes,
                request_deadline_s=settings.request_deadline_s,
            )

        crossref_http = stack(
            settings.crossref_url, settings.crossref_limits(), _crossref_credentials(mailto)
        )
        doi_http = stack(settings.doi_url, settings.doi_limits(), _doi_credentials(mailto))
        pubmed_http = stack(
            settings.pubmed_url, settings.pubmed_limits(), _ncbi_credentials(mailto, api_key)
        )
        s2_key, openalex_key = settings.s2_key_value(), settings.openalex_key_value()
        stacks = {
            "crossref": crossref_http,
            "doi": doi_http,
            "pubmed": pubmed_http,
            "dblp": stack(settings.dblp_url, settings.dblp_limits(), _key_credentials()),
            "arxiv": stack(settings.arxiv_url, settings.arxiv_limits(), _key_credentials()),
            "semantic_scholar": stack(
                settings.s2_url,
                settings.s2_limits(),
                _key_credentials(headers={"x-api-key": s2_key} if s2_key else None),
            ),
            "openalex": stack(
                settings.openalex_url,
                settings.openalex_limits(),
                _key_credentials(params={"api_key": openalex_key} if openalex_key else None),
            ),
            "europepmc": stack(
                settings.europepmc_url, settings.europepmc_limits(), _key_credentials()
            ),
        }
        judge = None
        if settings.llm_url and settings.llm_model:
            stacks["llm"] = stack(
                settings.llm_url,
                settings.llm_limits(),
                _bearer_credentials(settings.llm_key_value()),
            )
            judge = JudgeClient(stacks["llm"], settings.llm_model, settings.llm_max_in_flight)
        off = {name: why for name, why in registry_status(settings).items() if why}
        return cls(
            CrossrefClient(
                crossref_http,
                doi_http,
                batch_size=settings.crossref_batch_size,
                max_url_chars=settings.max_url_chars,
            ),
            PubMedClient(pubmed_http, batch_size=settings.pubmed_batch_size),
            stacks,
            dblp=DblpClient(stacks["dblp"]),
            arxiv=ArxivClient(stacks["arxiv"], batch_size=settings.arxiv_batch_size),
            semantic_scholar=SemanticScholarClient(
                stacks["semantic_scholar"], batch_size=settings.s2_batch_size
            ),
            openalex=OpenAlexClient(stacks["openalex"], batch_size=settings.openalex_batch_size),
            europepmc=EuropePmcClient(
                stacks["europepmc"], batch_size=settings.europepmc_batch_size
            ),
            judge=judge,
            off=off,
        )

    def stats(self) -> dict[str, HttpStats]:
        """Live requests, 429s and cache hits per registry host (crossref, doi, pubmed, ...)."""
        return {name: stack.stats for name, stack in self.http.items()}

    def close(self) -> None:
        for stack in self.http.values():
            stack.close()

    def __enter__(self) -> "Registries":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class RegistryPool:
    """The HTTP stack's shared state for one process or job, made by whoever builds clients and
    passed down: one limiter per registry, shared by every client built through the pool (so
    threads and rebuilt clients cannot multiply the pace), and the client sets `registries`
    builds, closed together. Two pools know nothing of each other. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # building a client set takes limiters under it
        self._limiters: dict[tuple[str, HostLimits], HostLimiter] = {}
        self._client_sets: dict[tuple[Hashable, ...], Registries] = {}

    def limiter(self, base_url: str, limits: HostLimits) -> HostLimiter:
        """The pool's limiter for a registry: its base URL, and its identity (limits differ
        with and without mailto or a key, and so do the registry's pools)."""
        key = (base_url.rstrip("/"), limits)
        with self._lock:
            if key not in self._limiters:
                self._limiters[key] = HostLimiter(limits)
            return self._limiters[key]

    def registries(self, settings: RegistrySettings) -> Registries:
        """The pool's client set for `settings`, built on first use and kept until `close`:
        callers that read settings afresh each time (the environment may change) share it."""
        # Secrets count too (a new key is a new identity); the key stays in memory only.
        key = tuple(
            value.get_secret_value() if isinstance(value, SecretStr) else value
            for value in settings.model_dump().values()
        )
        with self._lock:
            if key not in self._client_sets:
                self._client_sets[key] = Registries.from_settings(settings, self)
            return self._client_sets[key]

    def close(self) -> None:
        with self._lock:
            client_sets, self._client_sets = list(self._client_sets.values()), {}
        for registries in client_sets:
            registries.close()
