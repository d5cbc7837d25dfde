"""A PDF given as input: the paper itself, cited by the DOI on its first page (tasks/read/kinds.py
refuses a PDF without one before the job runs)."""

from collections.abc import Sequence
from pathlib import Path

from models.audit import Identifiers, InputError, ReadResult
from tasks.read.common import free_text_item, make_reference
from tasks.read.kinds import PDF_MAGIC, doi_on_first_page

FORMAT = "pdf"


def detect(path: Path, head: str) -> bool:
    return head.startswith(PDF_MAGIC.decode())


def read(paths: Sequence[Path]) -> ReadResult:
    result = ReadResult()
    for path in paths:
        doi = doi_on_first_page(path)
        if doi is None:
            reason = "a PDF with no DOI on its first page, not a bibliography"
            result.errors.append(InputError(source_file=str(path), reason=reason))
            continue
        ids = Identifiers(doi=doi)
        result.references.append(
            make_reference(free_text_item("doi", f"doi:{doi}", ids), path, "doi", raw=None, ids=ids)
        )
    return result


def is_pdf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(PDF_MAGIC)) == PDF_MAGIC
    except OSError:
        return False
