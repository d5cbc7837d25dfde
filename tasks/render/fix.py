"""`citeaudit fix`: the user's own BibTeX file, corrected from the registries and marked.

The file is edited in place, entry by entry, as text: keys, field order, formatting, comments,
`@string` macros and every field we do not correct stay exactly as the user wrote them.

- verified (and not retracted): title, authors, venue, year and pages the registry record gives
  differently are replaced by the record's; pages and the DOI are added when the entry lacks them.
  A field the audit found in full agreement is left alone, so `{BERT}`-style casing braces and
  the user's venue abbreviations survive.
- mismatch, not_found, unmatched, unverified, and any work with a retraction, correction or
  expression-of-concern notice: the entry gets a `citeaudit = {STATUS: reason}` field (BibTeX
  ignores unknown fields). Nothing is ever deleted.

`FixedBibliography.diff()` says, entry by entry, what changed.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import bibtexparser

from models.audit import Reference, Status, ValidationResult
from models.csl import CSLItem
from tasks.frames import leading_notice
from tasks.identifiers import is_arxiv_doi, normalize_doi
from tasks.render.exports import bibtex_names, bibtex_pages, latex_text

MARK_FIELD = "citeaudit"
_VENUE_FIELDS = ("journal", "journaltitle", "booktitle")
_FINAL_STOP = re.compile(r"(?<!\.)\.$")
_BOOKTITLE_TYPES = {"inproceedings", "incollection", "inbook", "conference"}


@dataclass(frozen=True)
class Change:
    field: str
    old: str | None  # as the file wrote it; None: the field was added
    new: str | None  # None: the field is removed (a mark the entry no longer earns)


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
        corrected = sum(1 for fix in self.fixes if fix.status == "verified")
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
    library = bibtexparser.parse_string(text, parse_stack=[])
    fixed = FixedBibliography(text="")
    pieces, cursor = [], 0
    for entry in library.entries:
        ref = by_key.pop(entry.key, None)  # a repeated key: only its first entry was audited
        raw = entry.raw or ""
        start = text.find(raw, cursor) if raw else -1
        if ref is None or start < 0:
            continue
        result = results[ref.citation_id]
        values = _values(raw)
        changes = _changes(entry.entry_type.lower(), values, ref.item, result)
        if not changes:
            if MARK_FIELD in values:  # a mark no longer earned would be a change: this holds
                fixed.already_marked += 1
            continue
        pieces += [text[cursor:start], _rewrite(raw, changes)]
        cursor = start + len(raw)
        fixed.fixes.append(EntryFix(entry.key, _status_label(result), changes))
    fixed.text = "".join(pieces) + text[cursor:]
    return fixed


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
    wanted: dict[str, str | None] = {}
    if not result.retracted:
        wanted.update(_corrections(entry_type, values, claimed, result))
    # An earlier run's mark goes when the entry no longer earns one (it verifies now).
    wanted[MARK_FIELD] = _mark(result)
    return [
        Change(name, values[name][2] if name in values else None, new)
        for name, new in wanted.items()
        if (name in values and (new is None or values[name][2].strip('{}" ') != new))
        or (name not in values and new is not None)
    ]


def _corrections(
    entry_type: str, values: Mapping[str, object], claimed: CSLItem, result: ValidationResult
) -> dict[str, str]:
    """The fields to set from a verified record: those it gives and the entry gets wrong."""
    record, agreement = result.record, result.agreement
    if result.status is not Status.VERIFIED or record is None or not record.title:
        return {}
    wanted: dict[str, str] = {}
    if record.title and (not claimed.title or (agreement.title or 0.0) < 1.0):
        # PubMed ends every title with a full stop; BibTeX styles add their own.
        title = _FINAL_STOP.sub("", record.title)
        wanted["title"] = latex_text(title) or ""
    names = bibtex_names(record.author)
    if names and (not claimed.author or (agreement.authors or 0.0) < 1.0):
        wanted["author"] = names
    venue = _venue_field(entry_type, values)
    if venue and record.container_title and (agreement.container or 0.0) < 1.0:
        wanted[venue] = latex_text(record.container_title) or ""
    year = record.year()
    if year is not None and claimed.year() not in record.years():
        wanted["date" if "date" in values and "year" not in values else "year"] = str(year)
    if record.page and (not claimed.page or (agreement.pages or 0.0) < 1.0):
        wanted["pages"] = bibtex_pages(record.page)
    if record.DOI and ("doi" not in values or _doi_not_the_records(claimed.DOI, record.DOI)):
        wanted["doi"] = record.DOI
    return wanted


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


def _mark(result: ValidationResult) -> str | None:
    """The `citeaudit` field of an entry a reader must look at; None for a clean verified one."""
    if result.status is not Status.VERIFIED:  # a mismatch's notices are the other paper's
        return latex_text(_one_line(f"{result.status.value}: {result.reason}")) or ""
    notice = leading_notice(result.notices)
    if notice is None and not result.retracted:
        return None
    if notice is not None:
        where = ", ".join(
            p for p in (notice.url or notice.identifier, notice.date, notice.source) if p
        )
        text = f"{notice.kind.replace('_', ' ')} notice" + (f" ({where})" if where else "")
        text += f": {notice.reason}" if notice.reason else ""
    else:
        text = "retracted"
    return latex_text(_one_line(text)) or ""


def _rewrite(raw: str, changes: Sequence[Change]) -> str:
    """The entry's text with changed values replaced in place and new fields added at its end."""
    values = _values(raw)
    edits = []
    for change in changes:
        if change.field not in values:
            continue
        start, end, _ = values[change.field]
        if change.new is None:  # from the comma before the field's name to its value's end
            edits.append((raw.rfind(",", 0, raw.rfind("=", 0, start)), end, ""))
        else:
            edits.append((start, end, "{" + change.new + "}"))
    for start, end, text in sorted(edits, reverse=True):
        raw = raw[:start] + text + raw[end:]
    added = [c for c in changes if c.field not in values]
    if not added:
        return raw
    close = len(raw) - 1  # the entry's closing `}` or `)`
    body = raw[:close].rstrip()
    indent, width = _layout(raw)
    lines = "".join(
        f",\n{indent}{c.field.ljust(max(width, len(c.field) + 1))}= {{{c.new}}}" for c in added
    )
    return body.rstrip(",") + lines + ",\n" + raw[close:]


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
        if name:
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
