"""`citeaudit registries`: which registries an audit asks, and why any is not asked. The settings
(pydantic) load only when the command runs."""

from typing import TYPE_CHECKING

from flows.cli.app import out
from flows.cli.checks import registry_settings

if TYPE_CHECKING:
    from tasks.registries.limits import HostLimits
    from tasks.registries.settings import RegistrySettings


def registries() -> None:
    """List the registries an audit asks, their pace and credentials, and why any is not."""
    from rich.table import Table
    from rich.text import Text

    from tasks.registries.settings import REGISTRY_NAMES

    # a borderless grid: a long line wraps at its spaces within its own column
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name, text in registry_rows(registry_settings()):
        table.add_row(name, Text(text))  # Text: a URL's brackets are not markup
    out.print(table)
    out.print(
        "Choose with CITEAUDIT_REGISTRIES, a comma-separated subset of "
        f"{', '.join(REGISTRY_NAMES)}.",
        highlight=False,
    )


def registry_rows(settings: "RegistrySettings") -> list[tuple[str, str]]:
    """Per registry, its name and what to say of it: asked or not (and why), then its base URL,
    then its pace and credentials, each on a line of its own (an 80-column terminal fits a URL
    whole there, not beside the rest). Keys are named, never shown."""
    from tasks.registries.settings import registry_status

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
    rows = []
    for name, why in registry_status(settings).items():
        limit = limits[name]
        pace = [f"{limit.max_rate:.2g} req/s, {limit.max_in_flight} at a time"]
        if name in credentials:
            pace.append(credentials[name])
        state = f"not asked: {why}" if why else "asked"
        rows.append((name, "\n".join((state, urls[name], "; ".join(pace)))))
    return rows


def _given(variable: str, present: bool, effect: str) -> str:
    return f"{variable} set ({effect})" if present else f"{variable} not set"
