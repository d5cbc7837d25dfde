"""CSL-JSON reader: a list of items (Zotero, pandoc, manubot) or a single item (Crossref content
negotiation). An item that is not a valid CSL item becomes an InputError; the others are kept.
An item without `id` (some exporters leave it out) gets its position, `#3`, rather than being lost.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.audit import InputError, ReadResult
from models.csl import CSLItem
from tasks.read.common import make_reference, read_each
from tasks.read.text import load_json

FORMAT = "csljson"


def read(paths: Sequence[Path]) -> ReadResult:
    return read_each(paths, read_csljson_file)


def detect(path: Path, head: str) -> bool:
    """Any JSON array or object: more specific JSON readers come before this one."""
    return head.lstrip("\ufeff \t\r\n")[:1] in ("[", "{")


def read_csljson_file(path: Path) -> ReadResult:
    result = ReadResult()
    data, error = load_json(path)
    if error:
        result.errors.append(error)
        return result
    items = data if isinstance(data, list) else [data]
    for position, data_item in enumerate(items, start=1):
        key = f"#{position}"
        try:
            item = CSLItem.from_csl(_with_id(data_item, key))
        except (ValidationError, TypeError) as exc:
            if isinstance(data_item, dict) and data_item.get("id"):
                key = str(data_item["id"])
            reason = f"not a CSL item: {_reason(exc)}"
            result.errors.append(InputError(source_file=str(path), entry_key=key, reason=reason))
            continue
        result.references.append(make_reference(item, path, item.id))
    return result


def _with_id(data: Any, fallback: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object, found {type(data).__name__}")
    return data if data.get("id") not in (None, "") else {**data, "id": fallback}


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" + (
            f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        )
    return str(exc)
