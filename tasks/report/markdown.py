"""Markdown that renders as exactly the text it was given: report.md's one escaper.

Every value is escaped (CommonMark's backslash escape for ASCII punctuation that can open
markup), links are written only for safe schemes (links.py), and pandoc's bibliography HTML is
converted back to Markdown through the same escaper, so a DOI holding `"><img onerror=…>` stays
text in the link's label and percent-encoded in its target."""

import re
from html.parser import HTMLParser

from tasks.report.links import safe_url

# Markdown punctuation that can start markup inside a line: emphasis, code, links and images,
# raw HTML and autolinks, entities, tables, strikethrough, headings in list items. An underscore
# between two letters or digits (`not_found`) can neither open nor close emphasis: left as it is.
_SPECIAL = re.compile(r"[\\`*{}\[\]()<>#+!|&~]|(?<![^\W_])_|_(?![^\W_])")
# Block markers matter only where the text starts a line (a list item, a setext underline).
_LEADING_MARKER = re.compile(r"^(\s*)(?:(-|=+)|(\d+)([.)]))(?=\s|$)")


def _escape(text: str) -> str:
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def _one_line(markdown: str) -> str:
    line = " ".join(markdown.split())
    return _LEADING_MARKER.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"),
        line,
    )


def markdown_text(value: object) -> str:
    """Any value as Markdown that renders as exactly its text, on one line: a title's
    `![x](javascript:…)` or `<img onerror=…>` is shown, never run."""
    return _one_line(_escape("" if value is None else str(value)))


def markdown_code(value: object) -> str:
    """A code span (an entry key, a file name) showing exactly the value on one line: fenced by
    one backtick more than the longest run inside, padded when it starts or ends with one."""
    text = " ".join(("" if value is None else str(value)).split())
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _link(label: str, url: str | None) -> str:
    """A link from an already escaped label, when the url is safe; else the label alone."""
    target = safe_url(url)
    return f"[{label}](<{target}>)" if target and label else label


def markdown_link(text: object, url: str | None) -> str:
    """`[text](<url>)` when the url is safe, else the text alone (escaped either way)."""
    return _link(markdown_text(text), url)


class _FromHtml(HTMLParser):
    _WRAP = {"i": "*", "em": "*", "b": "**", "strong": "**"}

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[tuple[str, str | None, list[str]]] = [("", None, [])]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._WRAP or tag == "a":
            self.frames.append((tag, dict(attrs).get("href"), []))

    def handle_endtag(self, tag: str) -> None:
        if len(self.frames) == 1 or self.frames[-1][0] != tag:
            return
        tag, href, parts = self.frames.pop()
        inner = "".join(parts)
        if tag == "a":
            text = _link(inner.strip(), href)
        else:
            mark = self._WRAP[tag]
            text = f"{mark}{inner.strip()}{mark}" if inner.strip() else inner
        self.frames[-1][2].append(text)

    def handle_data(self, data: str) -> None:
        self.frames[-1][2].append(_escape(data))

    def markdown(self) -> str:
        while len(self.frames) > 1:  # an element left open: its text, unwrapped
            _, _, parts = self.frames.pop()
            self.frames[-1][2].extend(parts)
        return _one_line("".join(self.frames[0][2]))


def markdown_from_html(fragment: str) -> str:
    """An HTML fragment (pandoc citeproc's entry) as one line of Markdown: text escaped, italics
    and bold kept, links kept only for safe schemes, every other tag dropped."""
    parser = _FromHtml()
    parser.feed(fragment)
    parser.close()
    return parser.markdown()
