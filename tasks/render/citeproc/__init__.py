"""Bibliographies in seven CSL styles, rendered by pandoc's citeproc.

pandoc's citeproc matches citeproc-js (the processor inside Zotero and Mendeley) far better than
citeproc-py, so each style is one pandoc run over the whole job: the items go in as a CSL-JSON
file, a Markdown document cites every item once in input order (numbered styles therefore number
in input order), and a small Lua writer (bibliography.lua) returns every entry and citation as
text, HTML and Markdown in one JSON answer.

pandoc runs with --sandbox (it reads only the files named on its command line) and uses the CSL
locales compiled into it; the copies in styles/ record which locale data the styles were written
against. Two style files carry small documented patches for citeproc quirks (styles/README.md);
two more are met in items.pandoc_item: two spellings of one initial, and CSL's title case
capitalising prepositions that MLA and Chicago lowercase.

    styles.py        the style registry (STYLES) and what each style file says of itself
    items.py         a CSL item as pandoc should read it; the first-author order of a batch
    pandoc.py        one pandoc run: its input, how a style's job splits into runs, the process
                     (stoppable, and all of them at a stop signal), its answer cut into pieces
    ahead.py         runs started before the render asks for them (`rendering_ahead` yields an
                     `Ahead`, which the caller hands to the render: no state is shared unseen)
    bibliography.py  the entries of one or several styles (`render_bibliographies`), and the
                     size above which a job gets no bibliography
    formats.py       a bibliography as text, Markdown or HTML, unconfirmed works set apart
"""

from tasks.render.citeproc.ahead import Ahead, rendering_ahead
from tasks.render.citeproc.bibliography import (
    MAX_BIBLIOGRAPHY_ITEMS,
    Bibliography,
    Entry,
    bibliography_skipped,
    render_bibliographies,
    render_bibliography,
)
from tasks.render.citeproc.formats import (
    UNCONFIRMED_HEADING,
    UNCONFIRMED_NOTE,
    to_html,
    to_markdown,
    to_text,
)
from tasks.render.citeproc.items import pandoc_item
from tasks.render.citeproc.pandoc import Formatted, RenderError, stop_all_pandoc
from tasks.render.citeproc.styles import STYLES, style_format

__all__ = [
    "MAX_BIBLIOGRAPHY_ITEMS",
    "STYLES",
    "UNCONFIRMED_HEADING",
    "UNCONFIRMED_NOTE",
    "Ahead",
    "Bibliography",
    "Entry",
    "Formatted",
    "RenderError",
    "bibliography_skipped",
    "pandoc_item",
    "render_bibliographies",
    "render_bibliography",
    "rendering_ahead",
    "stop_all_pandoc",
    "style_format",
    "to_html",
    "to_markdown",
    "to_text",
]
