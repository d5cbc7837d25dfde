"""Files that are not bibliographies, told by their first bytes: refused as input errors before
a job runs (an empty success would look like a clean bibliography), and HTML read as the text a
browser shows. The standard library alone, but for a PDF (tasks/read/pdf says why one cannot be
read): the CLI refuses a missing or unreadable file before any reader loads."""

import codecs
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from tasks.errors import UsageError
from tasks.read import PDF_MAGIC

# The byte order marks text may start with, and the codec that reads what follows
# (tasks/read/text.py decodes by them).
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_IMAGES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"BM", "a BMP image"),
)
# A BibTeX entry's start (not @string/@preamble/@comment): how a BibTeX file is told by content.
BIBTEX_ENTRY = re.compile(
    r"^[^\S\n]*+@\s*+(?!string\b|preamble\b|comment\b)[a-z]++\s*+[{(]", re.I | re.M
)
_OFFICE = {".docx": "a Word document", ".odt": "an OpenDocument text", ".xlsx": "a spreadsheet"}
_ADVICE = "export its references as BibTeX, RIS or CSL-JSON, or save them as plain text"


# Why a PDF cannot be read, or None (tasks/read/pdf.refusal).
PdfRefusal = Callable[[Path], str | None]


class NotABibliography(UsageError):
    """An input file that holds no bibliography: the message names the file and what it is."""


def refusal(path: Path, pdf_refusal: PdfRefusal | None = None) -> str | None:
    """Why `path` cannot be audited as a bibliography, or None if it may be one; a PDF is
    judged by `pdf_refusal` (tasks/read/pdf.refusal: reading it loads PDFium), else let
    through to its reader."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except FileNotFoundError:
        return "no such input file"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not head.strip():
        return "the file is empty"
    if head.startswith(PDF_MAGIC):
        return pdf_refusal(path) if pdf_refusal else None
    if head.startswith(b"PK\x03\x04"):
        what = _OFFICE.get(path.suffix.lower(), "a ZIP archive")
        return f"{what}, not a bibliography: {_ADVICE}"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return f"a WebP image, not a bibliography: {_ADVICE}"
    for magic, what in _IMAGES:
        if head.startswith(magic):
            return f"{what}, not a bibliography: {_ADVICE}"
    if is_binary(head):
        return f"binary content (NUL bytes), not a bibliography: {_ADVICE}"
    return None


def is_binary(head: bytes) -> bool:
    """Whether a file starting with `head` is binary: text never holds a NUL byte, unless it is
    UTF-16 or UTF-32 with its BOM."""
    return b"\x00" in head and not head.startswith(tuple(bom for bom, _ in BOMS))


def looks_like_bibtex(path: Path, head: str) -> bool:
    """A `.bib` file, or text whose head (its first 4,096 characters) starts an entry."""
    return path.suffix.lower() == ".bib" or BIBTEX_ENTRY.search(head) is not None


def head_text(path: Path) -> str:
    """The first 4,096 characters of a text file, for telling its kind: decoded by its BOM, else
    as Latin-1 (which decodes any byte: the ASCII a format is told by reads right in UTF-8 too)."""
    with path.open("rb") as handle:
        head = handle.read(16_384)
    codec = next((name for bom, name in BOMS if head.startswith(bom)), "latin-1")
    return head.decode(codec, errors="replace")[:4096]


def check_bibliographies(paths: list[Path], pdf_refusal: PdfRefusal | None = None) -> None:
    """Raise NotABibliography for the first input that is missing or holds no bibliography (a
    PDF's, by `pdf_refusal`)."""
    for path in paths:
        reason = refusal(path, pdf_refusal)
        if reason is not None:
            raise NotABibliography(f"{path}: {reason}")


def doi_on_first_page(pdf: Path) -> str | None:
    """The DOI printed on a PDF's first page (a retrieved document's own DOI)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    from tasks.identifiers import find_identifiers

    try:
        reader = PdfReader(pdf)
        text = reader.pages[0].extract_text() if reader.pages else ""
    except (PyPdfError, OSError, ValueError):
        return None
    return find_identifiers(text).doi if text else None


def looks_like_html(text: str) -> bool:
    start = text.lstrip()[:200].lower()
    return start.startswith(("<!doctype html", "<html")) or (
        start.startswith("<") and "<body" in text[:4096].lower()
    )


class _TextOf(HTMLParser):
    """The text of an HTML page, a line per block element (a list item is a line, as a
    reference per line is); scripts and styles dropped."""

    BLOCKS = frozenset(
        ("p", "li", "div", "br", "tr", "td", "th", "dd", "dt", "blockquote", "pre")
        + ("h1", "h2", "h3", "h4", "h5", "h6", "section", "article")
    )
    HIDDEN = frozenset(("script", "style", "head", "title"))

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
