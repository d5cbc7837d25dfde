"""Markdown research reports: the reference list, identifiers written in the body, and the claims.

- The reference list is the list under a heading such as "References", "Bibliography", "Sources"
  or "Works cited" (to the next heading). Items may be written `1. ...`, `[1] ...`, `- [1] ...`
  (unnumbered bullets are numbered by position); each is a free-text Reference (raw = the item as
  written, identifiers found in it), entry_key `[n]`.
- Body text is every other paragraph (code blocks skipped), cut into sentences. A sentence that
  cites `[n]` markers (also `[1, 3]`, `[2-4]`) or writes a DOI/PMID/URL inline is a Claim with id
  `p<paragraph>-s<sentence>` (stable for an unchanged report); the references it cites get that
  claim id in `claim_ids`. Claim.citation_ids stay empty: the flow assigns citation ids later.
- An identifier written in the body that no list item carries is a Reference of its own
  (entry_key `p3-s2:doi`); a marker with no list item of its number is an InputError.
"""

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from models.audit import Claim, Identifiers, InputError, ReadResult, Reference
from tasks.identifiers import find_identifiers, normalize_doi, normalize_pmid, normalize_url
from tasks.read.common import free_text_item, make_reference, read_each
from tasks.read.text import UnreadableFileError, read_text

FORMAT = "markdown"

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s*(?:\*\*|__)([^*_]+?)(?:\*\*|__):?\s*$")
_REFERENCE_HEADINGS = re.compile(
    r"^(references?|bibliography|sources|works cited|citations|literature( cited)?|"
    r"reference list|cited works)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]\s+)?(?:\[(\d+)\]|(\d+)[.)])\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKER = re.compile(r"\[(\d+(?:\s*[-\u2013,;]\s*\d+)*)\](?!\()")
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\bet al\.)(?<!\be\.g\.)(?<!\bi\.e\.)\s+(?=[A-Z0-9\[(\"'])"
)
_BODY_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+")
_BODY_PMID = re.compile(r"\bPMID\s*:?\s*\d{1,9}\b", re.IGNORECASE)
_BODY_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.IGNORECASE)
_MAX_RANGE = 50  # `[2-4]` expands; a typo like `[2-4000]` must not


@dataclass
class _ListItem:
    number: int
    line: int
    text: str


@dataclass
class _Report:
    items: list[_ListItem] = field(default_factory=list)
    paragraphs: list[tuple[int, str]] = field(default_factory=list)  # (first line, text)


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_markdown_file)


def detect(path: Path, head: str) -> bool:
    if path.suffix.lower() in (".md", ".markdown"):
        return True
    return any(_HEADING.match(line) for line in head.splitlines())


def read_markdown_file(path: Path) -> ReadResult:
    result = ReadResult()
    try:
        report = _split_report(read_text(path))
    except UnreadableFileError as exc:
        result.errors.append(exc.as_input_error(path))
        return result
    by_number: dict[int, Reference] = {}
    for item in report.items:
        key = f"[{item.number}]"
        if item.number in by_number:
            reason = f"reference {key} is listed twice; the first is kept"
            result.errors.append(_error(path, key, item.line, reason))
            continue
        ids = find_identifiers(item.text)
        reference = make_reference(
            free_text_item(key, item.text, ids), path, key, item.line, raw=item.text, ids=ids
        )
        by_number[item.number] = reference
        result.references.append(reference)

    for claim_id, line, sentence in _sentences(report.paragraphs):
        cited = _cited_references(path, claim_id, line, sentence, by_number, result)
        if not cited:
            continue
        result.claims.append(Claim(claim_id=claim_id, claim_text=sentence, source_file=str(path)))
        for reference in cited:
            if claim_id not in reference.claim_ids:
                reference.claim_ids.append(claim_id)
    return result


def _cited_references(
    path: Path,
    claim_id: str,
    line: int,
    sentence: str,
    by_number: dict[int, Reference],
    result: ReadResult,
) -> list[Reference]:
    """The list items a sentence's markers name, and its inline identifiers (matched to a list
    item when one carries the same identifier, else read as references of their own)."""
    cited = []
    for marker in _MARKER.finditer(sentence):
        for number in _marker_numbers(marker.group(1)):
            if number in by_number:
                cited.append(by_number[number])
            else:
                reason = f"cites [{number}], which the reference list does not have"
                result.errors.append(_error(path, claim_id, line, reason))
    for kind, ids in _inline_identifiers(sentence):
        known = _find_by_identifier(result.references, ids)
        if known is None:
            key = f"{claim_id}:{kind}"
            text = ids.doi or ids.pmid or ids.url or ""
            known = make_reference(free_text_item(key, text, ids), path, key, line, ids=ids)
            result.references.append(known)
        cited.append(known)
    return cited


def _split_report(text: str) -> _Report:
    report = _Report()
    in_references = False
    in_code = False
    paragraph: list[str] = []
    paragraph_line = 0
    current: _ListItem | None = None

    def end_paragraph() -> None:
        if paragraph:
            report.paragraphs.append((paragraph_line, " ".join(paragraph)))
            paragraph.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
            end_paragraph()
            continue
        if in_code:
            continue
        heading = _HEADING.match(line) or _BOLD_HEADING.match(line)
        if heading:
            end_paragraph()
            current = None
            title = heading.group(heading.lastindex or 1).strip()
            in_references = _REFERENCE_HEADINGS.match(title) is not None
            continue
        if in_references:
            if not line.strip():
                current = None
            elif item := _LIST_ITEM.match(line):
                current = _ListItem(int(item.group(1) or item.group(2)), number, item.group(3))
                report.items.append(current)
            elif bullet := _BULLET.match(line):
                current = _ListItem(len(report.items) + 1, number, bullet.group(1))
                report.items.append(current)
            elif current is not None:  # a wrapped item goes on on the next line
                current.text += " " + line.strip()
            continue
        if not line.strip():
            end_paragraph()
            continue
        if not paragraph:
            paragraph_line = number
        paragraph.append(line.strip())
    end_paragraph()
    return report


def _sentences(paragraphs: list[tuple[int, str]]) -> Iterator[tuple[str, int, str]]:
    for p, (line, text) in enumerate(paragraphs, start=1):
        for s, sentence in enumerate(_SENTENCE_END.split(text), start=1):
            if sentence.strip():
                yield f"p{p}-s{s}", line, sentence.strip()


def _marker_numbers(marker: str) -> list[int]:
    """`1, 3` -> [1, 3]; `2-4` -> [2, 3, 4]."""
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", marker):
        bounds = [int(n) for n in re.split(r"\s*[-\u2013]\s*", part)]
        low, high = bounds[0], bounds[-1]
        if low < high <= low + _MAX_RANGE:
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend(dict.fromkeys((low, high)))
    return numbers


def _inline_identifiers(sentence: str) -> Iterator[tuple[str, Identifiers]]:
    without_markers = _MARKER.sub(" ", sentence)
    for found in _BODY_DOI.finditer(without_markers):
        if doi := normalize_doi(found.group(0)):
            yield "doi", Identifiers(doi=doi)
    for found in _BODY_PMID.finditer(without_markers):
        if pmid := normalize_pmid(found.group(0)):
            yield "pmid", Identifiers(pmid=pmid)
    for found in _BODY_URL.finditer(without_markers):
        written = found.group(0).rstrip(".,;:")
        if "doi.org/" not in written.lower() and (url := normalize_url(written)):
            yield "url", Identifiers(url=url)


def _find_by_identifier(references: list[Reference], ids: Identifiers) -> Reference | None:
    for reference in references:
        if (
            (ids.doi and reference.ids.doi == ids.doi)
            or (ids.pmid and reference.ids.pmid == ids.pmid)
            or (ids.url and reference.ids.url == ids.url)
        ):
            return reference
    return None


def _error(path: Path, key: str, line: int, reason: str) -> InputError:
    return InputError(source_file=str(path), entry_key=key, line=line, reason=reason)
