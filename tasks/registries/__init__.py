"""The network layer: one HTTP stack (rate limit, retry, cache) and a client per registry.

Build one `Registries` per process and share it across threads:

    with Registries.from_settings(RegistrySettings()) as registries:
        lookups = registries.crossref.fetch_dois(["10.1371/journal.pone.0033693"])
        records = registries.pubmed.fetch_pmids(["11618220"])
"""

from types import TracebackType

import httpx

from tasks.registries.crossref import CrossrefClient
from tasks.registries.http import (
    Credentials,
    HttpStats,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    ResponseCache,
    RetryPolicy,
)
from tasks.registries.limits import HostLimits
from tasks.registries.pubmed import PubMedClient
from tasks.registries.settings import RegistrySettings

__all__ = [
    "CrossrefClient",
    "PubMedClient",
    "Registries",
    "RegistryRequestError",
    "RegistrySettings",
    "RegistryUnavailable",
]

USER_AGENT = "citeaudit/0.1 (https://github.com/citeaudit{contact})"


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


class Registries:
    """Crossref and PubMed clients over shared HTTP stacks; thread-safe, close when done."""

    def __init__(
        self, crossref: CrossrefClient, pubmed: PubMedClient, stacks: dict[str, RegistryHttp]
    ) -> None:
        self.crossref = crossref
        self.pubmed = pubmed
        self.http = stacks  # per host: "crossref", "doi", "pubmed" (limiter, stats)

    @classmethod
    def from_settings(
        cls, settings: RegistrySettings, transport: httpx.BaseTransport | None = None
    ) -> "Registries":
        """`transport` replaces the network below limiter and cache (tests, proxies)."""
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
                limits,
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
        return cls(
            CrossrefClient(
                crossref_http,
                doi_http,
                batch_size=settings.crossref_batch_size,
                max_url_chars=settings.max_url_chars,
            ),
            PubMedClient(pubmed_http, batch_size=settings.pubmed_batch_size),
            {"crossref": crossref_http, "doi": doi_http, "pubmed": pubmed_http},
        )

    def stats(self) -> dict[str, HttpStats]:
        """Live requests, 429s and cache hits per registry host (crossref, doi, pubmed)."""
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
