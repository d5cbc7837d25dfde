"""`citeaudit serve`, `mcp` and `server`: the deployments served with their schedules, the agent
tools over MCP, and the background Prefect server the runs share."""

import os
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.app import DbOption, OfflineOption, fail, out, usage_error
from flows.cli.checks import check_out, library_path
from flows.cli.run import prefect_api


def serve(
    deployments: Annotated[
        Path | None, typer.Option("--file", help="Prefect project file (default: the repo's).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Most flow runs at once.")] = None,
) -> None:
    """Serve every deployment (and its schedule) from this process, without a work pool."""
    if deployments is not None and not deployments.is_file():
        usage_error(f"--file: no such file {deployments}")  # before Prefect and its server start
    with prefect_api():
        from flows.serve_deployments import DEPLOYMENTS_FILE, serve_all

        serve_all(deployments or DEPLOYMENTS_FILE, limit=limit)


def mcp_server(
    db: DbOption = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Also rewrite each job's folder here.")
    ] = None,
    offline: OfflineOption = False,
    http: Annotated[bool, typer.Option(help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
) -> None:
    """Serve the agent tools (add, validate, format, export, list citations) over MCP, on stdio
    for the agent framework that starts it (needs the mcp extra). Over HTTP off loopback, every
    request must carry `Authorization: Bearer $CITEAUDIT_MCP_TOKEN` (asked on loopback too when
    it is set); without the variable such a server does not start."""
    token = os.environ.get("CITEAUDIT_MCP_TOKEN") or None
    if http and token is None and not _loopback(host):
        usage_error(
            f"--host {host} serves other machines: set CITEAUDIT_MCP_TOKEN (clients send "
            "'Authorization: Bearer TOKEN'), or serve on 127.0.0.1"
        )
    if out_dir is not None:
        check_out(out_dir)
    library = library_path(db)
    from tasks.errors import MissingExtra

    try:
        from flows.agents.mcp import serve
    except MissingExtra as exc:
        fail(exc)
    serve(library, str(out_dir) if out_dir else None, offline, http, host, port, token)


def _loopback(host: str) -> bool:
    """Whether HOST is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, maybe not only this machine


server_app = typer.Typer(
    help="The background Prefect server citeaudit runs share.", no_args_is_help=True
)


@server_app.command("status")
def server_status() -> None:
    """Say whether the background server runs, where, and since when."""
    import time

    from flows import server

    folder = server.server_dir()
    configured = server.configured_api_url()
    if configured:
        out.print(f"PREFECT_API_URL is set: runs use {configured}", highlight=False)
    info = server.running_server(folder)
    if info is None:
        out.print(f"no background server running ({folder})", highlight=False)
        return
    minutes = (time.time() - info.started_at) / 60
    out.print(
        f"background server running at {info.api_url} (pid {info.pid}, up {minutes:.0f} min, "
        f"home {folder})",
        highlight=False,
    )


@server_app.command("stop")
def server_stop() -> None:
    """Stop the background server (the next run starts it again)."""
    from flows import server

    stopped = server.stop()
    if stopped is None:
        out.print("no background server running", highlight=False)
    else:
        out.print(f"stopped the background server at {stopped.api_url}", highlight=False)
