"""CSL-JSON reader: a list of items (Zotero, pandoc, manubot) or a single item (Crossref content
negotiation). An item that is not a valid CSL item becomes an InputError; the others are kept.
An item without `id` (some exporters leave it out) gets its position, `#3`, rather than being lost.
Generic JSON reference lists that key their fields loosely (`authors`, `year`, `venue`, `doi`)
are read as the CSL variables they stand for.
"""

import codecs
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import ijson
from pydantic import ValidationError

from models.audit import InputError, ReadResult
from models.csl import CSLItem
from tasks.read.agent_json import loose_csl_fields
from tasks.read.common import (
    make_reference,
    merged,
    stream_each,
)
from tasks.read.text import MAX_JSON_DEPTH, is_clean_utf8, load_json, read_head

FORMAT = "csljson"


def read(paths: Sequence[Path]) -> ReadResult:
    return merged(stream(paths))


def stream(paths: Sequence[Path]) -> Iterator[ReadResult]:
    return stream_each(paths, stream_csljson_file)


def detect(path: Path, head: str) -> bool:
    """Any JSON array or object: more specific JSON readers come before this one."""
    return head.lstrip("\ufeff \t\r\n")[:1] in ("[", "{")


def stream_csljson_file(path: Path) -> Iterator[ReadResult]:
    """A result per item. A big array (clean UTF-8, valid JSON, nested at most MAX_JSON_DEPTH
    levels: checked first, in one pass that builds nothing) is read an item at a time; any
    other file is read whole, and says what is wrong with it."""
    if _streamable_array(path):
        with _without_bom(path) as handle:
            for position, data in enumerate(ijson.items(handle, "item", use_float=True), 1):
                yield _read_item(path, position, data)
        return
    data, error = load_json(path)
    if error:
        yield ReadResult(errors=[error])
        return
    for position, data_item in enumerate(data if isinstance(data, list) else [data], start=1):
        yield _read_item(path, position, data_item)


def _streamable_array(path: Path) -> bool:
    if not is_clean_utf8(path) or read_head(path).lstrip("\ufeff \t\r\n")[:1] != "[":
        return False
    depth = 0
    try:
        with _without_bom(path) as handle:
            for _prefix, event, _value in ijson.parse(handle):
                if event in ("start_map", "start_array"):
                    depth += 1
                    if depth > MAX_JSON_DEPTH:
                        return False
                elif event in ("end_map", "end_array"):
                    depth -= 1
    except ijson.JSONError:
        return False
    return True


def _without_bom(path: Path) -> BinaryIO:
    handle = path.open("rb")
    if handle.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
        handle.seek(0)
    return handle


def _read_item(path: Path, position: int, data: Any) -> ReadResult:
    key = f"#{position}"
    if isinstance(data, dict) and data.get("id"):
        key = str(data["id"])
    try:
        item = CSLItem.from_csl(_with_loose_fields(_with_id(data, f"#{position}")))
    except (ValidationError, TypeError) as exc:
        reason = f"not a CSL item: {_reason(exc)}"
        return ReadResult(errors=[InputError(source_file=str(path), entry_key=key, reason=reason)])
    return ReadResult(references=[make_reference(item, path, item.id)])


def _with_id(data: Any, fallback: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object, found {type(data).__name__}")
    return data if data.get("id") not in (None, "") else {**data, "id": fallback}


def _with_loose_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The item with the CSL variables it lacks read from loose keys: a generic JSON reference
    list (RefChecker's: `authors` as strings, `year`, `venue`, `url`) would otherwise be
    audited on its title alone, its authors, year and venue silently dropped."""
    loose, _ = loose_csl_fields(data)
    return {**data, **{key: value for key, value in loose.items() if key not in data}}


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" + (
            f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        )
    return str(exc)
