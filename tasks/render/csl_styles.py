"""Bibliographies in seven CSL styles, rendered by pandoc's citeproc.

pandoc's citeproc matches citeproc-js (the processor inside Zotero and Mendeley) far better than
citeproc-py, so each style is one pandoc run over the whole job: the items go in as a CSL-JSON
file, a Markdown document cites every item once in input order (numbered styles therefore number
in input order), and a small Lua writer (bibliography.lua) returns every entry and citation as
text, HTML and Markdown in one JSON answer.

pandoc runs with --sandbox (it reads only the files named on its command line) and uses the CSL
locales compiled into it; the copies in styles/ record which locale data the styles were written
against. Two style files carry small documented patches for citeproc quirks (styles/README.md);
two more are met in pandoc_item: two spellings of one initial, and CSL's title case capitalising
prepositions that MLA and Chicago lowercase.
"""

import hashlib
import html
import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import pypandoc

from models.csl import ET_AL, CSLItem, is_et_al_text, named
from tasks.errors import InfrastructureError
from tasks.identifiers import is_safe_link, normalize_doi

STYLE_DIR = Path(__file__).resolve().parent / "styles"
WRITER = Path(__file__).resolve().parent / "bibliography.lua"

STYLES: dict[str, str] = {
    "apa": "apa.csl",
    "mla": "modern-language-association.csl",
    "chicago-author-date": "chicago-author-date.csl",
    "chicago-notes": "chicago-notes-bibliography.csl",
    "ieee": "ieee.csl",
    "vancouver": "vancouver.csl",
    "harvard": "harvard-cite-them-right.csl",
}

# Zotero-era CSL-JSON names that citeproc-js reads and pandoc does not.
_LEGACY_FIELDS = {"shortTitle": "title-short", "journalAbbreviation": "container-title-short"}
_HREF = re.compile(r'<a href="([^"]*)"[^>]*>(.*?)</a>', re.DOTALL)
_SPACE = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"</p>\s*<p>")
_PANDOC_TIMEOUT_S = 600
_CSL_NS = "http://purl.org/net/xbiblio/csl"
_NAME_VARIABLES = frozenset(
    [
        "author",
        "chair",
        "collection-editor",
        "compiler",
        "composer",
        "container-author",
        "contributor",
        "curator",
        "director",
        "editor",
        "editorial-director",
        "executive-producer",
        "guest",
        "host",
        "illustrator",
        "interviewer",
        "narrator",
        "organizer",
        "original-author",
        "performer",
        "producer",
        "recipient",
        "reviewed-author",
        "script-writer",
        "series-creator",
        "translator",
    ]
)
# A capital standing alone in a given name ("S" in "Daniel S"), not already followed by a full
# stop and not an elided word ("D'Arcy").
_BARE_INITIAL = re.compile(r"\b([^\W\d_])(?![\w.'’])")
_DATE_VARIABLES = frozenset(
    ["accessed", "available-date", "event-date", "issued", "original-date", "submitted"]
)
_TITLE_VARIABLES = frozenset(
    [
        "collection-title",
        "container-title",
        "container-title-short",
        "original-title",
        "part-title",
        "reviewed-title",
        "title",
        "title-short",
        "volume-title",
    ]
)
# MLA (Handbook 9th ed.; style.mla.org, "two-word prepositions in titles") and Chicago (17th ed.
# 8.159) lowercase every preposition inside a title, however long. CSL 1.0.2's title case knows
# only a short stop-word list, so pandoc writes "Diseases Through Data". Listed: prepositions
# missing from that list that are prepositions in nearly every title; words that are often
# adverbs, adjectives or subordinating conjunctions (after, along, around, like, since, until),
# which these manuals capitalise in those uses, are left to CSL.
_LOWERCASE_PREPOSITION_STYLES = frozenset(["mla", "chicago-author-date", "chicago-notes"])
_PREPOSITIONS = (
    "across",
    "against",
    "alongside",
    "amid",
    "amidst",
    "among",
    "amongst",
    "atop",
    "beneath",
    "beside",
    "between",
    "beyond",
    "despite",
    "during",
    "per",
    "through",
    "throughout",
    "toward",
    "towards",
    "under",
    "underneath",
    "unto",
    "upon",
    "versus",
    "within",
    "without",
)
# A listed preposition as the writer lowercased it, inside the title: after a word (not after a
# colon or full stop, where a subtitle or sentence starts) and before another word (CSL
# capitalises a title's last word).
_INNER_PREPOSITION = re.compile(rf"(?<=[\w,]\s)({'|'.join(_PREPOSITIONS)})(?=\s+\w)")
# CSL-JSON's markup (read by pandoc and citeproc-js alike) for text no case change may touch.
_NOCASE = r'<span class="nocase">\1</span>'
# pandoc's citeproc compares every pair of items while disambiguating, so its time grows with the
# square of the items (APA here: 200 items 0.6 s, 400 1.7 s, 800 7.2 s). Disambiguation only
# concerns items whose first authors share a family name, so above this many items a sorted
# style renders in batches of whole first-author groups; numbered styles stay one run (their
# numbering is the citation order and they do not disambiguate by year suffix).
BATCH_SIZE = 250
# pandoc citeproc takes minutes and gigabytes over tens of thousands of entries (a numbered style
# is one run), and nobody reads such a bibliography: above this many items a job writes its
# exports and report but no bibliography, and its metrics and report say so.
MAX_BIBLIOGRAPHY_ITEMS = 5_000


def bibliography_skipped(count: int) -> str | None:
    """Why a job of `count` listed items has no bibliography (None: it has)."""
    if count <= MAX_BIBLIOGRAPHY_ITEMS:
        return None
    return (
        f"not rendered: {count:,} items, above the limit of {MAX_BIBLIOGRAPHY_ITEMS:,} "
        "(references.bib, .ris and .json list them all)"
    )


class RenderError(InfrastructureError):
    """pandoc failed on a job (not on one item: items are made safe before pandoc sees them)."""


@dataclass(frozen=True)
class Formatted:
    text: str
    html: str  # escaped; only http(s) and file links
    markdown: str


@dataclass(frozen=True)
class Entry:
    """One reference as the style writes it, with its in-text citation."""

    item_id: str  # the input item's id, as given (may repeat or be odd)
    position: int  # index in the input sequence
    text: str
    html: str
    markdown: str
    citation: Formatted  # `(Smith, 2023)`, `[1]`, or a notes style's full first note


@dataclass(frozen=True)
class Bibliography:
    style: str
    entries: list[Entry]  # in the style's order

    def citation_of(self, position: int) -> Formatted | None:
        return next((e.citation for e in self.entries if e.position == position), None)


def style_path(style: str) -> Path:
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; known: {', '.join(STYLES)}")
    return STYLE_DIR / STYLES[style]


@cache
def style_locale(style: str) -> str:
    """The style's `default-locale`, else en-US, as CSL itself falls back."""
    root = ET.parse(style_path(style)).getroot()
    return root.get("default-locale") or "en-US"


def render_bibliography(
    items: Sequence[CSLItem], style: str, locators: Mapping[int, str] | None = None
) -> Bibliography:
    """Render the items in one style, with their in-text citations: one pandoc run, or for a
    large job of a sorted style one run per batch of whole first-author groups (see BATCH_SIZE),
    side by side. `locators` (position -> e.g. `p. 45`) go into those items' in-text citations,
    as the style writes a pinpoint."""
    return render_bibliographies(items, [style], locators)[style]


def first_author_batches(items: Sequence[CSLItem], size: int) -> list[list[int]]:
    """Positions of the items in batches of at most `size` (a larger group stays whole), each
    batch holding whole groups of items whose first author has the same family name, batches
    in the order of that name: the order author-sorted styles list them in."""
    groups: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        groups.setdefault(_sort_name(item), []).append(position)
    batches: list[list[int]] = []
    for name in sorted(groups):
        if not batches or len(batches[-1]) + len(groups[name]) > size:
            batches.append([])
        batches[-1].extend(groups[name])
    return [batch for batch in batches if batch]


def _sort_name(item: CSLItem) -> str:
    # What a style sorts by first: the first author's family name, else (as CSL substitutes)
    # the editor's, else the title; folded the way a reader alphabetises.
    first = next(iter(named(item.author or item.editor)), None)
    name = (first.family or first.literal if first else None) or item.title or ""
    folded = unicodedata.normalize("NFKD", name)
    return "".join(c for c in folded if not unicodedata.combining(c)).casefold().strip()


@cache
def initials_take_period(style: str) -> bool:
    """Whether to write bare initials in given names with their full stop for this style.

    True when (1) every cs:name puts a full stop after initials (its initialize-with, own or
    inherited, ends in "."), so CSL 1.0.2 renders "Daniel S" as "Daniel S." in every form and
    adding the stop changes no output; and (2) the citation names a givenname-disambiguation-rule
    other than by-cite, the case where pandoc's citeproc first groups all names by their
    spelling: "Daniel S" and "Daniel S." are then two people printed alike, their works get year
    suffixes, and names are not added as the style asks."""
    root = ET.parse(style_path(style)).getroot()
    citation = root.find(f"{{{_CSL_NS}}}citation")
    rule = (
        citation.get("givenname-disambiguation-rule", "by-cite")
        if citation is not None
        else "by-cite"
    )
    default = root.get("initialize-with")
    contexts = [root.find(f"{{{_CSL_NS}}}{part}") for part in ("citation", "bibliography")]
    inherited = {default} | {c.get("initialize-with", default) for c in contexts if c is not None}
    values = {
        name.get("initialize-with") if "initialize-with" in name.attrib else value
        for name in root.iter(f"{{{_CSL_NS}}}name")
        for value in inherited
    }
    periods = all(value is not None and value.rstrip().endswith(".") for value in values)
    return periods and rule != "by-cite"


@cache
def style_format(style: str) -> str:
    """The style's citation format: author-date, author, numeric, note or label."""
    root = ET.parse(style_path(style)).getroot()
    category = root.find(f".//{{{_CSL_NS}}}category[@citation-format]")
    return category.get("citation-format", "") if category is not None else ""


Pieces = list[tuple[tuple[str, str], Formatted]]  # (kind, key) and its forms, in order


@dataclass(frozen=True)
class _RunInput:
    """Everything one pandoc run reads: the same input always gives the same answer."""

    style: str
    bibliography: str  # the items as CSL-JSON, under keys r0, r1, ...
    document: str
    numbered: bool

    def digest(self) -> str:
        parts = (self.style, self.bibliography, self.document, str(self.numbered))
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def _run_input(
    items: Sequence[CSLItem], style: str, locators: Mapping[int, str], in_text: bool
) -> _RunInput:
    keys = [f"r{position}" for position in range(len(items))]
    bibliography = json.dumps(
        [
            pandoc_item(
                item,
                key,
                initials_period=initials_take_period(style),
                lowercase_prepositions=style in _LOWERCASE_PREPOSITION_STYLES,
            )
            for item, key in zip(items, keys, strict=True)
        ]
    )
    document = _citing_document(keys, locators) if in_text else _listing_document(keys)
    return _RunInput(style, bibliography, document, style_format(style) == "numeric")


class _Spawn:
    """One pandoc run's process, which another thread can stop: a run started ahead that nobody
    takes must not go on using a CPU (or outlive the job) unseen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._killed = False
        self._process: subprocess.Popen[str] | None = None

    @contextmanager
    def running(self, command: list[str]) -> Iterator[subprocess.Popen[str]]:
        """pandoc started (unless the run or every run was stopped), reaped at the end."""
        # Listed before the stop check: a stop either finds this run or this run finds the stop.
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            # Under the lock, so a kill either comes first (pandoc never starts) or sees the
            # process.
            with self._lock:
                if self._killed or _STOPPING.is_set():
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
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self)

    def kill(self) -> None:
        """Stop the run: its pandoc never starts, or is killed and reaped."""
        with self._lock:
            self._killed = True
            process = self._process
        if process is not None:
            process.kill()
            process.wait()


_LIVE: set[_Spawn] = set()  # every pandoc run of the process now running
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_all_pandoc() -> None:
    """Kill every pandoc run of this process, and start no more: for a stop signal, which ends
    the process with os._exit (flows/interrupt.py), where pandoc children (runs started ahead
    or not) would otherwise run on as orphans."""
    _STOPPING.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for spawn in live:
        spawn.kill()


def _pandoc_pieces(run: _RunInput, spawn: _Spawn | None = None) -> Pieces:
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
            spawn=spawn or _Spawn(),
        )
    return _split_pieces(answer, token)


def _render_once(
    items: Sequence[CSLItem], style: str, locators: Mapping[int, str], in_text: bool
) -> Bibliography:
    """Render all items in one style with one pandoc run (or take that run's answer from
    `rendering_ahead`)."""
    run = _run_input(items, style, locators, in_text)
    pieces = _AHEAD.take(run.digest())
    if pieces is None:
        pieces = _pandoc_pieces(run)
    citations = {key: forms for (kind, key), forms in pieces if kind == "citation"}
    entries = []
    for (kind, key), forms in pieces:
        if kind != "entry":
            continue
        position = int(key[1:])
        entries.append(
            Entry(
                item_id=items[position].id,
                position=position,
                text=forms.text,
                html=forms.html,
                markdown=forms.markdown,
                citation=citations.get(key, Formatted("", "", "")),
            )
        )
    return Bibliography(style=style, entries=entries)


def _pool_size(runs: int) -> int:
    # pandoc is single-threaded and the Python side of a run is small next to it: more runs at
    # a time than CPUs would only multiply pandoc's memory, not the speed.
    return max(1, min(runs, os.cpu_count() or 1))


def render_bibliographies(
    items: Sequence[CSLItem],
    styles: Iterable[str] = STYLES,
    locators: Mapping[int, str] | None = None,
    *,
    in_text: bool = True,
) -> dict[str, Bibliography]:
    """Several styles at once. Every pandoc run (a style, or a batch of one) is its own process,
    as many at a time as there are CPUs. Without `in_text` the entries' citations stay empty:
    the entries are the same, and pandoc's citeproc takes 20-40 % less CPU without
    disambiguating a citation per item."""
    names = list(styles)
    locators = locators or {}
    runs = [(style, positions) for style in names for positions in _runs_of(items, style)]

    def run(style: str, positions: list[int]) -> list[Entry]:
        part_locators = {n: locators[p] for n, p in enumerate(positions) if p in locators}
        part = _render_once([items[p] for p in positions], style, part_locators, in_text)
        return [replace(e, position=positions[e.position]) for e in part.entries]

    with ThreadPoolExecutor(max_workers=_pool_size(len(runs))) as pool:
        entries = list(pool.map(lambda style_run: run(*style_run), runs))
    rendered = {style: Bibliography(style=style, entries=[]) for style in names}
    for (style, _), part in zip(runs, entries, strict=True):
        rendered[style].entries.extend(part)
    return rendered


@dataclass(frozen=True)
class _AheadRun:
    future: Future[Pieces]
    spawn: _Spawn


class _Ahead:
    """pandoc runs started before anyone asked for them, by their input's digest. A run is
    taken once; the process's renders share them (a digest names one input, so whoever takes
    it gets what its own run would have given)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _AheadRun] = {}

    def start(self, run: _RunInput, pool: ThreadPoolExecutor) -> str | None:
        """Submit the run unless it is started already; its digest if this call started it."""
        digest = run.digest()
        with self._lock:
            if digest in self._runs:
                return None
            spawn = _Spawn()
            self._runs[digest] = _AheadRun(pool.submit(_pandoc_pieces, run, spawn), spawn)
        return digest

    def take(self, digest: str) -> Pieces | None:
        with self._lock:
            taken = self._runs.pop(digest, None)
        return None if taken is None else taken.future.result()

    def drop(self, digests: Iterable[str]) -> None:
        """Stop the runs nobody took: one not started never starts, a running pandoc is killed
        and reaped. Their futures fail, but nobody waits on them any more."""
        with self._lock:
            dropped = [self._runs.pop(digest) for digest in digests if digest in self._runs]
        for run in dropped:  # outside the lock: a render taking another run need not wait
            run.future.cancel()
            run.spawn.kill()


_AHEAD = _Ahead()


@contextmanager
def rendering_ahead(
    items: Sequence[CSLItem], styles: Iterable[str], *, in_text: bool = True
) -> Iterator[None]:
    """Start in the background the pandoc runs `render_bibliographies(items, styles,
    in_text=in_text)` would make. Inside the block, a render in this process whose run has
    byte for byte the same input as one of them takes its answer instead of running pandoc
    again; any other run renders as usual, so the items given here are only a guess (an
    audit's, before its dedupe has merged works). Runs nobody took are stopped at the end."""
    runs = [
        _run_input([items[p] for p in positions], style, {}, in_text)
        for style in styles
        for positions in _runs_of(items, style)
    ]
    pool = ThreadPoolExecutor(max_workers=_pool_size(len(runs)), thread_name_prefix="render")
    started: list[str] = []  # as they start, so a failure partway drops those started
    try:
        for run in runs:
            digest = _AHEAD.start(run, pool)
            if digest is not None:
                started.append(digest)
        yield
    finally:
        _AHEAD.drop(started)
        # drop stopped the runs nobody took, so their threads end soon; a run a render took must
        # still finish for it, so the block does not wait here.
        pool.shutdown(wait=False)


def _runs_of(items: Sequence[CSLItem], style: str) -> list[list[int]]:
    """The positions each pandoc run of the style renders (an unknown style fails here)."""
    style_path(style)
    if not items:
        return []
    if len(items) <= BATCH_SIZE or style_format(style) == "numeric":
        return [list(range(len(items)))]
    return first_author_batches(items, BATCH_SIZE)


def pandoc_item(
    item: CSLItem, key: str, *, initials_period: bool = False, lowercase_prepositions: bool = False
) -> dict[str, Any]:
    """The item as pandoc should see it: our key as id, legacy field names mapped, and no link
    that we would not render (a `doi:` URL becomes https://doi.org/...).

    With `initials_period` (see initials_take_period) bare initials in given names get the full
    stop the style would print anyway, so that pandoc sees one spelling of each name. With
    `lowercase_prepositions` (see _PREPOSITIONS) a lowercase preposition inside a title is kept
    lowercase under the style's title case, as CSL's own stop words are."""
    data = item.to_csl()
    data["id"] = key
    for legacy, field in _LEGACY_FIELDS.items():
        value = data.pop(legacy, None)
        if isinstance(value, str) and value and field not in data:
            data[field] = value
    url = data.get("URL")
    if isinstance(url, str) and url.strip().lower().startswith("doi:"):
        doi = normalize_doi(url)
        data["URL"] = f"https://doi.org/{doi}" if doi else None
    if not is_safe_link(data.get("URL")):
        data.pop("URL", None)
    for field in _NAME_VARIABLES.intersection(data):
        data[field] = _et_al_marked(data[field])
    if initials_period:
        for field in _NAME_VARIABLES.intersection(data):
            data[field] = _with_initial_periods(data[field])
    if lowercase_prepositions:
        for field in _TITLE_VARIABLES.intersection(data):
            if isinstance(data[field], str):
                data[field] = _INNER_PREPOSITION.sub(_NOCASE, data[field])
    return {field: value for field, value in data.items() if _csl_shaped(field, value)}


def _et_al_marked(names: Any) -> Any:
    """An input's "et al." / "others" name as the one marker pandoc prints as "et al." (any other
    spelling would print as a person); a list of nothing but the marker names nobody."""
    if not isinstance(names, list):
        return names  # not CSL-shaped; _csl_shaped drops it
    marked = [{"literal": ET_AL} if _is_et_al(name) else name for name in names]
    return marked if any(name != {"literal": ET_AL} for name in marked) else None


def _is_et_al(name: Any) -> bool:
    # Any input's names reach here, CSL-valid or not (extra name variables are not validated).
    if not isinstance(name, dict) or name.get("given"):
        return False
    text = name.get("literal") or name.get("family")
    return isinstance(text, str) and is_et_al_text(text)


def _with_initial_periods(names: Any) -> Any:
    if not isinstance(names, list):
        return names  # not CSL-shaped; _csl_shaped drops it
    return [
        name | {"given": _BARE_INITIAL.sub(_initial_with_period, name["given"])}
        if isinstance(name, dict) and isinstance(name.get("given"), str)
        else name
        for name in names
    ]


def _initial_with_period(match: re.Match[str]) -> str:
    initial = match.group(1)
    return f"{initial}." if initial.isupper() else initial


def _csl_shaped(field: str, value: Any) -> bool:
    """What pandoc's citeproc accepts: names as lists of objects, dates as objects, every other
    variable as text or a number. Anything else an input carried along (tracker fields, keyword
    lists) stays in the job's data but never reaches pandoc, which would reject the whole job."""
    if field in _NAME_VARIABLES:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if field in _DATE_VARIABLES:
        return isinstance(value, dict)
    return isinstance(value, str | int | float) and not isinstance(value, bool)


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
    spawn: _Spawn,
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


# Works no registry confirmed are listed apart, each marked with its status, whatever the style.
UNCONFIRMED_HEADING = "Could not be verified"
UNCONFIRMED_NOTE = (
    "No registry confirmed these works (unmatched: no record matched the reference; "
    "unverified: the registry could not be asked). Check them before you cite them."
)


def _parts(
    bibliography: Bibliography, unconfirmed: Mapping[str, str] | None
) -> tuple[list[Entry], list[tuple[str, Entry]]]:
    """The confirmed entries, and the others with their marker (`[unmatched]`), in style order."""
    marks = unconfirmed or {}
    confirmed = [e for e in bibliography.entries if e.item_id not in marks]
    others = [(f"[{marks[e.item_id]}]", e) for e in bibliography.entries if e.item_id in marks]
    return confirmed, others


def to_text(bibliography: Bibliography, unconfirmed: Mapping[str, str] | None = None) -> str:
    """One entry per line; `unconfirmed` (item id -> status) entries after a heading, marked."""
    confirmed, others = _parts(bibliography, unconfirmed)
    lines = [entry.text for entry in confirmed]
    if others:
        lines += ["", UNCONFIRMED_HEADING, UNCONFIRMED_NOTE, ""]
        lines += [f"{mark} {entry.text}" for mark, entry in others]
    return "".join(line + "\n" for line in lines)


def _escape_brackets(text: str) -> str:
    """`[unmatched]` as Markdown text, not a link reference."""
    return text.replace("[", "\\[").replace("]", "\\]")


def to_markdown(bibliography: Bibliography, unconfirmed: Mapping[str, str] | None = None) -> str:
    """Entries as Markdown paragraphs (pandoc escaped them, so `1.` does not start a list);
    `unconfirmed` (item id -> status) entries in a section of their own, marked."""
    confirmed, others = _parts(bibliography, unconfirmed)
    blocks = [entry.markdown for entry in confirmed]
    if others:
        blocks += [f"## {UNCONFIRMED_HEADING}", UNCONFIRMED_NOTE]
        blocks += [f"**{_escape_brackets(mark)}** {entry.markdown}" for mark, entry in others]
    return "\n\n".join(blocks) + "\n"


_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: Georgia, serif; max-width: 48rem; margin: 2rem auto; line-height: 1.5; }}
.csl-entry {{ margin-bottom: 0.8em; padding-left: 2em; text-indent: -2em; }}
.csl-left-margin {{ display: inline; margin-right: 0.5em; }}
.csl-right-inline {{ display: inline; }}
.citeaudit-mark {{ font-family: sans-serif; font-weight: bold; color: #8a4b00; }}
</style>
</head>
<body>
<h1>{title}</h1>
<div class="csl-bib-body">
{entries}
</div>
</body>
</html>
"""


def to_html(bibliography: Bibliography, unconfirmed: Mapping[str, str] | None = None) -> str:
    """A complete small HTML document; entry HTML is already escaped and link-checked.
    `unconfirmed` (item id -> status) entries follow in a section of their own, marked."""
    confirmed, others = _parts(bibliography, unconfirmed)
    entries = "\n".join(_html_entry(entry) for entry in confirmed)
    if others:
        marked = "\n".join(
            _html_entry(entry, f'<span class="citeaudit-mark">{html.escape(mark)}</span> ')
            for mark, entry in others
        )
        entries += (
            f"\n</div>\n<h2>{UNCONFIRMED_HEADING}</h2>\n<p>{html.escape(UNCONFIRMED_NOTE)}</p>"
            f'\n<div class="csl-bib-body citeaudit-unconfirmed">\n{marked}'
        )
    return _PAGE.format(
        lang=html.escape(style_locale(bibliography.style), quote=True),
        title=html.escape(f"Bibliography ({bibliography.style})"),
        entries=entries,
    )


def _html_entry(entry: Entry, mark: str = "") -> str:
    return (
        f'<div class="csl-entry" id="ref-{entry.position + 1}" '
        f'data-item-id="{html.escape(entry.item_id, quote=True)}">{mark}{entry.html}</div>'
    )
