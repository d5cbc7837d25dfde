"""The agent service as an MCP server (the `mcp` extra): `citeaudit mcp`.

Five tools, named and shaped as a contract: add_citation, validate_citations, format_citations,
export_citations, list_citations. Each answers with the service's plain text (for the model)
and its JSON as structured content (for programs: `status` per citation). Bad arguments come back
as a one-line tool error, never a traceback. Calls run on worker threads, so several agents of a
crew add at once (the service keeps one writer per library, and one registry pool for the
server's life: its agents share one limiter per registry).
"""

import hmac
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import anyio
from pydantic import Field
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from flows.agents.arguments import one_line_error
from flows.agents.service import AgentService, Answer
from tasks.errors import MissingExtra
from tasks.render.citeproc import STYLES
from tasks.store.names import LibraryPath
from tasks.version import citeaudit_version

try:
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.types import CallToolResult, ContentBlock, TextContent
except ModuleNotFoundError as exc:
    raise MissingExtra("mcp", "citeaudit mcp") from exc

JOB = Field(description="the research job (crew run) the citations belong to, e.g. 'crew-run-17'")
INSTRUCTIONS = (
    "Cite only through these tools: add every source with add_citation before you use it, and "
    "cite only accepted citations, in text as add_citation says. Rejected sources "
    "(not_found, mismatch, unmatched) must not appear in the report."
)


class BearerToken:
    """Only requests carrying `Authorization: Bearer TOKEN` reach the app; any other gets 401.
    Compared in constant time, so the answer's timing tells nothing of the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                refused = PlainTextResponse(
                    "a bearer token is required (CITEAUDIT_MCP_TOKEN)",
                    401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)


class CitationServer(FastMCP):
    """FastMCP that tells its clients citeaudit's version, whose tool errors are one line (the
    argument and what is wrong with it), and whose HTTP app asks for `token` when given."""

    def __init__(self, *args: Any, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._token = token
        # FastMCP takes no version (mcp 1.x), so the low-level server it wraps, which answers
        # `initialize`, would report the mcp library's own as serverInfo.version.
        self._mcp_server.version = citeaudit_version()

    def streamable_http_app(self) -> Starlette:
        app = super().streamable_http_app()
        if self._token is not None:
            app.add_middleware(BearerToken, token=self._token)
        return app

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__  # FastMCP's own errors (an unknown tool) have none
            message = one_line_error(cause) if cause else " ".join(str(exc).split())
            raise ToolError(message) from None


def tool_result(answer: Answer) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=answer.text)], structuredContent=answer.data
    )


async def _run(call: Callable[[], Answer]) -> CallToolResult:
    # The service blocks (registries, DuckDB, pandoc): off the event loop, so calls overlap.
    return tool_result(await anyio.to_thread.run_sync(call))


def build_server(service: AgentService, **settings: Any) -> CitationServer:
    server = CitationServer("citeaudit", instructions=INSTRUCTIONS, **settings)

    @server.tool()
    async def add_citation(
        job: Annotated[str, JOB],
        doi: Annotated[str | None, Field(description="a DOI, e.g. 10.1038/srep16696")] = None,
        pmid: Annotated[str | int | None, Field(description="a PubMed id")] = None,
        arxiv: Annotated[str | None, Field(description="an arXiv id, e.g. 2101.00001")] = None,
        url: Annotated[str | None, Field(description="an http(s) URL of the source")] = None,
        reference: Annotated[
            str | None, Field(description="a free-text reference, as a reference list has it")
        ] = None,
        claim: Annotated[str | None, Field(description="the claim this source supports")] = None,
        page: Annotated[
            str | int | None, Field(description="page(s) cited, e.g. 45 or 45-47")
        ] = None,
    ) -> CallToolResult:
        """Check a source against the scholarly registries now and add it to the job. Give
        exactly one of doi, pmid, arxiv, url or reference. Answers ACCEPTED with its number [n],
        the formatted reference and how to cite it in text, or REJECTED with the reason (and the
        work the identifier really names): never cite a rejected source."""
        return await _run(
            lambda: service.add(
                job,
                doi=doi,
                pmid=pmid,
                arxiv=arxiv,
                url=url,
                reference=reference,
                claim=claim,
                page=page,
            )
        )

    @server.tool()
    async def validate_citations(job: Annotated[str, JOB]) -> CallToolResult:
        """Check every citation of the job against the registries again; says which changed
        status and which are rejected."""
        return await _run(lambda: service.validate(job))

    @server.tool()
    async def format_citations(
        job: Annotated[str, JOB],
        style: Annotated[
            str | None, Field(description=f"CSL style: {', '.join(STYLES)} (default apa)")
        ] = None,
        ids: Annotated[
            list[str | int] | None,
            Field(description="citation ids or numbers ('3' or '[3]'); bibliography: all if none"),
        ] = None,
        kind: Annotated[
            Literal["intext", "bibliography"],
            Field(description="in-text citations of `ids`, or the bibliography"),
        ] = "intext",
        page: Annotated[
            str | int | None, Field(description="page(s) for in-text citations")
        ] = None,
    ) -> CallToolResult:
        """In-text citations (with a page) or the job's bibliography in a citation style;
        rejected citations are never listed."""
        return await _run(lambda: service.format(job, style=style, ids=ids, kind=kind, page=page))

    @server.tool()
    async def export_citations(
        job: Annotated[str, JOB],
        format: Annotated[
            Literal["bibtex", "ris", "csljson"], Field(description="export format")
        ] = "bibtex",
    ) -> CallToolResult:
        """The job's accepted citations as BibTeX, RIS or CSL-JSON."""
        return await _run(lambda: service.export(job, format=format))

    @server.tool()
    async def list_citations(job: Annotated[str, JOB]) -> CallToolResult:
        """Every citation of the job with its number, status and reason."""
        return await _run(lambda: service.list_citations(job))

    return server


def serve(
    db: str | LibraryPath | None,
    out_dir: str | None,
    offline: bool,
    http: bool,
    host: str,
    port: int,
    token: str | None = None,
) -> None:
    """Run the server on stdio (one client, the agent framework that started it) or on
    streamable HTTP at http://HOST:PORT/mcp (several agents share one server and library),
    asking every HTTP request for `token` when given."""
    service = AgentService(db, out_dir, offline)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # an IPv6 address as a URL writes it: uvicorn binds the bare address
    try:
        build_server(service, host=host, port=port, token=token).run(
            transport="streamable-http" if http else "stdio"
        )
    finally:
        service.pool.close()
