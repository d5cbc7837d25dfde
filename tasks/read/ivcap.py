"""The IVCAP CrewAI citation tracker's store: CSL-JSON items plus tracking fields.

The tracker writes a CitationDatabase (`{"job_id", "style", "citations": [...]}`) or a plain
list of items, each a CSL item (often with snake_case keys such as `container_title`) carrying
`citation_number`, `validated`, `validation_method`, `credibility_score`, `in_text_count` and
friends. The tracker's verdicts are claims like any other: they are kept under the item's
`tracker` field and re-checked by validation, never trusted.
"""

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.audit import ReadResult
from models.csl import CSLItem
from tasks.read.agent_json import (
    entry_error,
    load_shape,
    reference,
    sniff_json,
    validation_reason,
)
from tasks.read.common import read_each

FORMAT = "ivcap"


class TrackerFields(BaseModel):
    """What the tracker adds to a CSL item (its CSLCitation model's custom fields)."""

    model_config = ConfigDict(extra="forbid")

    citation_number: int | None = None
    added_by: str | None = None
    added_at: datetime | None = None
    validated: bool | None = None
    validation_method: str | None = None
    credibility_score: float | None = Field(None, ge=0.0, le=1.0)
    impact_factor: float | None = None
    citation_count: int | None = None
    in_text_count: int | None = None
    quality_issues: list[str] | None = None


_TRACKER_KEYS = frozenset(TrackerFields.model_fields)
# Keys only the tracker writes; `validated` alone is enough, plain CSL-JSON never has it.
_MARKERS = frozenset(
    {"citation_number", "validated", "validation_method", "credibility_score", "in_text_count"}
)


def _items(data: Any) -> list[Any] | None:
    """The store's items, when it holds CSL items (an `id` and a `type` or `title`)."""
    items = data.get("citations") if isinstance(data, dict) else data
    if isinstance(items, list) and any(
        isinstance(item, dict) and "id" in item and {"type", "title"} & item.keys()
        for item in items
    ):
        return items
    return None


def detect(path: Path, head: str) -> bool:
    items = _items(sniff_json(path, head))
    return items is not None and any(
        isinstance(item, dict) and _MARKERS & item.keys() for item in items
    )


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_file)


def read_file(path: Path) -> ReadResult:
    result, items = load_shape(path, _items, "an IVCAP citation store")
    if items is None:
        return result
    for i, raw in enumerate(items):
        position = f"citations[{i}]"
        if not isinstance(raw, dict):
            result.errors.append(entry_error(path, position, "item is not an object"))
            continue
        key = str(raw.get("id") or position)
        try:
            tracker = TrackerFields.model_validate(
                {k: v for k, v in raw.items() if k in _TRACKER_KEYS}
            )
            csl = {k: v for k, v in raw.items() if k not in _TRACKER_KEYS}
            csl.setdefault("id", key)
            csl["tracker"] = tracker.model_dump(mode="json", exclude_none=True)
            item = CSLItem.model_validate(csl)
        except ValidationError as exc:
            result.errors.append(entry_error(path, key, validation_reason(exc)))
            continue
        result.references.append(reference(item, path, key))
    return result
