"""`citeaudit registries`: which registries an audit asks, and why any is not asked."""

from rich.console import Console

from tasks.registries import registry_status
from tasks.registries.limits import HostLimits
from tasks.registries.settings import REGISTRY_NAMES, RegistrySettings


def registry_lines(settings: RegistrySettings) -> list[str]:
    """One line per registry: asked or not (and why), then its base URL, pace and credentials.
    Keys are named, never shown."""
    limits: dict[str, HostLimits] = {
        "crossref": settings.crossref_limits(),
        "pubmed": settings.pubmed_limits(),
        "dblp": settings.dblp_limits(),
        "arxiv": settings.arxiv_limits(),
        "semantic_scholar": settings.s2_limits(),
        "openalex": settings.openalex_limits(),
        "europepmc": settings.europepmc_limits(),
    }
    urls = {
        "crossref": settings.crossref_url,
        "pubmed": settings.pubmed_url,
        "dblp": settings.dblp_url,
        "arxiv": settings.arxiv_url,
        "semantic_scholar": settings.s2_url,
        "openalex": settings.openalex_url,
        "europepmc": settings.europepmc_url,
    }
    credentials = {
        "crossref": _given("CITEAUDIT_MAILTO", settings.mailto is not None, "polite pool"),
        "pubmed": _given("NCBI_API_KEY", settings.ncbi_api_key is not None, "10 req/s"),
        "semantic_scholar": _given(
            "S2_API_KEY", settings.s2_api_key is not None, "1 req/s; without: shared pool"
        ),
        "openalex": _given("OPENALEX_API_KEY", settings.openalex_api_key is not None, "required"),
    }
    lines = []
    for name, why in registry_status(settings).items():
        limit = limits[name]
        details = [urls[name], f"{limit.max_rate:.2g} req/s, {limit.max_in_flight} at a time"]
        if name in credentials:
            details.append(credentials[name])
        state = f"not asked: {why}" if why else "asked"
        lines.append(f"{name:<17}{state}  ({'; '.join(details)})")
    return lines


def _given(variable: str, present: bool, effect: str) -> str:
    return f"{variable} set ({effect})" if present else f"{variable} not set"


def show_registries(out: Console) -> None:
    for line in registry_lines(RegistrySettings()):
        out.print(line, highlight=False, soft_wrap=True)
    out.print(
        f"Choose with CITEAUDIT_REGISTRIES={','.join(REGISTRY_NAMES)} (any subset).",
        highlight=False,
    )
