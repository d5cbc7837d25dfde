"""What `citeaudit zotero audit --write-back` sends to a Zotero library, as data: the items whose
citeaudit tags change, and one child note per flagged item.

    finding of the item's citation          tag (prefix citeaudit:)   child note
    mismatch, not_found, unmatched,         citeaudit:STATUS          the reason, the registry's
      unverified                                                      record, the date
    a retraction, correction or             citeaudit:retracted,      (the same note)
      expression-of-concern notice          :corrected, :expression_of_concern
    verified, no notice                     none                      an earlier run's note says
                                                                      it verifies now

An item's own tags stay as they are; a citeaudit tag it no longer earns is removed. An item whose
tags are already right is not sent. Each object carries the version the item was read at, so
Zotero refuses it (412) if the user changed the item meanwhile.
"""

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

PREFIX = "citeaudit:"
NOTE_TAG = "citeaudit"
FLAGGED = ("mismatch", "not_found", "unmatched", "unverified")
NOTICES = ("retracted", "corrected", "expression_of_concern")


@dataclass
class WriteBack:
    items: list[dict[str, Any]] = field(default_factory=list)  # tag changes, with versions
    notes: list[dict[str, Any]] = field(default_factory=list)  # new or updated child notes
    flagged: int = 0


def earned_tags(row: dict[str, Any]) -> list[str]:
    tags = [f"{PREFIX}{row['status']}"] if row["status"] in FLAGGED else []
    return tags + [f"{PREFIX}{notice}" for notice in NOTICES if row.get(notice)]


def write_back(
    items: Sequence[dict[str, Any]], citations: pl.DataFrame, notes: Sequence[dict[str, Any]]
) -> WriteBack:
    """The objects to write for `items` (as read) given the job's citations (keyed by item
    key) and the library's citeaudit notes."""
    rows = {row["entry_key"]: row for row in citations.iter_rows(named=True)}
    note_of = {n["data"].get("parentItem"): n for n in notes}
    plan = WriteBack()
    for item in items:
        row = rows.get(item["key"])
        if row is None:
            continue
        data = item["data"]
        earned = earned_tags(row)
        plan.flagged += bool(earned)
        own = [t for t in data.get("tags", []) if not t["tag"].startswith(PREFIX)]
        tags = own + [{"tag": tag} for tag in earned]
        if sorted(t["tag"] for t in tags) != sorted(t["tag"] for t in data.get("tags", [])):
            plan.items.append({"key": item["key"], "version": item["version"], "tags": tags})
        earlier = note_of.get(item["key"])
        if earned or earlier:
            plan.notes += _note(item["key"], row, earned, earlier)
    return plan


def _note(
    parent: str, row: dict[str, Any], earned: list[str], earlier: dict[str, Any] | None
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
    else:
        lines = [
            "<h2>citeaudit: verified</h2>",
            "<p>An earlier check flagged it; it verifies now.</p>",
        ]
    lines.append(f"<p>Checked {checked} by citeaudit.</p>")
    text = "\n".join(lines)
    if earlier is not None:
        if earlier["data"].get("note") == text:
            return []
        return [{"key": earlier["key"], "version": earlier["version"], "note": text}]
    note = {"itemType": "note", "parentItem": parent, "note": text, "tags": [{"tag": NOTE_TAG}]}
    return [note]
