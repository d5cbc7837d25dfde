"""Markdown research reports: the reference list, identifiers written in the body, and the claims.

- The reference list is the list under a heading such as "References", "Bibliography", "Sources"
  or "Works cited" (to the next heading; a section number such as `2.` or `IV.` before it is
  ignored). Items may be written `1. ...`, `[1] ...`, `[1]: ...`, `- [1] ...` (unnumbered bullets
  are numbered by position); each is a free-text Reference (raw = the item as written,
  identifiers found in it), entry_key `[n]`. Footnote definitions `[^x]: ...`, wherever they
  stand, are references too (entry_key `[^x]`). A line of the list that is none of these, nor
  the wrapped continuation of an item, is an InputError.
- Body text is every other paragraph (code blocks skipped); each list item and each table row is
  a paragraph of its own. Paragraphs are cut into sentences (a marker glued to the full stop,
  `therapy.[1]`, stays with its sentence; `Fig.`, `e.g.`, `et al.` ... end none). A sentence
  that cites `[n]` markers (also `[1, 3]`, `[2-4]`, `[3]–[5]`, `[^x]`), an `(Author, Year)` /
  `(Author et al., Year)` matching one list item by first author and year, or writes a
  DOI/PMID/URL inline is a Claim with id `p<paragraph>-s<sentence>` (stable for an unchanged
  report); the references it cites get that claim id in `claim_ids`. Claim.citation_ids stay
  empty: the flow assigns citation ids later.
- An identifier written in the body that no list item carries is a Reference of its own
  (entry_key `p3-s2:doi`). A citation naming no list item (`[12]` past the end of the list, an
  author-year with no or several matching items) is an InputError, and the claim keeps it in
  `missing_citations`, where scoring counts it as a failed citation.
"""

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from models.audit import Claim, Identifiers, InputError, InputErrorKind, ReadResult, Reference
from models.csl import YEARS
from tasks.identifiers import find_identifiers, normalize_doi, normalize_pmid, normalize_url
from tasks.read.common import free_text_item, make_reference, month_number, read_each
from tasks.read.text import UnreadableFileError, read_text
from tasks.textnorm import words

FORMAT = "markdown"

# A heading's text is taken whole and its closing `#`s stripped in Python (`_heading_title`):
# a lazy `(.*?)` before `\s*#*\s*$` backtracked cubically over a long run of spaces.
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s++(.*+)$")
_BOLD_HEADING = re.compile(r"^\s*(?:\*\*|__)([^*_]+?)(?:\*\*|__):?\s*$")
_SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*[.)]?|[IVXLC]+[.)]|[ivxlc]+[.)])\s+")
# The whole heading names the list ("Literature review" is a section of the text).
_REFERENCE_HEADINGS = re.compile(
    r"^(references?|bibliography|sources( cited)?|works cited|citations|literature( cited)?|"
    r"reference list|cited works)\s*:?$",
    re.IGNORECASE,
)
# `1. text`, `[1] text`, `[1]: text` (a link definition), each maybe behind a bullet
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]\s+)?(?:\[(\d+)\]:?|(\d+)[.)])\s+(.*)$")
_FOOTNOTE = re.compile(r"^\s{0,3}\[\^([^\]\s]+)\]:\s*(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_BODY_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|")
_RULE = re.compile(r"^[\s|:\-]+$")  # a table's header rule, or a thematic break `---`
_FENCE = re.compile(r"^\s*(```|~~~)")
# `[1]`, `[1, 3]`, `[2-4]`, the IEEE range `[3]–[5]`, and footnote markers `[^x]`; not a link
_MARKER = re.compile(
    r"\[(?:(?P<numbers>\d+(?:\s*[-\u2013,;]\s*\d+)*)\](?:\s*[-\u2013]\s*\[(?P<to>\d+)\])?"
    r"|\^(?P<footnote>[^\[\]\s]++)\])(?!\()"
)
# A full stop (maybe closed by a quote or bracket, maybe followed by glued markers) before the
# next sentence's first character.
_SENTENCE_END = re.compile(
    r"[.!?][\"')]*(?:\[\^?[\w\s,;\-\u2013]+\](?:[-\u2013]\[\d+\])?)*\s+(?=[A-Z0-9\[(\"'])"
)
# Words whose full stop does not end a sentence (compared lower-cased, without the last dot).
_ABBREVIATIONS = frozenset(
    {"fig", "figs", "eq", "eqs", "ref", "refs", "cf", "vs", "approx", "e.g", "i.e", "al", "ca"}
    | {"dr", "prof", "sect", "tab", "vol", "pp"}
)
_PARENTHESES = re.compile(r"\(([^()]*\d{4}[a-z]?)\)")
# `who`: words, each space run possessive (a lazy `[^\d,;()]*?` tried `\s+` from each space).
_AUTHOR_YEAR = re.compile(rf"^(?P<who>[A-Z](?:\s*+[^\d,;()\s])*+),?\s+(?P<year>{YEARS})[a-z]?$")
ET_AL_OR_COAUTHOR = re.compile(r"(?<!\s)\s++(?:and|&|et al\.?)(?:\s|$)")
_YEAR = re.compile(rf"\b({YEARS})\b")
_BODY_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+")
_BODY_PMID = re.compile(r"\bPMID\s*+:?\s*+\d{1,9}\b", re.IGNORECASE)
_BODY_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.IGNORECASE)
_MAX_RANGE = 50  # `[2-4]` expands; a typo like `[2-4000]` must not
_QUOTED = 100  # how much of a sentence an error message quotes


@dataclass
class _ListItem:
    key: str  # `[n]` or `[^x]`
    line: int
    text: str


@dataclass
class _Report:
    items: list[_ListItem] = field(default_factory=list)
    paragraphs: list[tuple[int, str]] = field(default_factory=list)  # (first line, text)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # reference-list lines


@dataclass
class _Cited:
    """What one sentence cites: references found, and citations that name no list item."""

    references: list[Reference] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_markdown_file)


def detect(path: Path, head: str) -> bool:
    if path.suffix.lower() in (".md", ".markdown"):
        return True
    return any(_HEADING.match(line) for line in head.splitlines())


def _heading_title(line: str) -> str | None:
    """The text of a heading line (`## Refs ##`, `**Refs:**`); None for any other line."""
    if heading := _HEADING.match(line):
        return heading.group(2).rstrip().rstrip("#").strip()  # its closing `#`s dropped
    if bold := _BOLD_HEADING.match(line):
        return bold.group(1).strip()
    return None


def read_markdown_file(path: Path) -> ReadResult:
    result = ReadResult()
    try:
        report = _split_report(read_text(path))
    except UnreadableFileError as exc:
        result.errors.append(exc.as_input_error(path))
        return result
    for line, text in report.unreadable:
        reason = f"cannot read this line of the reference list: {_quote(text)}"
        result.errors.append(_error(path, None, line, reason))
    listed = _list_references(path, report.items, result)
    # A report citing by number may write "(NeurIPS 2017)" or "(Spring 2020)" as prose: there an
    # author-year naming no one list item is no citation. Only a report with no numbered
    # markers cites by author and year throughout.
    by_author_year = not any(_MARKER.search(text) for _, text in report.paragraphs)

    for claim_id, line, sentence in _sentences(report.paragraphs):
        cited = _cited(path, claim_id, line, sentence, listed, result, by_author_year)
        if cited.references or cited.missing:
            add_claim(result, path, claim_id, sentence, cited.references, cited.missing)
    return result


def add_claim(
    result: ReadResult,
    path: Path,
    claim_id: str,
    sentence: str,
    references: Sequence[Reference],
    missing: list[str],
) -> None:
    """The sentence as a claim of `result`, its id on each reference it cites."""
    claim = Claim(
        claim_id=claim_id, claim_text=sentence, source_file=str(path), missing_citations=missing
    )
    result.claims.append(claim)
    for reference in references:
        if claim_id not in reference.claim_ids:
            reference.claim_ids.append(claim_id)


def _list_references(
    path: Path, items: list[_ListItem], result: ReadResult
) -> dict[str, Reference]:
    """The reference-list items as References, by key (`[3]`, `[^1]`)."""
    by_key: dict[str, Reference] = {}
    for item in items:
        if item.key in by_key:
            reason = f"reference {item.key} is listed twice; the first is kept"
            result.errors.append(_error(path, item.key, item.line, reason))
            continue
        ids = find_identifiers(item.text)
        reference = make_reference(
            free_text_item(item.key, item.text, ids),
            path,
            item.key,
            item.line,
            raw=item.text,
            ids=ids,
        )
        by_key[item.key] = reference
        result.references.append(reference)
    return by_key


def _cited(
    path: Path,
    claim_id: str,
    line: int,
    sentence: str,
    listed: dict[str, Reference],
    result: ReadResult,
    by_author_year: bool,
) -> _Cited:
    """The list items a sentence's markers and author-years name (an author-year naming no one
    item is a missing citation only in a report citing `by_author_year`), and its inline
    identifiers (matched to a list item when one carries the same identifier, else read as
    references of their own)."""
    cited = _Cited()
    for key in marker_keys(sentence):
        if key in listed:
            cited.references.append(listed[key])
        else:
            cited.missing.append(key)
            reason = f"cites {key}, which the reference list does not have"
            result.errors.append(_error(path, claim_id, line, reason, kind="missing"))
    for written, who, year in _author_years(sentence):
        matches = [r for r in listed.values() if _first_author_and_year_match(r, who, year)]
        if len(matches) == 1:
            cited.references.append(matches[0])
            continue
        if not by_author_year:
            continue
        cited.missing.append(written)
        found = ", ".join(r.provenance.entry_key for r in matches)
        which = (
            f"{len(matches)} reference-list items match ({found})"
            if matches
            else ("no reference-list item matches")
        )
        reason = f"cites {written}, but {which} by first author and year: {_quote(sentence)}"
        result.errors.append(_error(path, claim_id, line, reason, kind="missing"))
    for kind, ids in _inline_identifiers(sentence):
        known = _find_by_identifier(result.references, ids)
        if known is None:
            key = f"{claim_id}:{kind}"
            text = ids.doi or ids.pmid or ids.url or ""
            known = make_reference(free_text_item(key, text, ids), path, key, line, ids=ids)
            result.references.append(known)
        cited.references.append(known)
    return cited


def _split_report(text: str) -> _Report:
    report = _Report()
    in_references = False
    in_code = False
    paragraph: list[str] = []
    paragraph_line = 0
    current: _ListItem | None = None  # the item a wrapped line continues

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
        title = _heading_title(line)
        if title is not None:
            end_paragraph()
            current = None
            in_references = _REFERENCE_HEADINGS.match(_SECTION_NUMBER.sub("", title)) is not None
            continue
        if footnote := _FOOTNOTE.match(line):
            end_paragraph()
            current = _ListItem(f"[^{footnote.group(1)}]", number, footnote.group(2))
            report.items.append(current)
            continue
        if in_references:
            current = _reference_line(report, current, number, line)
            continue
        if current is not None and line.startswith(("  ", "\t")) and line.strip():
            current.text += " " + line.strip()  # an indented line goes on with a footnote
            continue
        current = None
        if not line.strip() or _RULE.match(line):
            end_paragraph()
            continue
        if _TABLE_ROW.match(line):  # each table row is a claim of its own
            end_paragraph()
            report.paragraphs.append((number, _row_text(line)))
            continue
        if item := _BODY_ITEM.match(line):  # and so is each list item
            end_paragraph()
            line = item.group(1)
        if not paragraph:
            paragraph_line = number
        paragraph.append(line.strip())
    end_paragraph()
    return report


def _reference_line(
    report: _Report, current: _ListItem | None, number: int, line: str
) -> _ListItem | None:
    """Read one line of the reference list; returns the item a next line may continue."""
    if not line.strip() or _RULE.match(line):
        return None
    if item := _LIST_ITEM.match(line):
        listed = _ListItem(f"[{item.group(1) or item.group(2)}]", number, item.group(3))
    elif bullet := _BULLET.match(line):
        position = sum(1 for i in report.items if not i.key.startswith("[^")) + 1
        listed = _ListItem(f"[{position}]", number, bullet.group(1))
    elif current is not None:  # a wrapped item goes on on the next line
        current.text += " " + line.strip()
        return current
    else:
        report.unreadable.append((number, line.strip()))
        return None
    report.items.append(listed)
    return listed


def _row_text(line: str) -> str:
    """A table row's cells, joined as one sentence."""
    return " ".join(cell.strip() for cell in line.strip().strip("|").split("|") if cell.strip())


def _sentences(paragraphs: list[tuple[int, str]]) -> Iterator[tuple[str, int, str]]:
    for p, (line, text) in enumerate(paragraphs, start=1):
        for s, sentence in enumerate(split_sentences(text), start=1):
            yield f"p{p}-s{s}", line, sentence


def split_sentences(text: str) -> list[str]:
    sentences = []
    start = 0
    for end in _SENTENCE_END.finditer(text):
        if text[end.start()] == "." and _is_abbreviation(
            text[start : end.start()], text[end.end() :]
        ):
            continue
        sentences.append(text[start : end.end()].strip())
        start = end.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _is_abbreviation(before_stop: str, after: str) -> bool:
    """Whether the word before a full stop is one whose stop ends no sentence (`Fig.`, and
    `No.` before a number: "The answer is no. Smoking ..." ends one)."""
    last = before_stop.split()[-1].lstrip("([\"'").lower() if before_stop.split() else ""
    return last in _ABBREVIATIONS or (last == "no" and after[:1].isdigit())


def marker_keys(sentence: str) -> list[str]:
    """The list keys a sentence's markers name, in order: `[1, 3]` -> `[1]`, `[3]`."""
    keys = []
    for marker in _MARKER.finditer(sentence):
        if marker.group("footnote"):
            keys.append(f"[^{marker.group('footnote')}]")
            continue
        numbers = marker.group("numbers")
        if marker.group("to"):  # `[3]–[5]` is the range 3-5
            numbers += f"-{marker.group('to')}"
        keys.extend(f"[{n}]" for n in _marker_numbers(numbers))
    return keys


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


def _author_years(sentence: str) -> Iterator[tuple[str, str, str]]:
    """`(Park, 2020; Tosatto et al., 2015)` -> ("(Park, 2020)", "Park", "2020"), ...: each
    citation as written, its first author and its year. `(Section 3)`, `(March 2020)` are none."""
    for group in _PARENTHESES.finditer(sentence):
        for part in group.group(1).split(";"):
            found = _AUTHOR_YEAR.match(part.strip())
            if found is None:
                continue
            first = ET_AL_OR_COAUTHOR.split(found.group("who"))[0]
            if month_number(first) is None:
                yield f"({part.strip()})", first, found.group("year")


def _first_author_and_year_match(reference: Reference, author: str, year: str) -> bool:
    """A free-text item starts with its first author's family name (`Park YS, ...`,
    `Park, Y. S. ...`) and writes its year somewhere; the reader parses neither, so compare the
    raw text."""
    raw = reference.raw or ""
    name = words(author)
    return bool(name) and words(raw)[: len(name)] == name and year in _YEAR.findall(raw)


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


def _quote(text: str) -> str:
    shown = text if len(text) <= _QUOTED else text[: _QUOTED - 1] + "\u2026"
    return f"\u201c{shown}\u201d"


def _error(
    path: Path, key: str | None, line: int, reason: str, kind: InputErrorKind = "malformed"
) -> InputError:
    return InputError(source_file=str(path), entry_key=key, line=line, reason=reason, kind=kind)
