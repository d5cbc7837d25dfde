"""A PDF's reference lists, one string per reference.

- A list starts under a heading line that is only its name (References, Bibliography,
  Literature Cited, Works Cited, Reference List, Cited Literature; any case, maybe numbered `7`,
  `VII.`, `7.`): every such heading starts a list, so a thesis's chapters each have theirs. A
  list ends at the next line set larger than its own text (the next chapter's or appendix's
  heading), at an Appendix or Supplementary heading, or at the end of the document.
- Its lines are split into references by their labels when the list is labelled (`[12]`,
  `[Smi20]`, `12.`, a superscript or bare `12`: a numbered label counts only as the next
  number), else by hanging indents (a reference's first line starts at its column's left edge,
  the others further in), else by the larger gaps between references.
- A reference's lines are joined: a word hyphenated at a line's end is joined whole where the
  hyphen only broke it (English word frequencies decide `esti-mation` from `energy-based`).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from tasks.read.pdf.layout import SUPER_CLOSE, SUPER_OPEN, Line, clean

_HEADING = re.compile(
    r"^(?:(?:\d{1,2}|[IVXL]{1,5})\.?\s+)?(?:references?|bibliography|literature\s+cited|"
    r"works\s+cited|reference\s+list|cited\s+literature|references\s+cited)\s*:?$",
    re.IGNORECASE,
)
_END_HEADING = re.compile(
    r"^(?:[A-Z](?:\.\d+)?\.?\s+)?(?:appendix|appendices|supplementary|supporting information)\b",
    re.IGNORECASE,
)
_BRACKET_LABEL = re.compile(r"^\[([^\[\]]{1,24})\]\s*")
_NUMBER_LABEL = re.compile(
    "^(?:" + SUPER_OPEN + r"(\d{1,4})" + SUPER_CLOSE + r"|(\d{1,4})[.)]?(?=\s|[A-Z]))\s*"
)
_LARGER = 1.15  # a line set this much larger than the list's text ends it


@dataclass
class Entry:
    """One reference as printed: its label (`12`, `Smi20`; None when unlabelled), the page it
    starts on, and its text."""

    label: str | None
    page: int
    text: str
    lines: list[Line] = field(default_factory=list, repr=False)


@dataclass
class ReferenceList:
    heading: Line | None  # None: a list found by its labels alone (revtex prints no heading)
    start: int  # its first and past its last line, as indexes of the document's lines
    stop: int
    entries: list[Entry]


def is_heading(line: Line) -> bool:
    return _HEADING.match(clean(line.text)) is not None


def reference_lists(lines: Sequence[Line]) -> list[ReferenceList]:
    """Every reference list of the document, in order: under each heading, or (with no
    heading) the last run of lines labelled 1, 2, 3 in order."""
    starts = [i for i, line in enumerate(lines) if is_heading(line)]
    found = []
    for n, start in enumerate(starts):
        stop = starts[n + 1] if n + 1 < len(starts) else len(lines)
        body = _list_lines(lines[start + 1 : stop])
        entries = split_entries(body)
        found.append(ReferenceList(lines[start], start + 1, start + 1 + len(body), entries))
    if not starts and (first := _first_labelled(lines)) is not None:
        body = _list_lines(lines[first:])
        found.append(ReferenceList(None, first, first + len(body), split_entries(body)))
    return found


def _first_labelled(lines: Sequence[Line]) -> int | None:
    """The first line of the last run labelled `[1]`/`1.`, `[2]`, `[3]` in order."""
    found = None
    for index, line in enumerate(lines):
        for label_of in (_bracket_label, _number_label):
            if label_of(line.text) != "1":
                continue
            following = [label_of(other.text) for other in lines[index + 1 : index + 40]]
            labels = [label for label in following if label in ("2", "3")]
            if labels[:2] == ["2", "3"]:
                found = index
    return found


def _list_lines(lines: Sequence[Line]) -> list[Line]:
    """The lines of a list up to its end (a larger heading, an appendix)."""
    if not lines:
        return []
    sizes = sorted(line.size for line in lines[:40])
    size = sizes[len(sizes) // 2]
    for index, line in enumerate(lines):
        if line.size > _LARGER * size or _END_HEADING.match(clean(line.text)):
            return list(lines[:index])
    return list(lines)


def split_entries(lines: Sequence[Line]) -> list[Entry]:
    if not lines:
        return []
    first = clean(lines[0].text)
    if _BRACKET_LABEL.match(first):
        groups = _by_label(lines, _bracket_label)
    elif _NUMBER_LABEL.match(lines[0].text.lstrip()):
        groups = _by_label(lines, _number_label)
    else:
        groups = _by_layout(lines)
    return [entry for group in groups if (entry := _entry(group)) is not None]


def _bracket_label(text: str) -> str | None:
    found = _BRACKET_LABEL.match(clean(text))
    return found.group(1).strip() if found else None


def _number_label(text: str) -> str | None:
    found = _NUMBER_LABEL.match(text.lstrip())
    return (found.group(1) or found.group(2)) if found else None


def _by_label(lines: Sequence[Line], label_of: object) -> list[list[Line]]:
    """Lines grouped by the labels that start them; a number counts only as the next one."""
    assert callable(label_of)
    groups: list[list[Line]] = []
    expected: int | None = None
    for line in lines:
        label = label_of(line.text)
        starts = label is not None and (
            not label.isdigit() or expected is None or int(label) == expected
        )
        if starts and label is not None:
            groups.append([line])
            expected = int(label) + 1 if label.isdigit() else None
        elif groups:
            groups[-1].append(line)
    return groups


def _by_layout(lines: Sequence[Line]) -> list[list[Line]]:
    """Unlabelled lists: hanging indents where the list has them, else the gaps between
    references (larger than between a reference's lines)."""
    edges: dict[tuple[int, int], float] = {}
    for line in lines:
        key = (line.page, line.column)
        edges[key] = min(edges.get(key, line.x0), line.x0)
    indents = [line.x0 - edges[(line.page, line.column)] for line in lines]
    hanging = sum(1 for indent in indents if indent > 4) >= len(lines) // 4
    gaps = _gaps(lines)
    usual = sorted(g for g in gaps if g is not None)
    step = usual[len(usual) // 4] if usual else 0.0
    groups: list[list[Line]] = []
    for line, indent, gap in zip(lines, indents, gaps, strict=True):
        starts = indent <= 2 if hanging else gap is None or gap > step * 1.25 + 0.5
        if starts or not groups:
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _gaps(lines: Sequence[Line]) -> list[float | None]:
    """The distance from each line's baseline to the previous one's in the same column and page
    (None for a column's first line)."""
    gaps: list[float | None] = []
    previous: Line | None = None
    for line in lines:
        same = previous is not None and (previous.page, previous.column) == (
            line.page,
            line.column,
        )
        gaps.append(previous.bottom - line.bottom if same and previous is not None else None)
        previous = line
    return gaps


def _entry(lines: list[Line]) -> Entry | None:
    text = joined([line.text for line in lines], [line.hyphenated for line in lines])
    label: str | None = None
    for pattern in (_BRACKET_LABEL, _NUMBER_LABEL):
        if found := pattern.match(text):
            label = next(g for g in found.groups() if g)
            text = text[found.end() :]
            break
    text = text.replace(SUPER_OPEN, "").replace(SUPER_CLOSE, "").strip()
    if not text:
        return None
    return Entry(label, lines[0].page, text, lines)


_LAST_WORD = re.compile(r"(?<!\w)(\w+)$")
_FIRST_WORD = re.compile(r"^(\w+)")


def joined(texts: Sequence[str], hyphenated: Sequence[bool]) -> str:
    """Lines as one text: a line hyphenated at its end is joined to the next without a space,
    the hyphen kept where it belongs to the words (`energy-based`, `Abdel-Hamid`, `1533-1545`)."""
    return "".join(pieces(texts, hyphenated))


def pieces(texts: Sequence[str], hyphenated: Sequence[bool]) -> list[str]:
    """Each line's part of `joined`: its text after what joins it to the line before."""
    out: list[str] = []
    for n, text in enumerate(texts):
        text = clean(text)
        if n and hyphenated[n - 1]:
            out.append(_hyphen(out[-1], text) + text)
        else:
            out.append((" " if out else "") + text)
    return out


def _hyphen(before: str, after: str) -> str:
    head = _LAST_WORD.search(before)
    tail = _FIRST_WORD.match(after)
    if head is None or tail is None:
        return "-"
    first, second = head.group(1), tail.group(1)
    if not (first.isalpha() and second.isalpha()) or not second[0].islower():
        return "-"
    known = _known_words()
    if (first + second).lower() in known:
        return ""
    return "-" if first.lower() in known and second.lower() in known else ""


@cache
def _known_words() -> frozenset[str]:
    """English words (wordninja's list from Wikipedia's word frequencies), loaded once."""
    from wordninja import DEFAULT_LANGUAGE_MODEL

    return frozenset(DEFAULT_LANGUAGE_MODEL._wordcost)
