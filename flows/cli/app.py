"""The `citeaudit` Typer app, the consoles it prints on, the options several commands share, and
`fail`: our error in one line with its exit code.

Imports stay lazy: `--help` and `--version` must answer in well under a second, and Prefect alone
costs seconds to import, so each command imports what it runs."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

import flows.prefect_logging  # noqa: F401  (must come before anything imports prefect)

if TYPE_CHECKING:
    from tasks.errors import CiteauditError

app = typer.Typer(
    help=(
        "Audit research citations against Crossref, PubMed, DBLP, arXiv, Semantic Scholar, "
        "OpenAlex and Europe PMC (`citeaudit registries` lists those asked)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


# Verbatim: what is printed carries user data (entry keys, titles, paths), which Rich's markup
# would eat (`[support]`) and its emoji codes rewrite (`:cat:`); styles are given as `style=`.
def _whole_lines(console: Console) -> Console:
    """Piped or captured (grep, a CI log), nothing is broken at a width no one sees (Rich's
    default 80): job names, paths and table rows stay whole, a line each. A width the user set
    (`COLUMNS`) is kept."""
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 100_000
    return console


out = _whole_lines(Console(markup=False, emoji=False, highlight=False))
err = _whole_lines(Console(stderr=True, markup=False, emoji=False, highlight=False))


# The options several commands share, declared once.
JobOption = Annotated[str, typer.Option("--job", help="Job id (letters, digits, . _ -).")]
OutOption = Annotated[Path, typer.Option("--out", help="Output folder.")]
DbOption = Annotated[str | None, typer.Option(help="DuckDB library (default $CITEAUDIT_DB).")]
OfflineOption = Annotated[bool, typer.Option(help="Do not contact the registries.")]
FormatOption = Annotated[str | None, typer.Option("--format", help="Force an input format.")]
ChunkSizeOption = Annotated[int, typer.Option(help="Citations per Prefect task.")]
WorkersOption = Annotated[int, typer.Option(help="Parallel validation tasks.")]


def show_version(value: bool) -> None:
    if value:
        from tasks.version import citeaudit_version

        typer.echo(f"citeaudit {citeaudit_version()}")
        raise typer.Exit()


@app.callback()
def citeaudit(
    version: Annotated[
        bool,
        typer.Option("--version", callback=show_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Audit research citations against Crossref, PubMed, DBLP, arXiv, Semantic Scholar,
    OpenAlex and Europe PMC (`citeaudit registries` lists those asked)."""


def fail(exc: "CiteauditError") -> NoReturn:
    """Our error in one line, the exit code its branch's (tasks/errors.py): 2 usage, 3
    infrastructure."""
    from tasks.errors import exit_code

    typer.echo(f"citeaudit: error: {exc}", err=True)
    raise typer.Exit(exit_code(exc))


def debugging() -> bool:
    """CITEAUDIT_DEBUG: Prefect's logs and tracebacks beside the one-line errors. Off when unset,
    empty, 0, false, no or off. It changes what is printed, never the exit code."""
    return os.environ.get("CITEAUDIT_DEBUG", "").strip().lower() not in _DEBUG_OFF


_DEBUG_OFF = frozenset({"", "0", "false", "no", "off"})


def usage_error(message: str) -> NoReturn:
    from tasks.errors import UsageError

    fail(UsageError(message))


def internal_error(message: str) -> NoReturn:
    """An internal or infrastructure failure (Prefect, the library lock): one line, exit 3."""
    from tasks.errors import InfrastructureError

    fail(InfrastructureError(message))
