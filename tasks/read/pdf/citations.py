"""A PDF's in-text citations: each body sentence that carries a marker becomes a Claim, linked
to the references its markers name, as a crew report's sentences are (tasks/read/markdown.py
splits the sentences and reads the bracketed markers).

- Numbered markers: `[3]`, `[3–5, 9]`, `[3]–[5]`, `Smith et al. [3]`; superscripts (`⁽3,5⁾` as
  the layout keeps them) count as numbered markers in a paper that cites by superscript (more
  superscript numbers than bracketed markers), and are dropped as footnote marks otherwise.
- Author-year: `(Smith et al., 2020; Lee and Park, 2019a)`, `[Smith et al. 2020]` and
  `Smith et al. (2020)`, linked to the one entry of the list whose author part (its first
  words) names that surname and whose text writes that year.
- A marker belongs to the list that follows it (a thesis's chapter cites its own list).
  A marker that names no entry is a missing citation (an input error of kind `missing`, and
  the claim keeps it); an entry no marker names is reported as never cited (still audited).
"""

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from models.audit import InputError, ReadResult, Reference
from tasks.read.markdown import ET_AL_OR_COAUTHOR, add_claim, marker_keys, split_sentences
from tasks.read.pdf.layout import SUPER_CLOSE, SUPER_OPEN, Document, Line, clean
from tasks.read.pdf.references import ReferenceList, pieces
from tasks.textnorm import fold

_SUPERSCRIPT = re.compile(r"\s*" + SUPER_OPEN + r"([\d,\u2013\-\s]+)" + SUPER_CLOSE + r"\s*")
_BRACKETED = re.compile(r"\[\d+(?:\s*[-\u2013,;]\s*\d+)*\]")
_GROUP = re.compile(r"[(\[]([^()\[\]]*?\b(?:1[89]|20)\d\d[a-z]?)[)\]]")
_YEAR_WORD = re.compile(r"(?:1[89]|20)\d\d[a-z]?")
_LEADS = ("see", "e.g.", "cf.", "e.g.,")
_NOT_IN_NAMES = re.compile(r"[\d()\[\]]")
_NARRATIVE = re.compile(
    r"(?P<who>[A-Z][\w'\u2019-]+(?:\s+(?:et al\.|and|&)\s*(?:[A-Z][\w'\u2019-]+)?)?)\s+"
    r"[(\[](?P<year>(?:1[89]|20)\d\d[a-z]?)[)\]]"
)
_AUTHOR_PART = 80  # characters of an entry where its authors are written


@dataclass
class _Part:
    """The body a reference list's markers are read in, and that list's references."""

    references: dict[str, Reference]
    lines: list[Line] = field(default_factory=list)


def cited(
    path: Path, document: Document, lists: Sequence[tuple[ReferenceList, dict[str, Reference]]]
) -> ReadResult:
    result = ReadResult()
    parts = _parts(document, lists)
    body = [line.text for part in parts for line in part.lines]
    superscripts = sum(len(_SUPERSCRIPT.findall(text)) for text in body)
    brackets = sum(len(_BRACKETED.findall(clean(text))) for text in body)
    numbered_by_superscript = superscripts > brackets
    for n, part in enumerate(parts):
        for claim_id, text in _sentences(part.lines, n, numbered_by_superscript):
            found, missing = _linked(text, part.references)
            if not found and not missing:
                continue
            add_claim(result, path, claim_id, text, found, missing)
            for written in missing:
                reason = f"cites {written}, which the reference list does not have"
                result.errors.append(
                    InputError(
                        source_file=str(path), entry_key=claim_id, reason=reason, kind="missing"
                    )
                )
    for _, references in lists:
        for reference in references.values():
            if not reference.claim_ids:
                result.errors.append(
                    InputError(
                        source_file=str(path),
                        entry_key=reference.provenance.entry_key,
                        reason=f"never cited in the text of {path.name} (audited all the same)",
                        kind="uncited",
                    )
                )
    return result


def _parts(
    document: Document, lists: Sequence[tuple[ReferenceList, dict[str, Reference]]]
) -> list[_Part]:
    """The body lines before each list (after the one before it)."""
    parts = [_Part(references) for _, references in lists]
    skipped = {
        i
        for listed, _ in lists
        for i in range(listed.start - (listed.heading is not None), listed.stop)
    }
    owner = 0
    for index, line in enumerate(document.lines):
        while owner < len(lists) - 1 and index >= lists[owner][0].stop:
            owner += 1
        if index not in skipped:
            parts[owner].lines.append(line)
    return parts


def _sentences(
    lines: list[Line], part: int, numbered_by_superscript: bool
) -> Iterator[tuple[str, str]]:
    """The part's sentences (across line, column and page breaks), each with its id:
    `p<page it starts on>-s<n>` (`l2-p41-s3` in the second list's part)."""
    texts = pieces([line.text for line in lines], [line.hyphenated for line in lines])
    texts = [_markers_written(text, numbered_by_superscript) for text in texts]
    starts = list(accumulate((len(text) for text in texts), initial=0))
    text = "".join(texts)
    prefix = f"l{part + 1}-" if part else ""
    counts: dict[int, int] = {}
    position = 0
    for sentence in split_sentences(text):
        position = max(text.find(sentence, position), position)
        page = lines[max(bisect_right(starts, position) - 1, 0)].page if lines else 0
        counts[page] = counts.get(page, 0) + 1
        yield f"{prefix}p{page}-s{counts[page]}", clean(sentence)
        position += len(sentence)


def _markers_written(text: str, numbered_by_superscript: bool) -> str:
    """The text with superscript citations written `[3,5]`, glued to the word or full stop
    before them as the sentence splitter expects (or, as footnote marks, dropped)."""
    replacement = (lambda m: f"[{m.group(1).strip()}] ") if numbered_by_superscript else " "
    text = _SUPERSCRIPT.sub(replacement, text)
    return text.replace(SUPER_OPEN, "").replace(SUPER_CLOSE, "")


def _linked(sentence: str, references: dict[str, Reference]) -> tuple[list[Reference], list[str]]:
    found: list[Reference] = []
    missing: list[str] = []
    keys = marker_keys(sentence)
    for key in keys:
        label = key.strip("[]")
        if label in references:
            found.append(references[label])
        else:
            missing.append(key)
    for written, who, year in _author_years(sentence):
        matches = _by_author_year(references, who, year)
        if len(matches) == 1:
            found.append(matches[0])
        elif not keys:
            missing.append(written)
    return list({id(ref): ref for ref in found}.values()), missing


def _author_years(sentence: str) -> Iterator[tuple[str, str, str]]:
    """Each author-year citation as written, its first author's surname and its year."""
    seen: set[tuple[str, str]] = set()
    for group in _GROUP.finditer(sentence):
        for part in group.group(1).split(";"):
            found = _author_and_years(part)
            if found is None:
                continue
            who, years = found
            for year in years:
                if (who, year) not in seen:
                    seen.add((who, year))
                    yield f"({who}, {year})", who, year
    for narrative in _NARRATIVE.finditer(sentence):
        who, year = (
            ET_AL_OR_COAUTHOR.split(narrative.group("who"))[0].strip(),
            narrative.group("year"),
        )
        if (who, year) not in seen:
            seen.add((who, year))
            yield f"{who} ({year})", who, year


def _author_and_years(part: str) -> tuple[str, list[str]] | None:
    """`Smith et al., 2020, 2021b` -> ("Smith", ["2020", "2021b"]); None if it is no citation
    (`Section 3, 2020`: no capitalised name before the years)."""
    words = part.replace(",", " ").split()
    years: list[str] = []
    while words and _YEAR_WORD.fullmatch(words[-1]):
        years.insert(0, words.pop())
    while words and words[0].lower() in _LEADS:
        words.pop(0)
    who = " ".join(words)
    if not years or not who[:1].isupper() or _NOT_IN_NAMES.search(who):
        return None
    return ET_AL_OR_COAUTHOR.split(who)[0].strip(), years


def _by_author_year(references: dict[str, Reference], who: str, year: str) -> list[Reference]:
    """The entries whose author part names `who` and whose text writes `year`; where several
    do, those naming `who` first."""
    surname = fold(who)
    if not surname or surname in ("see", "in", "the"):
        return []
    pattern = re.compile(rf"\b{re.escape(year)}\b" if year[-1].isalpha() else rf"\b{year}(?!\d)")
    ranked: list[tuple[int, Reference]] = []
    for reference in references.values():
        raw = reference.raw or ""
        if not pattern.search(raw):
            continue
        if year[-1].isdigit() and re.search(rf"\b{year}[a-z]\b", raw):
            continue  # `2020a` is another entry's
        position = fold(raw[:_AUTHOR_PART]).find(surname)
        if position >= 0:
            ranked.append((position, reference))
    if not ranked:
        return []
    best = min(position for position, _ in ranked)
    return [reference for position, reference in ranked if position == best]
