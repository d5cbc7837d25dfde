"""The report's two layouts: `report.html` (self-contained: its CSS inlined from report.css, every
value HTML-escaped by Jinja2's autoescape) and `report.md` (every value Markdown-escaped by the
environment's finalize, so a template cannot forget it). Rendering only: selection.py decides
what is shown."""

from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from tasks.plural import counted
from tasks.render.citeproc import UNCONFIRMED_HEADING, UNCONFIRMED_NOTE
from tasks.report.links import safe_url
from tasks.report.markdown import (
    markdown_code,
    markdown_from_html,
    markdown_link,
    markdown_text,
)
from tasks.report.rows import Place
from tasks.report.selection import ReportData, select


class MarkdownSafe(str):
    """Markdown already built from escaped parts (a link): written as it is."""


def _markdown_finalize(value: object) -> str:
    return value if isinstance(value, MarkdownSafe) else markdown_text(value)


def markdown_place(place: Place) -> str:
    """`job` `entry key` (file): where a citation is, as report.md names it."""
    job = f"job {markdown_code(place.job_id)} " if place.job_id is not None else ""
    return f"{job}{markdown_code(place.entry_key)} ({markdown_text(place.source_file)})"


def _environment(**options: object) -> Environment:
    env = Environment(
        loader=PackageLoader("tasks.report", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        **options,  # type: ignore[arg-type]
    )
    env.globals.update(unconfirmed_heading=UNCONFIRMED_HEADING, unconfirmed_note=UNCONFIRMED_NOTE)
    env.filters["counted"] = counted
    return env


@cache
def _html() -> Environment:
    env = _environment(autoescape=select_autoescape(["html.j2"], default=True))
    env.filters["url"] = safe_url
    env.globals["css"] = (
        resources.files("tasks.report").joinpath("templates/report.css").read_text(encoding="utf-8")
    )
    return env


@cache
def _markdown() -> Environment:
    env = _environment(autoescape=False, finalize=_markdown_finalize)
    env.filters["link"] = lambda text, url: MarkdownSafe(markdown_link(text, url))
    env.filters["code"] = lambda value: MarkdownSafe(markdown_code(value))
    env.filters["place"] = lambda place: MarkdownSafe(markdown_place(place))
    env.filters["from_html"] = lambda fragment: MarkdownSafe(markdown_from_html(fragment))
    return env


def render_html(data: ReportData) -> str:
    return _html().get_template("report.html.j2").render(report=select(data))


def render_markdown(data: ReportData) -> str:
    return _markdown().get_template("report.md.j2").render(report=select(data))
