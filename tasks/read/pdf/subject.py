"""The paper a PDF is: its own DOI (the metadata's Subject or Keywords, else the first page's
text before any reference list), its title (the metadata's, unless it is a file name a tool
wrote, else the first page's largest type) and its authors (the metadata's Author)."""

import re
import statistics
from collections.abc import Sequence
from pathlib import Path

from models.audit import Subject
from tasks.identifiers import find_identifiers
from tasks.read.pdf.layout import Document, Line, clean

# What tools write as a title when the author gave none: a file name, `Microsoft Word - x.docx`.
_TOOL_TITLE = re.compile(
    r"(?:\.(?:dvi|tex|pdf|docx?|odt|rtf)$|^microsoft word\b|^untitled\b)", re.I
)
_TITLE_LINES = 4
_AUTHOR_SEPARATORS = re.compile(r"\s*(?:;|,\s*and\s+|\band\b|,)\s*")


def subject(path: Path, document: Document, first_list: int | None) -> Subject:
    """`first_list`: the index of the first reference list's first line (its DOIs are others')."""
    meta = document.metadata
    doi = find_identifiers(" ".join((meta.get("Subject", ""), meta.get("Keywords", "")))).doi
    front = [line for line in document.lines[:first_list] if line.page == 1]
    if doi is None:
        doi = find_identifiers(" ".join(clean(line.text) for line in front)).doi
    title = meta.get("Title", "").strip()
    if not title or _TOOL_TITLE.search(title):
        title = _largest_type(front)
    authors = [a for a in _AUTHOR_SEPARATORS.split(meta.get("Author", "")) if a.strip()]
    return Subject(source_file=str(path), doi=doi, title=title or None, authors=authors)


def _largest_type(lines: Sequence[Line]) -> str:
    """The first run of lines in the page's largest type (a title may wrap), if that type is
    larger than the page's text."""
    if not lines:
        return ""
    largest = max(line.size for line in lines)
    if largest <= statistics.median(line.size for line in lines):
        return ""
    run: list[str] = []
    for line in lines:
        if line.size >= largest - 0.1:
            run.append(clean(line.text))
        elif run:
            break
    return " ".join(run[:_TITLE_LINES])
