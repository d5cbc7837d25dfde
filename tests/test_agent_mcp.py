"""`citeaudit mcp` driven by the MCP SDK's own client over stdio (real server processes, real
HTTP to the fake registry, a real DuckDB library): list the tools, call each, two servers adding
to one library at once, malformed arguments."""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.fake_registry.fixtures import point_env_at

mcp = pytest.importorskip("mcp", reason="the citeaudit[mcp] extra is not installed")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

FRET = "10.1038/srep16696"
ABSENT_PMID = "29424689"
TOOLS = {"add_citation", "validate_citations", "format_citations", "export_citations",
         "list_citations"}  # fmt: skip


CLI = [sys.executable, "-c", "from flows.cli.main import main; main()"]


def server(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp"],
        env={**os.environ, **env},
        cwd=str(Path(__file__).parent.parent),
    )


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


async def session_calls(env: dict[str, str]) -> dict:
    seen: dict = {}
    # two agents, each with its own server process, add to one job in one library at once
    async with (
        stdio_client(server(env)) as (read, write),
        ClientSession(read, write) as session,
        stdio_client(server(env)) as (other_read, other_write),
        ClientSession(other_read, other_write) as other,
    ):
        seen["initialize"] = await session.initialize()
        await other.initialize()
        tools = (await session.list_tools()).tools
        seen["tools"] = {t.name: t for t in tools}
        call = session.call_tool
        async with anyio.create_task_group() as group:
            for name, agent, args in (
                ("doi", session, {"doi": FRET, "claim": "FRET shows oligomers", "page": "45"}),
                ("pmid", other, {"pmid": int(ABSENT_PMID)}),
            ):

                async def add(name: str = name, agent=agent, args: dict = args) -> None:
                    seen[name] = await agent.call_tool("add_citation", {"job": "crew-1", **args})

                group.start_soon(add)
        seen["list"] = await call("list_citations", {"job": "crew-1"})
        seen["validate"] = await call("validate_citations", {"job": "crew-1"})
        seen["intext"] = await call(
            # numbers and pages as LLMs often send them: integers
            "format_citations",
            {"job": "crew-1", "ids": [1], "page": 12, "style": "ieee"},
        )
        seen["bibliography"] = await call(
            "format_citations", {"job": "crew-1", "kind": "bibliography"}
        )
        seen["export"] = await call("export_citations", {"job": "crew-1", "format": "ris"})
        seen["bad"] = {
            "no source": await call("add_citation", {"job": "crew-1"}),
            "wrong type": await call("format_citations", {"job": "crew-1", "ids": "1"}),
            "unknown format": await call("export_citations", {"job": "crew-1", "format": "doc"}),
            "no job": await call("list_citations", {}),
            "bad job": await call("list_citations", {"job": "../etc"}),
            "bad doi": await call("add_citation", {"job": "crew-1", "doi": "not-a-doi"}),
            "unknown tool": await call("delete_citation", {"job": "crew-1"}),
        }
    return seen


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from tests.fake_registry import FakeRegistry

    folder = tmp_path_factory.mktemp("mcp")
    with FakeRegistry() as registry:
        return anyio.run(session_calls, point_env_at(registry, folder))


def test_the_server_lists_the_five_tools_with_their_arguments(seen):
    tools = seen["tools"]
    assert set(tools) == TOOLS
    add = tools["add_citation"].inputSchema
    assert add["required"] == ["job"]
    assert {"doi", "pmid", "arxiv", "url", "reference", "claim", "page"} <= set(add["properties"])
    formats = tools["export_citations"].inputSchema["properties"]["format"]
    assert formats["enum"] == ["bibtex", "ris", "csljson"]


def test_the_server_names_citeaudit_and_its_version(seen):
    from importlib.metadata import version

    server = seen["initialize"].serverInfo
    assert (server.name, server.version) == ("citeaudit", version("citeaudit"))
    assert server.version != version("mcp")  # what FastMCP reports unless told


def test_each_tool_answers_in_text_and_as_structured_json(seen):
    added = seen["doi"]
    assert not added.isError
    assert text_of(added).startswith("ACCEPTED [1] verified")
    assert "Use in text as: (Tosatto et al., 2015, p. 45) [1]" in text_of(added)
    assert added.structuredContent["citation"]["status"] == "verified"
    rejected = seen["pmid"]
    assert text_of(rejected).startswith("REJECTED not_found: PubMed does not hold PMID")
    assert rejected.structuredContent["citation"]["number"] is None

    listed = seen["list"].structuredContent
    assert sorted(c["status"] for c in listed["citations"]) == ["not_found", "verified"]
    assert seen["validate"].structuredContent["changed"] == []
    assert text_of(seen["intext"]) == "[1, p. 12]"
    entries = seen["bibliography"].structuredContent["entries"]
    assert [e["number"] for e in entries] == [1] and entries[0]["text"].startswith("Tosatto")
    exported = seen["export"]
    assert text_of(exported).count("TY  - JOUR") == 1
    assert {c["status"] for c in exported.structuredContent["citations"]} == {
        "verified", "not_found"
    }  # fmt: skip
    json.dumps([r.structuredContent for r in (added, rejected, seen["list"], exported)])


def test_malformed_arguments_come_back_as_one_line_errors(seen):
    bad = seen["bad"]
    assert all(result.isError for result in bad.values())
    messages = {name: text_of(result) for name, result in bad.items()}
    assert all("\n" not in m and "Traceback" not in m for m in messages.values()), messages
    assert messages["no source"] == "give exactly one of doi, pmid, arxiv, url or reference"
    assert messages["wrong type"] == "ids: Input should be a valid list"
    assert messages["unknown format"] == "format: Input should be 'bibtex', 'ris' or 'csljson'"
    assert messages["no job"] == "job: Field required"
    assert messages["bad job"].startswith("invalid job id '../etc'")
    assert messages["bad doi"] == "doi: 'not-a-doi' is not a DOI"
    assert messages["unknown tool"] == "Unknown tool: delete_citation"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def over_http(url: str, token: str | None = None) -> tuple[set[str], object]:
    import httpx
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        added = await session.call_tool("add_citation", {"job": "web-crew", "doi": FRET})
        return names, added


@contextmanager
def http_server(tmp_path: Path, *args: str, **env: str) -> Iterator[int]:
    """`citeaudit mcp --http ARGS` as a real process against the fake registry; its port."""
    from tests.fake_registry import FakeRegistry

    port = free_port()
    with FakeRegistry() as registry:
        process = subprocess.Popen(
            [*CLI, "mcp", "--http", "--port", str(port), *args],
            env={**os.environ, **point_env_at(registry, tmp_path), **env},
            cwd=str(Path(__file__).parent.parent),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, process.communicate()[1].decode()
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert time.monotonic() < deadline, "the HTTP server never listened"
                time.sleep(0.2)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_streamable_http_serves_the_same_tools(tmp_path: Path) -> None:
    """`citeaudit mcp --http`: a real server process, the SDK's streamable-HTTP client."""
    with http_server(tmp_path) as port:
        names, added = anyio.run(over_http, f"http://127.0.0.1:{port}/mcp")
    assert names == TOOLS
    assert text_of(added).startswith("ACCEPTED [1] verified")
    assert added.structuredContent["citation"]["status"] == "verified"


def test_off_loopback_the_server_needs_a_token_or_does_not_start(tmp_path: Path) -> None:
    """--host 0.0.0.0 served every interface with no authentication."""
    env = {k: v for k, v in os.environ.items() if k != "CITEAUDIT_MCP_TOKEN"}
    args = [*CLI, "mcp", "--http", "--host", "0.0.0.0", "--port", str(free_port())]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("citeaudit: error: --host 0.0.0.0 serves other machines")
    assert "CITEAUDIT_MCP_TOKEN" in done.stderr and len(done.stderr.splitlines()) == 1

    token = "s3cret-token-for-the-crew"
    with http_server(tmp_path, "--host", "0.0.0.0", CITEAUDIT_MCP_TOKEN=token) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        import httpx

        for given in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            refused = httpx.post(url, headers=given, json={}, timeout=60)
            assert refused.status_code == 401 and token not in refused.text
        names, added = anyio.run(over_http, url, token)
    assert names == TOOLS and text_of(added).startswith("ACCEPTED [1] verified")
