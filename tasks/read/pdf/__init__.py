"""A paper's PDF: its reference list read as free-text references, its in-text citations as
claims (the sentence that carries each marker), and the paper itself as the job's subject.

- layout.py: the text as lines in reading order (PDFium through pypdfium2), running headers and
  footers left out, ligatures and TeX's accents undone.
- references.py: the reference lists (one per heading; a thesis has one per chapter) split into
  one string per reference.
- citations.py: the body's markers (`[3]`, `[3–5, 9]`, superscripts, `(Smith et al., 2020)`,
  `Smith et al. [3]`) linked to the list, their sentences as claims.
- subject.py: the paper's own DOI, title and authors.

Each reference is read as the free-text reader reads a line (plaintext.identifiers_in_line,
common.free_text_item), keyed
`p7 [12]`: the page its entry starts on and its label (`p7 #3` for the third of an unlabelled
list), so a reviewer finds it in the PDF.

What cannot be read is one line naming the file (`refusal`, asked before a job runs): an
encrypted or damaged PDF, one without a text layer (a scan: no OCR here), one with no
reference list, or a list no reference could be read from.
"""

from collections.abc import Sequence
from pathlib import Path

from models.audit import InputError, ReadResult
from tasks.read import PDF_MAGIC
from tasks.read.common import free_text_item, make_reference
from tasks.read.pdf.layout import Document, PdfUnreadable, read_document
from tasks.read.pdf.references import ReferenceList, is_heading, reference_lists
from tasks.read.pdf.subject import subject
from tasks.read.plaintext import identifiers_in_line

FORMAT = "pdf"


def detect(path: Path, head: str) -> bool:
    return head.startswith(PDF_MAGIC.decode())


def read(paths: Sequence[Path]) -> ReadResult:
    result = ReadResult()
    for path in paths:
        result.extend(read_pdf(path))
    return result


def read_pdf(path: Path) -> ReadResult:
    from tasks.read.pdf.citations import cited

    try:
        document = read_document(path, kept=is_heading)
    except PdfUnreadable as exc:
        return ReadResult(errors=[InputError(source_file=str(path), reason=str(exc))])
    lists = reference_lists(document.lines)
    reason = _unread(document, lists)
    if reason is not None:
        return ReadResult(errors=[InputError(source_file=str(path), reason=reason)])
    first = lists[0].start - (lists[0].heading is not None)
    result = ReadResult(subjects=[subject(path, document, first)])
    keyed = []
    for listed in lists:
        refs = {}
        for position, entry in enumerate(listed.entries, start=1):
            label = f"[{entry.label}]" if entry.label else f"#{position}"
            key = f"p{entry.page} {label}"
            ids = identifiers_in_line(entry.text)
            item = free_text_item(key, entry.text, ids)
            reference = make_reference(item, path, key, raw=entry.text, ids=ids)
            refs[entry.label or str(position)] = reference
            result.references.append(reference)
        keyed.append((listed, refs))
    result.extend(cited(path, document, keyed))
    return result


def refusal(path: Path) -> str | None:
    """Why the PDF cannot be audited, or None: one line's reason."""
    try:
        document = read_document(path, kept=is_heading)
    except PdfUnreadable as exc:
        return str(exc)
    return _unread(document, reference_lists(document.lines))


def _unread(document: Document, lists: Sequence[ReferenceList]) -> str | None:
    if not document.lines:
        return "a PDF with no text layer (a scanned paper?): citeaudit does no OCR"
    if not lists:
        return "a PDF with no reference list found (no References or Bibliography heading)"
    if not any(listed.entries for listed in lists):
        page = lists[0].heading.page if lists[0].heading else "?"
        return f"a PDF whose reference list (page {page}) yields no reference"
    return None


def is_pdf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(PDF_MAGIC)) == PDF_MAGIC
    except OSError:
        return False
