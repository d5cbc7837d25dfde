"""Registry settings, read from the environment (`CITEAUDIT_*`, `NCBI_API_KEY`, `S2_API_KEY`,
`OPENALEX_API_KEY`), and the optional claim-support judge's endpoint (`CITEAUDIT_LLM_*`).

`read_settings` is the one place they are read: each entry point (a CLI command, the agent
service, a flow's process) reads them once and passes them down; a bad value is a SettingsError
(a usage error) naming its variable."""

import time
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from tasks.errors import UsageError
from tasks.registries.limits import HostLimits

# Every registry citeaudit can ask, by the name CITEAUDIT_REGISTRIES and the rows use.
REGISTRY_NAMES = (
    "crossref",
    "pubmed",
    "dblp",
    "arxiv",
    "semantic_scholar",
    "openalex",
    "europepmc",
)
_ALIASES = {"s2": "semantic_scholar", "semanticscholar": "semantic_scholar", "epmc": "europepmc"}


def _default_cache_dir() -> Path:
    return platformdirs.user_cache_path("citeaudit") / "http"


class RegistrySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITEAUDIT_", extra="ignore")

    crossref_url: str = "https://api.crossref.org"
    pubmed_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    doi_url: str = "https://doi.org"
    dblp_url: str = "https://dblp.org"
    arxiv_url: str = "https://export.arxiv.org"
    s2_url: str = "https://api.semanticscholar.org/graph/v1"
    openalex_url: str = "https://api.openalex.org"
    europepmc_url: str = "https://www.ebi.ac.uk/europepmc/webservices/rest"
    # Which registries to ask (comma-separated names, see REGISTRY_NAMES); None: all of them.
    registries: str | None = None
    # Both identify us to the registries; kept secret so they never reach logs or error strings.
    mailto: SecretStr | None = None
    ncbi_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("NCBI_API_KEY", "CITEAUDIT_NCBI_API_KEY")
    )
    s2_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("S2_API_KEY", "CITEAUDIT_S2_API_KEY")
    )
    openalex_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("OPENALEX_API_KEY", "CITEAUDIT_OPENALEX_API_KEY")
    )

    # `citeaudit zotero audit`: Zotero's web API (or, with --local, Zotero 7's local API) and the
    # key of the library, kept secret like the registries' keys.
    zotero_url: str | None = None
    zotero_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ZOTERO_API_KEY", "CITEAUDIT_ZOTERO_API_KEY")
    )

    # The optional entailment judge: any OpenAI-compatible chat-completions endpoint (None: off).
    llm_url: str | None = None
    llm_key: SecretStr | None = None  # sent as a Bearer token, kept secret like the keys above
    llm_model: str | None = Field(None, validate_default=True)
    llm_max_rate: float = Field(2.0, gt=0.0)
    llm_max_in_flight: int = Field(2, ge=1)

    cache_enabled: bool = True
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    cache_ttl_s: float = 86_400.0

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0  # per socket read; a trickling answer meets the deadlines below
    # One request, its retries included; and all of one job's lookups (then: unverified).
    request_deadline_s: float = Field(90.0, gt=0.0)
    job_deadline_s: float = Field(4 * 3600.0, gt=0.0)
    max_attempts: int = Field(5, ge=1)
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 120.0
    max_body_bytes: int = 64 * 1024 * 1024

    # Overrides of the documented registry limits (None: the defaults below).
    crossref_max_rate: float | None = None
    crossref_max_in_flight: int | None = None
    pubmed_max_rate: float | None = None
    doi_max_rate: float | None = None
    dblp_max_rate: float | None = None
    arxiv_max_rate: float | None = None
    s2_max_rate: float | None = None
    openalex_max_rate: float | None = None
    europepmc_max_rate: float | None = None
    rate_safety: float = Field(0.9, gt=0.0, le=1.0)

    crossref_batch_size: int = Field(50, ge=1, le=100)
    max_url_chars: int = 4_000
    pubmed_batch_size: int = Field(200, ge=1, le=10_000)
    arxiv_batch_size: int = Field(100, ge=1, le=2_000)
    s2_batch_size: int = Field(500, ge=1, le=500)
    openalex_batch_size: int = Field(50, ge=1, le=100)
    europepmc_batch_size: int = Field(100, ge=1, le=1_000)

    @field_validator(
        "mailto",
        "ncbi_api_key",
        "s2_api_key",
        "openalex_api_key",
        "registries",
        "llm_url",
        "llm_key",
        "llm_model",
        mode="before",
    )
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def job_ends_at(self) -> float:
        """When a job starting now must end its lookups (epoch seconds)."""
        return time.time() + self.job_deadline_s

    def mailto_value(self) -> str | None:
        return self.mailto.get_secret_value() if self.mailto else None

    def api_key_value(self) -> str | None:
        return self.ncbi_api_key.get_secret_value() if self.ncbi_api_key else None

    def s2_key_value(self) -> str | None:
        return self.s2_api_key.get_secret_value() if self.s2_api_key else None

    def openalex_key_value(self) -> str | None:
        return self.openalex_api_key.get_secret_value() if self.openalex_api_key else None

    def llm_key_value(self) -> str | None:
        return self.llm_key.get_secret_value() if self.llm_key else None

    @field_validator("llm_model")
    @classmethod
    def _judge_needs_a_model(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An endpoint without a model would fail every request: say so once, up front."""
        if info.data.get("llm_url") and not value:
            raise ValueError("CITEAUDIT_LLM_URL is set but CITEAUDIT_LLM_MODEL is not")
        return value

    @field_validator("registries")
    @classmethod
    def _known_registries(cls, value: str | None) -> str | None:
        """A mistyped name must not silently switch a registry off."""
        if value is None:
            return None
        names = [_ALIASES.get(n.strip().lower(), n.strip().lower()) for n in value.split(",")]
        unknown = sorted({n for n in names if n and n not in REGISTRY_NAMES})
        if unknown:
            known = ", ".join(REGISTRY_NAMES)
            raise ValueError(f"unknown registry {', '.join(unknown)} (known: {known}; s2)")
        return ",".join(n for n in names if n)

    def selected(self) -> list[str] | None:
        """The registries CITEAUDIT_REGISTRIES names, or None: all."""
        return None if self.registries is None else self.registries.split(",")

    def _limits(self, max_rate: float, max_in_flight: int) -> HostLimits:
        return HostLimits(
            max_rate=max_rate,
            max_in_flight=max_in_flight,
            safety=self.rate_safety,
            retry_after_cap_s=self.retry_after_cap_s,
        )

    def crossref_limits(self) -> HostLimits:
        """Crossref's public pool: 5 req/s, 1 in flight; polite pool (with mailto): 10 and 5."""
        polite = self.mailto is not None
        return self._limits(
            self.crossref_max_rate or (10.0 if polite else 5.0),
            self.crossref_max_in_flight or (5 if polite else 1),
        )

    def pubmed_limits(self) -> HostLimits:
        """NCBI E-utilities: 3 req/s without an API key, 10 with one."""
        return self._limits(self.pubmed_max_rate or (10.0 if self.ncbi_api_key else 3.0), 3)

    def doi_limits(self) -> HostLimits:
        """doi.org content negotiation publishes no limit; stay modest."""
        return self._limits(self.doi_max_rate or 5.0, 2)

    def dblp_limits(self) -> HostLimits:
        """DBLP asks for politeness: about one request a second, one at a time."""
        return self._limits(self.dblp_max_rate or 1.0, 1)

    def arxiv_limits(self) -> HostLimits:
        """arXiv's API terms: one request every three seconds, a single connection."""
        return self._limits(self.arxiv_max_rate or 1 / 3, 1)

    def s2_limits(self) -> HostLimits:
        """Semantic Scholar: 1 req/s with a key; without one the shared pool 429s often, so we
        ask at a third of that."""
        return self._limits(self.s2_max_rate or (1.0 if self.s2_api_key else 1 / 3), 1)

    def openalex_limits(self) -> HostLimits:
        return self._limits(self.openalex_max_rate or 10.0, 5)

    def europepmc_limits(self) -> HostLimits:
        return self._limits(self.europepmc_max_rate or 10.0, 5)

    def llm_limits(self) -> HostLimits:
        """The judge's endpoint publishes no limit we can know (a local vLLM or Ollama, or a
        hosted API with per-account limits): modest by default, CITEAUDIT_LLM_MAX_RATE to change."""
        return self._limits(self.llm_max_rate, self.llm_max_in_flight)


def registry_status(settings: RegistrySettings) -> dict[str, str | None]:
    """Each registry -> None when it will be asked, else why not (the one place that says)."""
    selected = settings.selected()
    status: dict[str, str | None] = {}
    for name in REGISTRY_NAMES:
        if selected is not None and name not in selected:
            status[name] = "not in CITEAUDIT_REGISTRIES"
        elif name == "openalex" and not settings.openalex_api_key:
            status[name] = "no OPENALEX_API_KEY (OpenAlex requires a key)"
        else:
            status[name] = None
    return status


class SettingsError(UsageError):
    """A setting in the environment is wrong: the message names each variable and why."""


def read_settings(**overrides: Any) -> RegistrySettings:
    """The registry settings in the environment now (secrets included: they are read where they
    are used, never passed as parameters), with `overrides`."""
    try:
        return RegistrySettings(**overrides)
    except ValidationError as exc:
        # pydantic's "Value error, " prefix stays out; the message never quotes the value
        raise SettingsError(
            "; ".join(
                f"CITEAUDIT_{str(e['loc'][0]).upper()}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            )
        ) from None
