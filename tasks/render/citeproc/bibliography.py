"""A bibliography in one or several styles: the entries as the style writes them, each with its
in-text citation, in the style's order.

Each style is one pandoc run over the whole job (pandoc.py), so a numbered style numbers in
input order; a large job of an author-sorted style runs in batches of whole first-author groups
(pandoc.BATCH_SIZE), side by side, and comes out exactly as one run would give it. A render
handed an `Ahead` (ahead.py) takes the runs it started whose input is the same."""

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from models.csl import CSLItem
from tasks.render.citeproc.ahead import Ahead
from tasks.render.citeproc.pandoc import Formatted, pandoc_pieces, pool_size, run_input, runs_of
from tasks.render.citeproc.styles import STYLES

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


def render_bibliography(
    items: Sequence[CSLItem], style: str, locators: Mapping[int, str] | None = None
) -> Bibliography:
    """Render the items in one style, with their in-text citations: one pandoc run, or for a
    large job of a sorted style one run per batch of whole first-author groups
    (pandoc.BATCH_SIZE), side by side. `locators` (position -> e.g. `p. 45`) go into those
    items' in-text citations, as the style writes a pinpoint."""
    return render_bibliographies(items, [style], locators)[style]


def _render_once(
    items: Sequence[CSLItem],
    style: str,
    locators: Mapping[int, str],
    in_text: bool,
    ahead: Ahead | None,
) -> Bibliography:
    """Render all items in one style with one pandoc run (or take that run's answer from
    `ahead`)."""
    run = run_input(items, style, locators, in_text)
    pieces = ahead.take(run.digest()) if ahead is not None else None
    if pieces is None:
        pieces = pandoc_pieces(run)
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


def render_bibliographies(
    items: Sequence[CSLItem],
    styles: Iterable[str] = STYLES,
    locators: Mapping[int, str] | None = None,
    *,
    in_text: bool = True,
    ahead: Ahead | None = None,
) -> dict[str, Bibliography]:
    """Several styles at once. Every pandoc run (a style, or a batch of one) is its own process,
    as many at a time as there are CPUs, or taken from `ahead` (see rendering_ahead). Without
    `in_text` the entries' citations stay empty: the entries are the same, and pandoc's
    citeproc takes 20-40 % less CPU without disambiguating a citation per item."""
    names = list(styles)
    locators = locators or {}
    runs = [(style, positions) for style in names for positions in runs_of(items, style)]

    def run(style: str, positions: list[int]) -> list[Entry]:
        part_locators = {n: locators[p] for n, p in enumerate(positions) if p in locators}
        part = _render_once([items[p] for p in positions], style, part_locators, in_text, ahead)
        return [replace(e, position=positions[e.position]) for e in part.entries]

    with ThreadPoolExecutor(max_workers=pool_size(len(runs))) as pool:
        entries = list(pool.map(lambda style_run: run(*style_run), runs))
    rendered = {style: Bibliography(style=style, entries=[]) for style in names}
    for (style, _), part in zip(runs, entries, strict=True):
        rendered[style].entries.extend(part)
    return rendered
