"""A bibliography as a file: plain text, Markdown or a small HTML page. Entries no registry
confirmed follow the others under a heading of their own, each marked with its status, whatever
the style."""

import html
from collections.abc import Mapping

from tasks.render.citeproc.bibliography import Bibliography, Entry
from tasks.render.citeproc.styles import style_locale

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
