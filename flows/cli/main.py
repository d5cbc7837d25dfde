"""The `citeaudit` command line: the app (app.py) with each command group's commands registered
in the order `--help` lists them, and the console script `main`."""

import sys
import traceback

import typer

from flows.cli.app import app, debugging
from flows.cli.audit import audit, check
from flows.cli.fix import fix
from flows.cli.imports import import_
from flows.cli.jobs import dedupe, jobs, report
from flows.cli.registries import registries
from flows.cli.serving import mcp_server, serve, server_app
from flows.cli.snapshot import snapshot_app
from flows.cli.zotero import zotero_app

app.command()(audit)
app.command()(check)
app.command()(serve)
app.command("import")(import_)
app.command()(report)
app.command()(jobs)
app.command()(dedupe)
app.command("mcp")(mcp_server)
app.command()(registries)
app.command("fix")(fix)
app.add_typer(server_app, name="server")
app.add_typer(zotero_app, name="zotero")
app.add_typer(snapshot_app, name="snapshot")


def main() -> None:
    """The console script: an error of ours nobody caught is its one line and its exit code;
    any other is an internal error, one line and exit 3 (CITEAUDIT_DEBUG=1 shows its
    traceback)."""
    from flows import interrupt
    from tasks.errors import CiteauditError, exit_code

    interrupt.enable()
    try:
        app()
    except CiteauditError as exc:  # one of ours no command caught (a missing extra): its line
        typer.echo(f"citeaudit: error: {exc}", err=True)
        sys.exit(exit_code(exc))
    except Exception as exc:
        if debugging():
            traceback.print_exc()  # then the same line and exit code: 3 means internal, always
        typer.echo(f"citeaudit: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(3)
    finally:
        interrupt.finish()  # a stop signal already sent ends the run as it says


if __name__ == "__main__":
    main()
