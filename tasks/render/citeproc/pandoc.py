"""pandoc runs: what one reads, how a style's job splits into runs, the process, its answer.

A run's whole input is a `RunInput` (the items as CSL-JSON under keys r0, r1, ..., the Markdown
document citing or listing them, the style), so the same input always gives the same answer and
its digest names it (ahead.py takes runs by it). pandoc runs with --sandbox (it reads only the
files named on its command line) and the Lua writer bibliography.lua hands every entry and
citation back as text, HTML and Markdown in one JSON answer, cut here into pieces.

Each run's process is a `Spawn`, which another thread can kill. A stop signal ends the process
with os._exit (flows/interrupt.py), so `stop_all_pandoc` must find every pandoc child of the
process: that is the one process-wide state here (`PROCESSES`), as a signal has no caller to
pass it in."""

import hashlib
import html
import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypandoc

from models.csl import CSLItem
from tasks.errors import InfrastructureError
from tasks.identifiers import is_safe_link
from tasks.render.citeproc.items import first_author_batches, pandoc_items
from tasks.render.citeproc.styles import style_format, style_locale, style_path

WRITER = Path(__file__).resolve().parent / "bibliography.lua"

_HREF = re.compile(r'<a href="([^"]*)"[^>]*>(.*?)</a>', re.DOTALL)
_SPACE = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"</p>\s*<p>")
_PANDOC_TIMEOUT_S = 600

# pandoc's citeproc compares every pair of items while disambiguating, so its time grows with the
# square of the items (APA here: 200 items 0.6 s, 400 1.7 s, 800 7.2 s). Disambiguation only
# concerns items whose first authors share a family name, so above this many items a sorted
# style renders in batches of whole first-author groups; numbered styles stay one run (their
# numbering is the citation order and they do not disambiguate by year suffix).
BATCH_SIZE = 250


class RenderError(InfrastructureError):
    """pandoc failed on a job (not on one item: items are made safe before pandoc sees them)."""


@dataclass(frozen=True)
class Formatted:
    text: str
    html: str  # escaped; only http(s) and file links
    markdown: str


Pieces = list[tuple[tuple[str, str], Formatted]]  # (kind, key) and its forms, in order


@dataclass(frozen=True)
class RunInput:
    """Everything one pandoc run reads: the same input always gives the same answer."""

    style: str
    bibliography: str  # the items as CSL-JSON, under keys r0, r1, ...
    document: str
    numbered: bool

    def digest(self) -> str:
        parts = (self.style, self.bibliography, self.document, str(self.numbered))
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def run_input(
    items: Sequence[CSLItem], style: str, locators: Mapping[int, str], in_text: bool
) -> RunInput:
    keys = [f"r{position}" for position in range(len(items))]
    bibliography = json.dumps(pandoc_items(items, keys, style))
    document = _citing_document(keys, locators) if in_text else _listing_document(keys)
    return RunInput(style, bibliography, document, style_format(style) == "numeric")


def runs_of(items: Sequence[CSLItem], style: str) -> list[list[int]]:
    """The positions each pandoc run of the style renders (an unknown style fails here)."""
    style_path(style)
    if not items:
        return []
    if len(items) <= BATCH_SIZE or style_format(style) == "numeric":
        return [list(range(len(items)))]
    return first_author_batches(items, BATCH_SIZE)


def pool_size(runs: int) -> int:
    """How many runs at a time: pandoc is single-threaded and the Python side of a run is small
    next to it, so more runs at a time than CPUs would only multiply pandoc's memory."""
    return max(1, min(runs, os.cpu_count() or 1))


class Spawn:
    """One pandoc run's process, which another thread can stop: a run started ahead that nobody
    takes must not go on using a CPU (or outlive the job) unseen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._killed = False
        self._process: subprocess.Popen[str] | None = None

    @contextmanager
    def running(self, command: list[str]) -> Iterator[subprocess.Popen[str]]:
        """pandoc started (unless the run or every run was stopped), reaped at the end."""
        processes = PROCESSES
        # Listed before the stop check: a stop either finds this run or this run finds the stop.
        with processes.listed(self):
            # Under the lock, so a kill either comes first (pandoc never starts) or sees the
            # process.
            with self._lock:
                if self._killed or processes.stopping:
                    raise RenderError("pandoc run stopped before it started")
                process = self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                )
            with process:
                yield process

    def kill(self) -> None:
        """Stop the run: its pandoc never starts, or is killed and reaped."""
        with self._lock:
            self._killed = True
            process = self._process
        if process is not None:
            process.kill()
            process.wait()


class Processes:
    """The pandoc runs of a process now running, and whether it is stopping for good."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[Spawn] = set()
        self._stopping = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @contextmanager
    def listed(self, spawn: Spawn) -> Iterator[None]:
        with self._lock:
            self._live.add(spawn)
        try:
            yield
        finally:
            with self._lock:
                self._live.discard(spawn)

    def stop_all(self) -> None:
        """Kill every run now listed, and let none start from now on."""
        self._stopping.set()
        with self._lock:
            live = list(self._live)
        for spawn in live:
            spawn.kill()


PROCESSES = Processes()  # this process's: see the module docstring


def stop_all_pandoc() -> None:
    """Kill every pandoc run of this process, and start no more: for a stop signal, which ends
    the process with os._exit (flows/interrupt.py), where pandoc children (runs started ahead
    or not) would otherwise run on as orphans."""
    PROCESSES.stop_all()


def pandoc_pieces(run: RunInput, spawn: Spawn | None = None) -> Pieces:
    """One pandoc run (stoppable through `spawn`), its answer cut into pieces."""
    token = f"CITEAUDITSPLIT{secrets.token_hex(8)}"
    with tempfile.TemporaryDirectory(prefix="citeaudit-render-") as tmp:
        bibliography = Path(tmp) / "items.json"
        bibliography.write_text(run.bibliography, encoding="utf-8")
        answer = _run_pandoc(
            run.document,
            style_path(run.style),
            bibliography,
            style_locale(run.style),
            token,
            numbered=run.numbered,
            spawn=spawn or Spawn(),
        )
    return _split_pieces(answer, token)


def _citing_document(keys: Sequence[str], locators: Mapping[int, str]) -> str:
    # One fenced Div per citation so the writer can find each rendered citation by key; a
    # locator follows the key as pandoc's citation syntax has it (`[@r0, p. 45]`).
    cites = [
        f"[@{key}, {_markdown_locator(locators[n])}]" if n in locators else f"[@{key}]"
        for n, key in enumerate(keys)
    ]
    divs = (f"::: {{#cite-{key}}}\n{cite}\n:::" for key, cite in zip(keys, cites, strict=True))
    return "\n\n".join(divs) + "\n"


def _listing_document(keys: Sequence[str]) -> str:
    # Every item listed, in order (a numbered style numbers them so), none cited in the text.
    return '---\nnocite: "' + ", ".join(f"@{key}" for key in keys) + '"\n---\n'


def _markdown_locator(locator: str) -> str:
    # Brackets, `@` and `;` would end or split the citation; a bare page number takes `p.`.
    text = re.sub(r"[\[\]@;\\]", " ", _one_line(locator)).strip()
    return f"p. {text}" if text[:1].isdigit() else text


def _run_pandoc(
    document: str,
    style: Path,
    bibliography: Path,
    lang: str,
    token: str,
    *,
    numbered: bool,
    spawn: Spawn,
) -> dict[str, Any]:
    command = [
        pypandoc.get_pandoc_path(),
        "--sandbox",
        "--from=markdown",
        f"--to={WRITER}",
        "--citeproc",
        f"--csl={style}",
        f"--bibliography={bibliography}",
        f"--metadata=lang:{lang}",
        "--metadata=link-citations:false",
        f"--metadata=split-token:{token}",
        # Tells the writer that entries start with their number (see bibliography.lua).
        f"--metadata=numbered:{'true' if numbered else 'false'}",
    ]
    with spawn.running(command) as process:
        try:
            stdout, stderr = process.communicate(document, timeout=_PANDOC_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            process.kill()
            process.communicate()
            # A RenderError, so a caller falling back per style (tasks/job/render.py) catches it.
            raise RenderError(f"pandoc ran over {_PANDOC_TIMEOUT_S} s on {style.name}") from exc
        except BaseException:
            process.kill()  # as subprocess.run does: no pandoc left behind an interrupted wait
            raise
    if process.returncode != 0:
        raise RenderError(f"pandoc failed ({process.returncode}) on {style.name}: {stderr}")
    answer: dict[str, Any] = json.loads(stdout)
    return answer


def _split_pieces(answer: dict[str, Any], token: str) -> Pieces:
    """Pair each (kind, key) with its three forms, cut out of the writer's three documents."""
    pieces = [(piece["kind"], piece["key"]) for piece in answer["pieces"]]
    cut = {form: answer[form].split(token) for form in ("text", "html", "markdown")}
    if any(len(parts) != len(pieces) + 1 for parts in cut.values()):
        raise RenderError("pandoc's output did not split into one piece per entry")
    return [
        (
            piece,
            Formatted(
                text=_one_line(cut["text"][n]),
                html=_safe_links(_inline_html(cut["html"][n])),
                markdown=cut["markdown"][n].strip(),
            ),
        )
        for n, piece in enumerate(pieces)
    ]


def _inline_html(fragment: str) -> str:
    # The writer hands over citeproc's paragraphs; a piece is one line of inline HTML.
    return _PARAGRAPH_BREAK.sub(" ", fragment.strip()).removeprefix("<p>").removesuffix("</p>")


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _safe_links(fragment: str) -> str:
    # Items are cleaned before pandoc; this is the last guard on what pandoc made a link.
    return _HREF.sub(
        lambda m: m.group(0) if is_safe_link(html.unescape(m.group(1))) else m.group(2), fragment
    )
