"""Which PDF library the PDF reader is built on: CPU time to get each page's characters with
their positions, and how many of the printed reference titles the plain text (lines joined,
end-of-line hyphens undone) holds, per library, on the tuning fixtures (tests/fixtures/pdf/tune).
Libraries not installed are skipped: run it where all are (`uv run --with pdfplumber
--with pdfminer.six python bench/pdf_libraries.py`)."""

import importlib.util
import re
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.pdf_read import printed_titles, squeezed  # noqa: E402

FIXTURES = REPO / "tests/fixtures/pdf/tune"


def _pypdfium2(path: Path) -> str:
    import pypdfium2

    document = pypdfium2.PdfDocument(path)
    parts = []
    for page in document:
        text = page.get_textpage()
        count = text.count_chars()
        for index in range(count):
            text.get_charbox(index)
        parts.append(text.get_text_range())
    return "\n".join(parts)


def _pdfminer(path: Path) -> str:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTTextContainer

    parts = []
    for page in extract_pages(path):
        for element in page:
            if isinstance(element, LTTextContainer):
                sum(1 for line in element for ch in line if isinstance(ch, LTChar))
                parts.append(element.get_text())
    return "\n".join(parts)


def _pdfplumber(path: Path) -> str:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return "\n".join(page.extract_text() or "" for page in pdf.pages if page.chars is not None)


def _pypdf(path: Path) -> str:
    from pypdf import PdfReader

    positions: list[tuple[float, float]] = []

    def visit(text: str, cm: list[float], tm: list[float], font: object, size: float) -> None:
        positions.append((tm[4], tm[5]))

    return "\n".join(p.extract_text(visitor_text=visit) for p in PdfReader(path).pages)


LIBRARIES: dict[str, tuple[str, Callable[[Path], str]]] = {
    "pypdfium2": ("pypdfium2", _pypdfium2),
    "pdfminer.six": ("pdfminer", _pdfminer),
    "pdfplumber": ("pdfplumber", _pdfplumber),
    "pypdf": ("pypdf", _pypdf),
}


def plain(text: str) -> str:
    """Lines joined, an end-of-line hyphen (or pdfium's soft-hyphen mark) undone."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"[-\u00ad\x02\ufffe]\s*\r?\n", "", text)
    return squeezed(text)


def main() -> None:
    pdfs = sorted(FIXTURES.glob("*.pdf"))
    print(f"{'library':<14}{'CPU s':>8}{'titles found':>16}")
    for name, (module, extract) in LIBRARIES.items():
        if importlib.util.find_spec(module) is None:
            print(f"{name:<14}  (not installed)")
            continue
        seconds = 0.0
        found = total = 0
        for pdf in pdfs:
            start = time.process_time()
            text = plain(extract(pdf))
            seconds += time.process_time() - start
            titles = printed_titles(pdf)
            total += len(titles)
            found += sum(1 for title in titles if squeezed(title) in text)
        print(f"{name:<14}{seconds:>8.2f}{found:>9}/{total} ({found / total:.1%})")


if __name__ == "__main__":
    main()
