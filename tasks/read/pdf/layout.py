"""A PDF's text as lines with their places, in reading order, through PDFium (pypdfium2).

PDFium gives each page's characters in the order the page draws them (for TeX's one- and
two-column pages, and most others, the reading order) with their boxes and font sizes. A line
is cut where a character leaves the current line's height, jumps back to the left, or jumps far
right (the next column at the same height); PDFium's own end-of-line hyphen mark ends a line
too. Running headers and footers (the top- and bottom-most line of a page, when the same words
come back on other pages, or a bare page number) are left out. Superscript runs are kept in
`⁽…⁾`, so a reader can tell `networks⁽12⁾` from `networks12`.

Bounds for hostile files: at most MAX_PAGES pages and MAX_CHARS characters are read.
"""

import ctypes
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2
import pypdfium2.raw as pdfium

MAX_PAGES = 2_000
MAX_CHARS = 20_000_000
SUPER_OPEN, SUPER_CLOSE = "\u207d", "\u207e"
HYPHEN_MARK = "\x02"  # PDFium's mark for a hyphen that ends a line


class PdfUnreadable(Exception):
    """Why a PDF's text cannot be read: encrypted, damaged, or no text layer."""


@dataclass
class Line:
    page: int  # from 1
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float  # the font size most of its characters have
    page_width: float
    hyphenated: bool = False  # it ended with a hyphen (PDFium's mark or a plain one)

    @property
    def column(self) -> int:
        """0 for the left (or only) column, 1 for the right one."""
        middle = self.page_width / 2
        return 1 if self.x0 >= middle - 0.05 * self.page_width else 0


@dataclass
class _Char:
    text: str
    x0: float = 0.0
    x1: float = 0.0
    bottom: float = 0.0
    top: float = 0.0
    size: float = 0.0
    boxed: bool = False


@dataclass
class Document:
    lines: list[Line] = field(default_factory=list)
    pages: int = 0
    chars: int = 0
    metadata: dict[str, str] = field(default_factory=dict)


# TeX's Cork (T1) encoding puts ligatures and dashes in control slots; PDFium passes them
# through when a font maps no Unicode for them.
_CORK = str.maketrans(
    {
        "\x10": "\u201c",
        "\x11": "\u201d",
        "\x15": "\u2013",
        "\x16": "\u2014",
        "\x19": "\u0131",
        "\x1b": "ff",
        "\x1c": "fi",
        "\x1d": "fl",
        "\x1e": "ffi",
        "\x1f": "ffl",
    }
)
# Spacing accents as TeX's OT1 fonts draw them, before the letter (after it, for the cedilla and
# ogonek), and the combining mark each stands for.
_ACCENTS = {
    "\u00b4": "\u0301",
    "`": "\u0300",
    "\u00a8": "\u0308",
    "\u02c6": "\u0302",
    "^": "\u0302",
    "\u02dc": "\u0303",
    "~": "\u0303",
    "\u02c7": "\u030c",
    "\u02d8": "\u0306",
    "\u00af": "\u0304",
    "\u02d9": "\u0307",
    "\u02da": "\u030a",
    "\u02dd": "\u030b",
}
_TRAILING_ACCENTS = {"\u00b8": "\u0327", "\u02db": "\u0328"}
_ACCENT_BEFORE = re.compile("([" + re.escape("".join(_ACCENTS)) + r"])\s?([A-Za-z\u0131])")
_ACCENT_AFTER = re.compile(r"([A-Za-z])([" + "".join(_TRAILING_ACCENTS) + "])")
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """Ligatures undone, TeX's separate accents put on their letters, spaces collapsed."""
    text = text.translate(_CORK)
    text = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    text = _ACCENT_BEFORE.sub(lambda m: _accented(m.group(2), _ACCENTS[m.group(1)]), text)
    text = _ACCENT_AFTER.sub(lambda m: _accented(m.group(1), _TRAILING_ACCENTS[m.group(2)]), text)
    return _SPACES.sub(" ", text).strip()


def _accented(letter: str, mark: str) -> str:
    letter = "i" if letter == "\u0131" else letter
    return unicodedata.normalize("NFC", letter + mark)


def read_document(path: Path, kept: Callable[[Line], bool] = lambda line: False) -> Document:
    """The PDF's lines in reading order, running headers and footers left out (never a line
    `kept`)."""
    try:
        pdf = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:
        raise PdfUnreadable(_why(exc)) from exc
    try:
        document = Document(pages=len(pdf), metadata=_metadata(pdf))
        if document.pages > MAX_PAGES:
            raise PdfUnreadable(f"more than {MAX_PAGES:,} pages")
        for number in range(document.pages):
            page = pdf[number]
            try:
                width = page.get_width()
                textpage = page.get_textpage()
                try:
                    chars = list(_chars(textpage))
                finally:
                    textpage.close()
            finally:
                page.close()
            document.chars += len(chars)
            if document.chars > MAX_CHARS:
                raise PdfUnreadable(f"more than {MAX_CHARS:,} characters of text")
            document.lines += _lines(chars, number + 1, width)
    finally:
        pdf.close()
    document.lines = _without_running_lines(document.lines, kept)
    return document


def _why(exc: pypdfium2.PdfiumError) -> str:
    if getattr(exc, "err_code", None) == pdfium.FPDF_ERR_PASSWORD:
        return "encrypted (a password is needed to open it)"
    if getattr(exc, "err_code", None) == pdfium.FPDF_ERR_SECURITY:
        return "encrypted with an unsupported security handler"
    return f"not a readable PDF ({exc})"


def _metadata(pdf: pypdfium2.PdfDocument) -> dict[str, str]:
    try:
        return {k: v.strip() for k, v in pdf.get_metadata_dict(skip_empty=True).items()}
    except (pypdfium2.PdfiumError, UnicodeDecodeError):
        return {}


def _chars(textpage: pypdfium2.PdfTextPage) -> Iterator[_Char]:
    raw = textpage.raw
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    for index in range(textpage.count_chars()):
        code = pdfium.FPDFText_GetUnicode(raw, index)
        text = chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
        if pdfium.FPDFText_IsGenerated(raw, index) == 1 or text.isspace():
            yield _Char(text)
            continue
        pdfium.FPDFText_GetCharBox(
            raw,
            index,
            ctypes.byref(left),
            ctypes.byref(right),
            ctypes.byref(bottom),
            ctypes.byref(top),
        )
        size = pdfium.FPDFText_GetFontSize(raw, index)
        yield _Char(text, left.value, right.value, bottom.value, top.value, size, boxed=True)


def _lines(chars: list[_Char], page: int, width: float) -> list[Line]:
    lines: list[Line] = []
    current: list[_Char] = []

    def end(hyphenated: bool = False) -> None:
        line = _line(current, page, width, hyphenated)
        if line is not None:
            lines.append(line)
        current.clear()

    for char in chars:
        if char.text in "\r\n":
            end()
            continue
        if char.text == HYPHEN_MARK or char.text == "\ufffe":
            end(hyphenated=True)
            continue
        if char.boxed and current and _leaves_line(current, char):
            end()
        current.append(char)
    end()
    return lines


def _leaves_line(line: list[_Char], char: _Char) -> bool:
    boxed = [c for c in line if c.boxed]
    if not boxed:
        return False
    last = boxed[-1]
    size = max(last.size, char.size, 1.0)
    bottom = min(c.bottom for c in boxed[-8:])
    top = max(c.top for c in boxed[-8:])
    overlap = min(char.top, top) - max(char.bottom, bottom)
    height = max(min(char.top - char.bottom, top - bottom), 0.1)
    if overlap <= 0.2 * height:
        return True
    return char.x0 < last.x0 - size or char.x0 > last.x1 + 3 * size


def _line(chars: list[_Char], page: int, width: float, hyphenated: bool) -> Line | None:
    boxed = [c for c in chars if c.boxed]
    if not boxed:
        return None
    size = Counter(round(c.size * 2) / 2 for c in boxed).most_common(1)[0][0]
    full = [c for c in boxed if c.size >= 0.9 * size] or boxed
    baseline = statistics.median(c.bottom for c in full)
    parts: list[str] = []
    raised = False
    for char in chars:
        up = (
            char.boxed
            and char.size < 0.85 * size
            and char.bottom > baseline + 0.2 * size
            and (char.text.isdigit() or (raised and char.text in ",-\u2013\x15"))
        )
        if up != raised and char.boxed:
            parts.append(SUPER_OPEN if up else SUPER_CLOSE)
            raised = up
        parts.append(char.text)
    if raised:
        parts.append(SUPER_CLOSE)
    text = "".join(parts)
    if text.rstrip().endswith("-"):
        hyphenated, text = True, text.rstrip()[:-1]
    return Line(
        page=page,
        text=text,
        x0=min(c.x0 for c in boxed),
        x1=max(c.x1 for c in boxed),
        top=max(c.top for c in full),
        bottom=min(c.bottom for c in full),
        size=size,
        page_width=width,
        hyphenated=hyphenated,
    )


_PAGE_NUMBER = re.compile(r"^(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?$", re.I)
_DIGITS = re.compile(r"\d+")


def _without_running_lines(lines: list[Line], kept: Callable[[Line], bool]) -> list[Line]:
    """The lines less each page's top- and bottom-most line where it is a page number, comes
    back (its digits aside) at the top or bottom of other pages, or (a book's header naming
    the section) stands apart above the page's text, more than 1.8 times the usual line spacing
    above the next line, unless it is `kept` (a reference list's heading)."""
    edges: dict[int, set[int]] = {}
    by_page: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        by_page.setdefault(line.page, []).append(index)
    shapes: Counter[str] = Counter()
    apart: dict[int, float] = {}  # how far the top line stands above the next, per page
    tops: dict[int, float] = {}  # the top line's top, per page
    for page, indexes in by_page.items():
        highest = tops[page] = max(lines[i].top for i in indexes)
        lowest = min(lines[i].bottom for i in indexes)
        found = {i for i in indexes if lines[i].top >= highest - 1 or lines[i].bottom <= lowest + 1}
        edges[page] = found
        shapes.update({_shape(lines[i].text) for i in found})
        below = [lines[i].top for i in indexes if lines[i].top < highest - 1]
        if below:
            apart[page] = highest - max(below)
    repeated = 2 if len(by_page) < 6 else 3
    spacing = _usual_spacing(lines)
    # A header is set no larger than the text (a chapter's title, larger, is no header).
    text_size = statistics.median(line.size for line in lines) if lines else 0.0
    dropped = {
        i
        for page, found in edges.items()
        for i in found
        if _PAGE_NUMBER.match(clean(lines[i].text))
        or shapes[_shape(lines[i].text)] >= repeated
        or (
            lines[i].top >= tops[page] - 1
            and lines[i].size <= text_size
            and apart.get(page, 0) > 1.8 * spacing
            and not kept(lines[i])
        )
    }
    return [line for index, line in enumerate(lines) if index not in dropped]


def _usual_spacing(lines: list[Line]) -> float:
    """The median distance between consecutive lines' baselines in a column."""
    steps = [
        before.bottom - line.bottom
        for before, line in zip(lines, lines[1:], strict=False)
        if (before.page, before.column) == (line.page, line.column)
        and 0 < before.bottom - line.bottom < 4 * line.size
    ]
    return statistics.median(steps) if steps else 12.0


def _shape(text: str) -> str:
    return _DIGITS.sub("#", clean(text).lower())
