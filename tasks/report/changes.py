"""A scheduled audit's changes as the report shows them, grouped by what they mean to a reader."""

from typing import Any

import polars as pl

from tasks.report.rows import Change, ChangeGroup, FieldChange, Place, text_of, title_of

# A scheduled audit's changes, by what they mean to a reader; a citation is listed once, under
# the first kind that applies, with all its changed fields.
CHANGE_KINDS = (
    "Newly retracted, corrected or of concern",
    "Newly resolving",
    "Status changed",
    "Metadata changed",
)


_NOTICE_FIELDS = ("retracted", "corrected", "expression_of_concern")


def change_kind(fields: dict[str, tuple[str, str]]) -> str:
    if any(fields.get(f, ("", ""))[1] == "true" for f in _NOTICE_FIELDS):
        return CHANGE_KINDS[0]
    if "status" in fields:
        return CHANGE_KINDS[1] if fields["status"][1] == "verified" else CHANGE_KINDS[2]
    return CHANGE_KINDS[3]


def change_groups(changes: pl.DataFrame, citations: pl.DataFrame) -> list[ChangeGroup]:
    """The changes of a scheduled audit, one row per citation (named by title and entry key)
    with each changed field's old and new value, grouped by kind in CHANGE_KINDS order."""
    keys = ("job_id", "citation_id")
    by_key = {tuple(r[k] for k in keys): r for r in citations.iter_rows(named=True)}
    jobs = changes["job_id"].n_unique() > 1 if changes.height else False
    fields: dict[tuple[Any, ...], dict[str, tuple[str, str]]] = {}
    for row in changes.iter_rows(named=True):
        key = tuple(row[k] for k in keys)
        fields.setdefault(key, {})[row["field"]] = (text_of(row["before"]), text_of(row["after"]))
    grouped: dict[str, list[Change]] = {kind: [] for kind in CHANGE_KINDS}
    for key, changed in fields.items():
        row = by_key.get(key) or {"job_id": key[0], "entry_key": key[1], "source_file": ""}
        grouped[change_kind(changed)].append(
            Change(
                Place(
                    job_id=text_of(row.get("job_id")) if jobs else None,
                    source_file=text_of(row.get("source_file")),
                    entry_key=text_of(row.get("entry_key")),
                    cited_as=title_of(row),
                ),
                [FieldChange(name, *values) for name, values in changed.items()],
            )
        )
    return [ChangeGroup(kind, rows) for kind, rows in grouped.items() if rows]
