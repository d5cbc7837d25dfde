"""Plain-text lists: one identifier or free-text reference per line; blank lines and `#` comments
are skipped. Any written form of a DOI (`doi:`, `https://doi.org/`, `DOI 10.…`, trailing
punctuation), PMID (`PMID: 123`, or a bare number of 1-8 digits alone on its line), PMCID, arXiv id
or URL is recognised; anything else is a free-text reference kept in `raw` for the matcher.
entry_key is the line number.
"""

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote

from models.audit import Identifiers, ReadResult, Reference
from tasks.identifiers import find_identifiers, normalize_pmid
from tasks.read.common import (
    free_text_item,
    make_reference,
    merged,
    stream_each,
)
from tasks.read.text import UnreadableFileError, text_lines

FORMAT = "plaintext"

_BARE_PMID = re.compile(r"\d{1,8}")


def read(paths: Sequence[Path]) -> ReadResult:
    return merged(stream(paths))


def stream(paths: Sequence[Path]) -> Iterator[ReadResult]:
    return stream_each(paths, stream_plaintext_file)


def detect(path: Path, head: str) -> bool:
    """The catch-all: any text is a list of lines."""
    return True


def stream_plaintext_file(path: Path) -> Iterator[ReadResult]:
    """A result per line read (the file is read as it is consumed)."""
    try:
        lines = text_lines(path)
    except UnreadableFileError as exc:
        yield ReadResult(errors=[exc.as_input_error(path)])
        return
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        yield ReadResult(references=[reference_from_line(line, path, number)])


def reference_from_line(line: str, source: Path | str, number: int) -> Reference:
    """One line of a list as a reference (entry key: its number); the agent service builds
    what agents add the same way, so a job they build audits alike as a list."""
    ids = identifiers_in_line(line)
    key = str(number)
    item = free_text_item(key, line, ids)
    return make_reference(item, Path(source), key, number, raw=line, ids=ids)


def identifiers_in_line(line: str) -> Identifiers:
    if _BARE_PMID.fullmatch(line):
        return Identifiers(pmid=normalize_pmid(line))
    if "doi.org/" in line.lower():  # resolvers' links may be percent-encoded: 10.1038%2Fsrep16696
        line = unquote(line)
    return find_identifiers(line)
