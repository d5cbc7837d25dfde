"""What `citeaudit zotero audit --write-back` sends to a Zotero library, as data: the items whose
citeaudit tags change, and one child note per flagged item.

    finding of the item's citation          tag (prefix citeaudit:)   child note
    mismatch, not_found, unmatched,         citeaudit:STATUS          the reason, the registry's
      unverified                                                      record, the date
    a retraction, correction or             citeaudit:retracted,      (the same note)
      expression-of-concern notice          :corrected, :expression_of_concern
    verified, no notice                     none                      an earlier run's note says
                                                                      it verifies now; with --fix,
                                                                      what was not corrected

An item's own tags stay as they are; a citeaudit tag it no longer earns is removed. An item whose
tags are already right is not sent. Each object carries the version the item was read at, so
Zotero refuses it (412) if the user changed the item meanwhile. A note is citeaudit's when it
carries MARKER (every note citeaudit writes does): only those are updated; a user's own note is
left alone, even one tagged `citeaudit`.

With `--fix`, a verified item also gets the corrections `citeaudit fix` makes, decided by the
same rule table (tasks/render/fix.py `corrections`) and written as the item's own fields, plain
text, in the same object as its tags (one version, one write):

    corrected (CSL)     Zotero field (FIELDS: only the item types that have it)
    title               title
    author              the creators of type author (editors and others kept, after them)
    container-title     publicationTitle, proceedingsTitle or bookTitle, as the type names it
    issued              date (the record's year)
    page                pages
    DOI                 DOI; for a type without that field (a book, a thesis, a report) a
                        `DOI: ...` line of extra, as Zotero keeps it (and reads it back)

A record's author list of more than fix's MAX_NAMES (10) is written to a .bib as the first ten
and `and others`; Zotero has no such marker, so that list is not written and the item's note says
so, as it does for a record's value that looks broken. Where unsure: say so in the note, never
rewrite. An item type the reader does not know (ITEM_TYPES) gets no correction.
"""

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.audit import Checked
from models.csl import CSLName, named
from tasks.frames import checked_from_row
from tasks.read.zotero import EXTRA_LINE, ITEM_TYPES
from tasks.render.fix import Change, corrections

PREFIX = "citeaudit:"
NOTE_TAG = "citeaudit"
# What marks a note as written by citeaudit: an attribute of the note's wrapping element.
MARKER = 'data-citeaudit="note"'
FLAGGED = ("mismatch", "not_found", "unmatched", "unverified")
NOTICES = ("retracted", "corrected", "expression_of_concern")
# Where a correction goes in each item type (Zotero's schema; the reader's item types only, an
# unknown type gets none): a type absent from a variable's row has no such field.
_ALL = frozenset(ITEM_TYPES)
FIELDS: dict[str, dict[str, str]] = {
    "title": dict.fromkeys(_ALL, "title"),
    # a patent's inventors, a talk's presenters, a program's programmers are no authors
    "author": dict.fromkeys(_ALL - {"patent", "presentation", "computerProgram"}, "creators"),
    "container-title": {
        "journalArticle": "publicationTitle",
        "magazineArticle": "publicationTitle",
        "newspaperArticle": "publicationTitle",
        "conferencePaper": "proceedingsTitle",
        "bookSection": "bookTitle",
    },
    "issued": dict.fromkeys(_ALL - {"patent"}, "date"),  # a patent has issueDate
    "page": dict.fromkeys(
        {
            "journalArticle",
            "magazineArticle",
            "newspaperArticle",
            "conferencePaper",
            "bookSection",
            "encyclopediaArticle",
            "dictionaryEntry",
            "report",
            "patent",
        },
        "pages",
    ),
    # every other type keeps its DOI as a line of extra
    "DOI": dict.fromkeys({"journalArticle", "conferencePaper", "preprint", "dataset"}, "DOI"),
}


@dataclass
class WriteBack:
    items: list[dict[str, Any]] = field(default_factory=list)  # tags and fields, with versions
    notes: list[dict[str, Any]] = field(default_factory=list)  # new or updated child notes
    flagged: int = 0
    corrected: dict[str, list[Change]] = field(default_factory=dict)  # item key -> its fields
    doubts: dict[str, list[str]] = field(default_factory=dict)  # item key -> left as it is


def earned_tags(row: dict[str, Any]) -> list[str]:
    tags = [f"{PREFIX}{row['status']}"] if row["status"] in FLAGGED else []
    return tags + [f"{PREFIX}{notice}" for notice in NOTICES if row.get(notice)]


def write_back(
    items: Sequence[dict[str, Any]],
    citations: pl.DataFrame,
    notes: Sequence[dict[str, Any]],
    fix: bool = False,
) -> WriteBack:
    """The objects to write for `items` (as read) given the job's citations (keyed by item
    key) and the library's citeaudit notes; with `fix`, verified items' corrections too."""
    rows = {row["entry_key"]: row for row in citations.iter_rows(named=True)}
    note_of = {n["data"].get("parentItem"): n for n in notes if ours(n)}
    plan = WriteBack()
    for item in items:
        row = rows.get(item["key"])
        if row is None:
            continue
        data = item["data"]
        earned = earned_tags(row)
        plan.flagged += bool(earned)
        update: dict[str, Any] = {}
        own = [t for t in data.get("tags", []) if not t["tag"].startswith(PREFIX)]
        tags = own + [{"tag": tag} for tag in earned]
        if sorted(t["tag"] for t in tags) != sorted(t["tag"] for t in data.get("tags", [])):
            update["tags"] = tags
        doubts: list[str] = []
        if fix:
            fields, changes, doubts = zotero_fix(data, checked_from_row(row))
            update |= fields
            if changes:
                plan.corrected[item["key"]] = changes
            if doubts:
                plan.doubts[item["key"]] = doubts
        if update:
            plan.items.append({"key": item["key"], "version": item["version"], **update})
        earlier = note_of.get(item["key"])
        if earned or earlier or doubts:
            plan.notes += _note(item["key"], row, earned, earlier, doubts)
    return plan


def ours(note: dict[str, Any]) -> bool:
    """Whether citeaudit wrote `note` (the user's own notes are never rewritten)."""
    return MARKER in str(note["data"].get("note") or "")


def zotero_fix(
    data: dict[str, Any], checked: Checked
) -> tuple[dict[str, Any], list[Change], list[str]]:
    """The fields to set in an item's `data` from its verified record (fix's rule table, FIELDS
    above), the changes as the report shows them, and the doubts: what is left as it is."""
    kind = data["itemType"]
    if kind not in ITEM_TYPES:
        return {}, [], []
    container = FIELDS["container-title"].get(kind)
    holds = {"DOI"} if checked.reference.item.DOI else set()
    holds |= {"container-title"} if container and data.get(container) else set()
    found, doubts = corrections(checked.reference.item, checked.result, holds)
    fields: dict[str, Any] = {}
    changes: list[Change] = []
    for correction in found:
        name = FIELDS[correction.field].get(kind)
        if correction.field == "DOI" and (name is None or _doi_in_extra(data)):
            name = "extra"
        if name is None:
            continue
        if isinstance(correction.value, list):
            if any(name.is_et_al() for name in correction.value):
                record = checked.result.record
                count = len(named(record.author if record else None))
                doubts.append(
                    f"the registry's author list ({count} names) is not written: Zotero keeps "
                    "no `and others`"
                )
                continue
            new: Any = _creators(correction.value) + [
                c for c in data.get("creators", []) if c.get("creatorType") != "author"
            ]
            old, shown = _shown(data.get("creators")), _shown(new)
        elif name == "extra":
            new = _extra_with_doi(str(data.get("extra") or ""), str(correction.value))
            old, shown = data.get("extra") or None, new
        else:
            new = shown = correction.value
            old = data.get(name) or None
        if new != data.get(name):
            fields[name] = new
            changes.append(Change(name, old, shown, correction.rule))
    return fields, changes, doubts


def _creators(names: list[CSLName]) -> list[dict[str, str]]:
    """Zotero's creators of type author: a two-field name, or one field for an organisation."""
    creators = []
    for name in names:
        if name.family:
            given = " ".join(p for p in (name.given, name.dropping_particle) if p)
            family = " ".join(p for p in (name.non_dropping_particle, name.family) if p)
            creators.append({"creatorType": "author", "firstName": given, "lastName": family})
        else:
            creators.append({"creatorType": "author", "name": name.literal or name.given or ""})
    return creators


def _shown(creators: Any) -> str | None:
    """Creators as one line of the report: `Family, Given; ...`."""
    parts = [
        c.get("name") or ", ".join(p for p in (c.get("lastName"), c.get("firstName")) if p)
        for c in creators or []
        if c.get("creatorType") == "author"
    ]
    return "; ".join(parts) or None


def _doi_in_extra(data: dict[str, Any]) -> bool:
    """The item keeps its DOI as a line of extra (its DOI field, if any, is empty)."""
    return not data.get("DOI") and any(
        m.group(1).lower() == "doi" for m in EXTRA_LINE.finditer(str(data.get("extra") or ""))
    )


def _extra_with_doi(extra: str, doi: str) -> str:
    """`extra` with its `DOI: ...` line saying `doi` (added as its last line if it has none)."""
    line = f"DOI: {doi}"
    for match in EXTRA_LINE.finditer(extra):
        if match.group(1).lower() == "doi":
            return extra[: match.start()] + line + extra[match.end() :]
    return f"{extra}\n{line}" if extra else line


def _note(
    parent: str,
    row: dict[str, Any],
    earned: list[str],
    earlier: dict[str, Any] | None,
    doubts: Sequence[str] = (),
) -> list[dict[str, Any]]:
    checked = row["checked_at"].date().isoformat() if row.get("checked_at") else ""
    if earned:
        lines = [f"<h2>citeaudit: {html.escape(', '.join(t[len(PREFIX) :] for t in earned))}</h2>"]
        lines.append(f"<p>{html.escape(row['reason'] or row['error'] or '')}</p>")
        if row.get("matched_id"):
            record = ", ".join(
                str(row[k])
                for k in ("matched_authors", "matched_title", "matched_container", "matched_year")
                if row.get(k)
            )
            where = f"{row['registry']} {row['matched_id']}"
            lines.append(f"<p>Registry record ({html.escape(where)}): {html.escape(record)}</p>")
    elif doubts:
        lines = ["<h2>citeaudit: verified</h2>"]
        lines += [f"<p>Not corrected: {html.escape(doubt)}.</p>" for doubt in doubts]
    else:
        lines = [
            "<h2>citeaudit: verified</h2>",
            "<p>An earlier check flagged it; it verifies now.</p>",
        ]
    lines.append(f"<p>Checked {checked} by citeaudit.</p>")
    text = f"<div {MARKER}>\n" + "\n".join(lines) + "\n</div>"
    if earlier is not None:
        if earlier["data"].get("note") == text:
            return []
        return [{"key": earlier["key"], "version": earlier["version"], "note": text}]
    note = {"itemType": "note", "parentItem": parent, "note": text, "tags": [{"tag": NOTE_TAG}]}
    return [note]
