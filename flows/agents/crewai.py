"""The agent service as a CrewAI tool (the `crewai` extra): `CitationManager`.

It takes the IVCAP citation tracker's arguments (operation = add / validate / format / export /
list, doi, pmid, url, citation_ids, format_type, page_number, export_format), plus arxiv,
reference, claim and style, and answers with the service's plain text. One tool instance serves
one research job (the crew run), named when the crew is built; it holds one service, and so one
registry pool, for its life: the agents given the tool share one limiter per registry (pass one
`pool` to the tools of crews running in one process and they share it too). Bad arguments are
a one-line `Error: ...` answer the agent can act on, never an exception out of the tool.
"""

from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from flows.agents.arguments import one_line_error
from flows.agents.service import SOURCE_KINDS, AgentError, AgentService, Answer
from tasks.errors import MissingExtra
from tasks.registries.clients import RegistryPool

try:
    from crewai.tools import BaseTool
except ModuleNotFoundError as exc:
    raise MissingExtra("crewai", "the CrewAI tool") from exc

OPERATIONS = ("add", "validate", "format", "export", "list")

DESCRIPTION = """Citation manager: check every source against the registries before you cite it.
Use it for EVERY citation; never write a reference yourself. Cite only ACCEPTED citations, in text
exactly as the tool says; a REJECTED source (not_found, mismatch, unmatched) must not be cited.

Operations:
- add: {"operation": "add", "doi": "10.1038/srep16696", "claim": "...", "page_number": "45"}
  (or "pmid", "arxiv", "url", or "reference" with a free-text reference): checks it now and
  answers ACCEPTED [n] with the formatted reference and "Use in text as: (Smith, 2023) [n]", or
  REJECTED with the reason
- format: {"operation": "format", "citation_ids": ["1"], "format_type": "intext",
  "page_number": "42"} -> (Smith, 2023, p. 42) [1]; {"operation": "format",
  "format_type": "bibliography", "style": "apa"} -> the reference list (styles: apa, mla,
  chicago-author-date, chicago-notes, ieee, vancouver, harvard)
- validate: {"operation": "validate"} re-checks all citations
- list: {"operation": "list"}
- export: {"operation": "export", "export_format": "bibtex"} (or "ris", "csljson")"""


class CitationInput(BaseModel):
    """The tracker's arguments. Choices are plain strings checked by the service, so a wrong one
    gets a one-line answer naming the choices instead of a schema error."""

    operation: str = Field(description="add, validate, format, export or list")
    doi: str | None = Field(None, description="add: a DOI")
    pmid: str | int | None = Field(None, description="add: a PubMed id")
    arxiv: str | None = Field(None, description="add: an arXiv id")
    url: str | None = Field(None, description="add: an http(s) URL")
    reference: str | None = Field(None, description="add: a free-text reference")
    claim: str | None = Field(None, description="add: the claim the source supports")
    citation_ids: list[str | int] | str | None = Field(
        None, description="format: citation ids or numbers, e.g. ['1', '3']"
    )
    format_type: str = Field("intext", description="format: 'intext' or 'bibliography'")
    page_number: str | int | None = Field(None, description="add or format: the page(s) cited")
    style: str | None = Field(None, description="format: CSL style (default apa)")
    export_format: str = Field("bibtex", description="export: 'bibtex', 'ris' or 'csljson'")


class CitationManager(BaseTool):
    name: str = "CitationManager"
    description: str = DESCRIPTION
    args_schema: type[BaseModel] = CitationInput
    job: str = Field(description="the research job (crew run) this tool adds citations to")
    db: str | None = Field(None, description="the DuckDB library (default $CITEAUDIT_DB)")
    out_dir: str | None = Field(None, description="also rewrite the job's folder here")
    offline: bool = False
    pool: RegistryPool | None = Field(
        None, exclude=True, description="registry clients to share (default: the tool's own)"
    )
    _service: AgentService = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        self._service = AgentService(self.db, self.out_dir, self.offline, self.pool)

    def _run(self, **arguments: Any) -> str:
        try:
            return self.answer(CitationInput.model_validate(arguments)).text
        except Exception as exc:  # the agent reads what went wrong; the crew goes on
            return f"Error: {one_line_error(exc)}"

    def answer(self, arguments: CitationInput) -> Answer:
        """The operation's answer, text and JSON (for programs driving the tool directly)."""
        service = self._service
        operation = arguments.operation.strip().lower()
        if operation == "add":
            sources = {kind: getattr(arguments, kind) for kind in SOURCE_KINDS}
            return service.add(
                self.job, **sources, claim=arguments.claim, page=arguments.page_number
            )
        if operation == "validate":
            return service.validate(self.job)
        if operation == "format":
            ids = arguments.citation_ids
            return service.format(
                self.job,
                style=arguments.style,
                ids=ids.split(",") if isinstance(ids, str) else ids,
                kind=arguments.format_type,
                page=arguments.page_number,
            )
        if operation == "export":
            return service.export(self.job, format=arguments.export_format)
        if operation == "list":
            return service.list_citations(self.job)
        raise AgentError(f"unknown operation {arguments.operation!r} (use {', '.join(OPERATIONS)})")
