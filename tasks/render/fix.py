"""`citeaudit fix`: the user's own BibTeX file, corrected from the registries and marked.

The file is edited in place, entry by entry, as text: keys, field order, formatting, comments,
`@string` macros and every field we do not correct stay exactly as the user wrote them. A line
that `%` comments out (read as biber reads it, tasks/read/bibtex.py) is never edited: a field is
added before the comments that end an entry, never inside one, and the lines we add end as
the file's lines do (CRLF or LF).

The rule: a verified record (not retracted) writes a field only where its value is better by
`RULES` below; the matcher's own thresholds (tasks/match/decide.py) say what "disagrees" means,
so a difference it forgave as agreement is never written over the user's value.

    field   written from the record when          never written when
    doi     the entry has none, or its DOI is     the entry's DOI is an arXiv DOI (it names the
            one no registry holds (the entry      preprint; the record's may be the published
            verified by the PMID beside it)       version's)
    pages   the entry has none                    the entry has pages, in any form
    title   the entry has none, or it scores      the matcher accepted it (casing, markup, a
            below TITLE_AGREES                    dropped word or subtitle)
    author  the entry has none, or it scores      the matcher accepted it; the entry's list ends
            below AUTHORS_AGREE; past MAX_NAMES   in `and others` (never expanded into the
            names, the first MAX_NAMES and        record's hundreds); the record's list looks
            `and others` (Google Scholar's form)  broken (`_broken_name`)
    year    the entry has none, or it scores      an online-first (±1) or preprint (±3) year the
            below YEAR_AGREES                     matcher accepted: PaLM cited as JMLR 2023 keeps
                                                  2023 against its 2022 preprint record
    venue   the entry has none, or it scores      the matcher accepted it or could not tell (an
            below CONTAINER_CONTRADICTS           abbreviation, an unknown venue)

Where the record's value would be written but looks broken (`Fulford, Is-abella`: a hyphen a PDF
line break left; `Achiam, OpenAI Josh`: an organisation glued to a person), the entry is marked
(`citeaudit = {verified: ...}`) and the field is left as it is. Where unsure: mark, never rewrite.

The table is decided once, format-neutral (`corrections`: per CSL variable, the record's plain
value and the rule that allows it); this module writes the decision as BibTeX (the field names
of the entry's type, LaTeX-encoded), `citeaudit zotero audit --fix` as Zotero item fields
(tasks/render/zotero.py).

- mismatch, not_found, unmatched, unverified, and any work with a retraction, correction or
  expression-of-concern notice: the entry gets a `citeaudit = {STATUS: reason}` field (BibTeX
  ignores unknown fields). Nothing is ever deleted.

`FixedBibliography.diff()` says, entry by entry, what changed.
"""

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import bibtexparser

from models.audit import FieldAgreement, Reference, Status, ValidationResult
from models.csl import ET_AL, CSLItem, CSLName, named
from tasks.frames import leading_notice
from tasks.identifiers import is_arxiv_doi, normalize_doi
from tasks.match.authors import GROUP_WORDS
from tasks.match.decide import AUTHORS_AGREE, CONTAINER_CONTRADICTS, TITLE_AGREES, YEAR_AGREES
from tasks.read.bibtex import entry_blocks, uncommented
from tasks.render.exports import bibtex_names, bibtex_pages, latex_text
from tasks.textnorm import words

MARK_FIELD = "citeaudit"
# The module docstring's table: an entry's value is written over only when the matcher scored
# its agreement with the record below this (a field compared and found to disagree).
RULES: dict[str, float] = {
    "title": TITLE_AGREES,
    "authors": AUTHORS_AGREE,
    "year": YEAR_AGREES,
    "container": CONTAINER_CONTRADICTS,
}
MAX_NAMES = 10  # an author list written from a record: at most these, then `and others`
# A given name split by a hyphen before a lower-case letter: `Is-abella`, `Made-laine` (a PDF's
# line break kept by the registry). Real `Jean-Luc` has a capital; a romanised `Ji-hoon` is
# caught too, and so marked rather than written: the safe side.
_BROKEN_HYPHEN = re.compile(r"[a-z]-[a-z]")
_CAMEL_ACRONYM = re.compile(r"[a-z][A-Z]{2,}")  # `OpenAI` glued before a person's name
_VENUE_FIELDS = ("journal", "journaltitle", "booktitle")
_FINAL_STOP = re.compile(r"(?<!\.)\.$")
_BOOKTITLE_TYPES = {"inproceedings", "incollection", "inbook", "conference"}


@dataclass(frozen=True)
class Change:
    field: str
    old: str | None  # as the file wrote it; None: the field was added
    new: str | None  # None: the field is removed (a mark the entry no longer earns)
    rule: str = ""  # the correction's rule (Correction.rule); none for a mark


@dataclass(frozen=True)
class Correction:
    """One value a verified record corrects, by a row of the module docstring's table, before
    any format: the writer names the field and encodes the value."""

    field: str  # the CSL variable: title, author, container-title, issued, page, DOI
    value: str | list[CSLName]  # the record's plain text (a year for issued), or its names
    rule: str  # why the record's value is better, in a few words


@dataclass(frozen=True)
class EntryFix:
    key: str
    status: str
    changes: list[Change]


@dataclass
class FixedBibliography:
    text: str
    fixes: list[EntryFix] = field(default_factory=list)
    # entries left as they were that still carry the mark an earlier run gave them
    already_marked: int = 0

    def summary(self, entries: int) -> str:
        """The closing count of `entries` audited: each in one of the four groups."""
        corrected = sum(
            1
            for fix in self.fixes
            if any(c.field != MARK_FIELD or c.new is None for c in fix.changes)
        )
        unchanged = entries - len(self.fixes) - self.already_marked
        return (
            f"{entries} entries: {corrected} corrected, {len(self.fixes) - corrected} marked "
            f"(field `{MARK_FIELD}`), {self.already_marked} already marked, {unchanged} unchanged"
        )

    def diff(self) -> str:
        """Entry by entry: `@key (status)`, then `- field = old` / `+ field = new` lines."""
        blocks = []
        for fix in self.fixes:
            lines = [f"@{fix.key} ({fix.status})"]
            for change in fix.changes:
                if change.old is not None:
                    lines.append(f"  - {change.field} = {_one_line(change.old)}")
                if change.new is not None:
                    lines.append(f"  + {change.field} = {{{_one_line(change.new)}}}")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks) + ("\n" if blocks else "")


def fix_bibtex(
    text: str, refs: Sequence[Reference], results: Mapping[str, ValidationResult]
) -> FixedBibliography:
    """`text` with each audited entry corrected or marked (refs: this file's references)."""
    by_key = {ref.provenance.entry_key: ref for ref in refs}
    newline = _newline(text)
    # Parsed with `%` comment lines blanked (same length), so offsets are the text's own and
    # nothing a comment holds is an entry or a field.
    bare = "\n".join(uncommented(text.split("\n")))
    library = bibtexparser.parse_string(bare, parse_stack=[])
    fixed = FixedBibliography(text="")
    pieces, cursor = [], 0
    for entry in entry_blocks(library):
        ref = by_key.pop(entry.key, None)  # a repeated key: only its first entry was audited
        raw = entry.raw or ""
        start = bare.find(raw, cursor) if raw else -1
        if ref is None or start < 0:
            continue
        result = results[ref.citation_id]
        values = _values(raw)
        changes = _changes(entry.entry_type.lower(), values, ref.item, result)
        if not changes:
            if MARK_FIELD in values:  # a mark no longer earned would be a change: this holds
                fixed.already_marked += 1
            continue
        text_raw = text[start : start + len(raw)]
        pieces += [text[cursor:start], _rewrite(text_raw, raw, changes, newline)]
        cursor = start + len(raw)
        fixed.fixes.append(EntryFix(entry.key, _status_label(result), changes))
    fixed.text = "".join(pieces) + text[cursor:]
    return fixed


def _newline(text: str) -> str:
    """The file's line ending: that of its first line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _status_label(result: ValidationResult) -> str:
    if result.status is not Status.VERIFIED:  # any notice is the other paper's
        return result.status.value
    notice = leading_notice(result.notices)
    flag = notice.kind if notice else "retracted" if result.retracted else None
    return ", ".join(p for p in (result.status.value, flag) if p)


def _changes(
    entry_type: str,
    values: dict[str, tuple[int, int, str]],
    claimed: CSLItem,
    result: ValidationResult,
) -> list[Change]:
    venue = _venue_field(entry_type, values)
    holds = {"DOI"} if "doi" in values else set()
    holds |= {"container-title"} if venue in values else set()
    found, doubts = corrections(claimed, result, holds)
    wanted: dict[str, tuple[str | None, str]] = {}
    for correction in found:
        if name := _bibtex_field(correction.field, venue, values):
            wanted[name] = (_bibtex_value(correction), correction.rule)
    # An earlier run's mark goes when the entry no longer earns one (it verifies now).
    wanted[MARK_FIELD] = (_mark(result, doubts), "")
    return [
        Change(name, values[name][2] if name in values else None, new, rule)
        for name, (new, rule) in wanted.items()
        if (name in values and (new is None or values[name][2].strip('{}" ') != new))
        or (name not in values and new is not None)
    ]


def _bibtex_field(variable: str, venue: str | None, values: Mapping[str, object]) -> str | None:
    if variable == "container-title":
        return venue  # None: the entry's type names no venue
    if variable == "issued":
        return "date" if "date" in values and "year" not in values else "year"
    return {"title": "title", "author": "author", "page": "pages", "DOI": "doi"}[variable]


def _bibtex_value(correction: Correction) -> str:
    value = correction.value
    if isinstance(value, list):
        return bibtex_names(value) or ""
    if correction.field == "page":
        return bibtex_pages(value)
    return value if correction.field in ("DOI", "issued") else latex_text(value) or ""


def corrections(
    claimed: CSLItem, result: ValidationResult, holds: Collection[str]
) -> tuple[list[Correction], list[str]]:
    """The values a verified record (not retracted) corrects, by the module docstring's table,
    in its order; and the doubts: a value that would be written but looks broken, left for the
    reader instead. `holds`: the CSL variables among DOI and container-title the entry writes
    itself (a DOI read from its URL is no DOI field)."""
    record, agreement = result.record, result.agreement
    if (
        result.status is not Status.VERIFIED
        or result.retracted
        or record is None
        or not record.title
    ):
        return [], []
    found: list[Correction] = []
    doubts: list[str] = []
    if not claimed.title or _disagrees(agreement, "title"):
        # PubMed ends every title with a full stop; styles add their own.
        title = _FINAL_STOP.sub("", record.title)
        found.append(Correction("title", title, _why(claimed.title, agreement, "title")))
    truncated = any(name.is_et_al() for name in claimed.author or [])
    if named(record.author) and (
        not named(claimed.author) or (_disagrees(agreement, "authors") and not truncated)
    ):
        if broken := _broken_name(named(record.author)):
            doubts.append(f"the registry's author list is not written: {broken!r} looks broken")
        else:
            names = _at_most(record.author or [], MAX_NAMES)
            why = _why(named(claimed.author), agreement, "authors")
            found.append(Correction("author", names, why))
    if record.container_title and (
        "container-title" not in holds or _disagrees(agreement, "container")
    ):
        why = _why("container-title" in holds, agreement, "container")
        found.append(Correction("container-title", record.container_title, why))
    year = record.year()
    if year is not None and (claimed.year() is None or _disagrees(agreement, "year")):
        found.append(Correction("issued", str(year), _why(claimed.year(), agreement, "year")))
    if record.page and not claimed.page:
        found.append(Correction("page", record.page, "it had none"))
    if record.DOI and "DOI" not in holds:
        found.append(Correction("DOI", record.DOI, "it had none"))
    elif record.DOI and _doi_not_the_records(claimed.DOI, record.DOI):
        found.append(Correction("DOI", record.DOI, "its DOI is not the verified record's"))
    return found, doubts


def _why(claimed: object, agreement: FieldAgreement, field: str) -> str:
    if not claimed:
        return "it had none"
    return f"{field} agreement {getattr(agreement, field):.2f} < {RULES[field]:.2f}"


def _disagrees(agreement: FieldAgreement, field: str) -> bool:
    """Compared, and scored below what the matcher forgives (RULES)."""
    score = getattr(agreement, field)
    return score is not None and score < RULES[field]


def _at_most(names: list[CSLName], count: int) -> list[CSLName]:
    people = named(names)
    if len(people) <= count:
        return names
    return [*people[:count], CSLName.model_validate({"literal": ET_AL})]


def _broken_name(names: list[CSLName]) -> str | None:
    """The first name of a record's list that no careful author would write, as BibTeX would
    read it (`Fulford, Is-abella`, `Achiam, OpenAI Josh`); None when the list looks sound."""
    for name in names:
        given, family = name.given or "", name.family or ""
        if not family:
            continue
        glued = len(given.split()) > 1 and (
            _CAMEL_ACRONYM.search(given) is not None or any(w in GROUP_WORDS for w in words(given))
        )
        if _BROKEN_HYPHEN.search(given) or glued:
            return f"{family}, {given}"
    return None


def _doi_not_the_records(claimed: str | None, record: str) -> bool:
    """A verified entry whose DOI is not its record's: a DOI no registry holds, the entry verified
    by the PMID beside it (tasks/lookup/ asks the next identifier). An arXiv DOI stays: it names
    the preprint, and the record's DOI may be the published version's."""
    doi = normalize_doi(claimed)
    return doi is not None and not is_arxiv_doi(doi) and doi != normalize_doi(record)


def _venue_field(entry_type: str, values: Mapping[str, object]) -> str | None:
    present = next((name for name in _VENUE_FIELDS if name in values), None)
    if present:
        return present
    if entry_type == "article":
        return "journal"
    return "booktitle" if entry_type in _BOOKTITLE_TYPES else None


def _mark(result: ValidationResult, doubts: Sequence[str] = ()) -> str | None:
    """The `citeaudit` field of an entry a reader must look at; None for a clean verified one."""
    if result.status is not Status.VERIFIED:  # a mismatch's notices are the other paper's
        return latex_text(_one_line(f"{result.status.value}: {result.reason}")) or ""
    notice = leading_notice(result.notices)
    if notice is None and not result.retracted and not doubts:
        return None
    parts = []
    if notice is not None:
        where = ", ".join(
            p for p in (notice.url or notice.identifier, notice.date, notice.source) if p
        )
        text = f"{notice.kind.replace('_', ' ')} notice" + (f" ({where})" if where else "")
        parts.append(text + (f": {notice.reason}" if notice.reason else ""))
    elif result.retracted:
        parts.append("retracted")
    if doubts:
        parts.append("verified; " + "; ".join(doubts))
    return latex_text(_one_line("; ".join(parts))) or ""


def _rewrite(raw: str, bare: str, changes: Sequence[Change], newline: str) -> str:
    """The entry's text with changed values replaced in place and new fields added after its
    last field (before any `%` comment lines that end it), on lines ending in `newline`. `bare`
    is `raw` with its comment lines blanked: every position is read there, every edit made in
    `raw`."""
    values = _values(bare)
    edits = []
    for change in changes:
        if change.field not in values:
            continue
        start, end, _ = values[change.field]
        if change.new is None:  # from the comma before the field's name to its value's end
            edits.append((bare.rfind(",", 0, bare.rfind("=", 0, start)), end, ""))
        else:
            edits.append((start, end, "{" + change.new + "}"))
    for start, end, text in sorted(edits, reverse=True):
        raw = raw[:start] + text + raw[end:]
        bare = bare[:start] + text + bare[end:]
    added = [c for c in changes if c.field not in values]
    if not added:
        return raw
    close = len(raw) - 1  # the entry's closing `}` or `)`
    last = len(bare[:close].rstrip())  # after the last field's value (or its comma)
    tail = raw[last:close] if raw[last:close].strip() else newline  # comment lines stay after
    indent, width = _layout(bare)
    lines = "".join(
        f",{newline}{indent}{c.field.ljust(max(width, len(c.field) + 1))}= {{{c.new}}}"
        for c in added
    )
    return raw[:last].rstrip(",") + lines + "," + tail + raw[close:]


def _layout(raw: str) -> tuple[str, int]:
    """The indent of the entry's first field line, and the width its name takes before `=`
    (so an added field lines up with the user's `=` column)."""
    second = raw.split("\n", 2)[1] if "\n" in raw else ""
    indent = second[: len(second) - len(second.lstrip())]
    name = second[len(indent) : second.find("=")] if "=" in second else ""
    return indent or "  ", len(name)


def _values(raw: str) -> dict[str, tuple[int, int, str]]:
    """Each field's value span in an entry's text: name -> (start, end, text). Values are
    `{...}` (nested braces), `"..."`, or macros and numbers joined by `#`."""
    spans: dict[str, tuple[int, int, str]] = {}
    opening = min(i for i in (raw.find("{"), raw.find("("), len(raw)) if i >= 0)
    position = raw.find(",", opening) + 1  # after `@type{key,`
    length = len(raw) - 1
    while position < length:
        equals = raw.find("=", position)
        if equals < 0:
            break
        name = raw[position:equals].strip().strip(",").strip().lower()
        start = equals + 1
        while start < length and raw[start].isspace():
            start += 1
        end = _value_end(raw, start, length)
        if name and name not in spans:  # a field given twice: BibTeX reads the first
            spans[name] = (start, end, raw[start:end])
        position = end + 1
    return spans


def _value_end(raw: str, position: int, length: int) -> int:
    """Where a value starting at `position` ends: after its last `#`-joined part."""
    while True:
        if position < length and raw[position] in '{"':
            position = _closing(raw, position)
        else:
            while (
                position < length and raw[position] not in ",#}\n" and not raw[position].isspace()
            ):
                position += 1
        after = position
        while after < length and raw[after].isspace():
            after += 1
        if after < length and raw[after] == "#":
            position = after + 1
            while position < length and raw[position].isspace():
                position += 1
            continue
        return position


def _closing(raw: str, position: int) -> int:
    """The position after the `{...}` or `"..."` value opening at `position`."""
    quote = raw[position] == '"'
    depth = 0
    for index in range(position + (1 if quote else 0), len(raw)):
        char = raw[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and not quote:
                return index + 1
        elif char == '"' and quote and depth == 0:
            return index + 1
    return len(raw)


def _one_line(text: str) -> str:
    return " ".join(text.split())
