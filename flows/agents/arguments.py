"""The agent service's arguments checked: the job id, the style, a source as a line of a
plain-text list, a page as a location; and what went wrong, said in one line."""

import re

from pydantic import ValidationError

from tasks.errors import one_line
from tasks.job.agent import AGENT_SOURCE, AgentError
from tasks.read.plaintext import reference_from_line
from tasks.render import citeproc
from tasks.store.names import UnsafeJobId, check_job_id

DEFAULT_STYLE = "apa"
_PAGES = re.compile(r"\d+\s*[-–]\s*\d+")


def one_line_error(exc: BaseException) -> str:
    """What went wrong, in one line an agent can read: the argument and the problem, or (for
    our own failure) the error's kind and message."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
    return one_line(exc)


def job_id_of(job: str | None) -> str:
    if not job or not job.strip():
        raise AgentError("give the job (the crew run's name)")
    try:
        return check_job_id(job.strip())
    except UnsafeJobId as exc:
        raise AgentError(str(exc)) from None


def style_of(style: str | None) -> str:
    chosen = (style or DEFAULT_STYLE).strip()
    if chosen not in citeproc.STYLES:
        raise AgentError(f"unknown style {chosen!r} (known: {', '.join(citeproc.STYLES)})")
    return chosen


def source_line(kind: str, value: str) -> str:
    """What the agent gave, as a line of a plain-text list; the identifier must be there."""
    line = " ".join(value.split())
    if kind == "arxiv" and not re.match(r"(?i)(arxiv:|https?://)", line):
        line = f"arXiv:{line}"
    if kind == "pmid" and not re.match(r"(?i)(pmid|\d)", line):
        line = f"PMID: {line}"
    if kind == "url" and not re.match(r"(?i)https?://\S+$", line):
        raise AgentError(f"url: {value!r} is not an http(s) URL")
    ids = reference_from_line(line, AGENT_SOURCE, 0).ids
    named = {"doi": ids.doi, "pmid": ids.pmid, "arxiv": ids.arxiv}
    if kind in named and not named[kind]:
        what = {"doi": "DOI", "pmid": "PMID", "arxiv": "arXiv id"}[kind]
        raise AgentError(f"{kind}: {value!r} is not a{'n' if kind == 'arxiv' else ''} {what}")
    return line


def location_of(page: str | int | None) -> str | None:
    """A page as a citation's location: `45` -> `p. 45`, `45-47` -> `pp. 45-47`, else as given."""
    text = " ".join(str(page).split()) if page is not None else ""
    if not text:
        return None
    if text.isdigit():
        return f"p. {text}"
    if _PAGES.fullmatch(text):
        return f"pp. {text}"
    return text
