"""Small helpers every reader shares: names, dates, pages, and building a Reference."""

import gc
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import regex

from models.audit import Identifiers, ReadResult, Reference
from models.csl import ET_AL, YEARS, CSLDate, CSLItem, CSLName, month_number, named
from tasks.identifiers import identifiers_of, without_identifiers

# Real fields are at most a few thousand characters; one past this bound is an input error for
# its entry (a record of hostile size never reaches the matcher or the library).
MAX_FIELD_CHARS = 1_000_000
FIELD_TOO_LONG = f"field longer than {MAX_FIELD_CHARS:,} characters"

# A whitespace run is matched from its start only ((?<!\s)) and whole (possessive): `\s*-` tried
# from each of a long run's characters was quadratic. `re` stays quadratic on this one; `regex`
# with the lookbehind is linear.
_PAGE_DASHES = regex.compile(r"(?:(?<!\s)\s*+|(?<=\s))(?:-{1,3}|[\u2010-\u2015\u2212])\s*+")
_TRAILING_INITIALS = re.compile(r"^(\S.*?)(?<!\s)\s++((?:[A-Z]\.?-?){1,4})$")


def normalize_pages(pages: str | None) -> str | None:
    """`12--34`, `12 – 34` -> `12-34` (CSL writes a plain hyphen)."""
    if not pages or not pages.strip():
        return None
    return _PAGE_DASHES.sub("-", pages.strip())


def page_range(start: str | None, end: str | None) -> str | None:
    """RIS-style SP/EP pairs -> one CSL page range."""
    start, end = (start or "").strip(), (end or "").strip()
    if start and end and end != start:
        return normalize_pages(f"{start}-{end}")
    return normalize_pages(start or end)


def issued_date(year: str | None, month: str | int | None = None) -> CSLDate | None:
    """A CSL date from a year (and month) as an export wrote them; unparseable years stay raw."""
    if not year or not year.strip():
        return None
    text = year.strip()
    if text.isdigit():
        parts: list[int | str] = [int(text)]
        if (number := month_number(month)) is not None:
            parts.append(number)
        return csl_date(parts)
    return raw_date(text)


def date_from_text(text: str | None) -> CSLDate | None:
    """`2018/03/01/`, `2018-03-01`, `2018 Mar 1` -> date-parts; else kept as raw."""
    if not text or not text.strip():
        return None
    words = re.split(r"[\s/\-.,]+", text.strip())
    year = words[0] if words and len(words[0]) == 4 and words[0].isdigit() else None
    if year is None:
        return raw_date(text)
    parts: list[int | str] = [int(year)]
    if len(words) > 1 and (month := month_number(words[1])) is not None:
        parts.append(month)
        if len(words) > 2 and words[2].isdigit() and 1 <= int(words[2]) <= 31:
            parts.append(int(words[2]))
    return csl_date(parts)


def raw_date(text: str) -> CSLDate:
    return CSLDate.model_validate({"raw": text.strip()})


def csl_date(parts: list[int | str]) -> CSLDate:
    return CSLDate.model_validate({"date-parts": [parts]})


def name_from_text(text: str) -> CSLName | None:
    """`Family, Given` (RIS, WoS, MEDLINE FAU) and `Family GI` (Embase, MEDLINE AU) -> a CSL
    name; anything else (`World Health Organization`) -> a literal name."""
    text = text.strip().strip(",;").strip()
    if not text:
        return None
    family, comma, given = text.partition(",")
    if not comma and (initials := _TRAILING_INITIALS.match(text)):
        family, given = initials.group(1), initials.group(2)
    elif not comma:
        return CSLName.model_validate({"literal": text})
    return CSLName.model_validate({"family": family.strip(), "given": given.strip() or None})


def name_list(names: list[CSLName], *, truncated: bool = False) -> list[CSLName] | None:
    """The people of a name list, then one {"literal": ET_AL} if the input marked the list as
    shortened (an "et al." or "others" among its names, or `truncated`): the author matcher then
    asks only for the names given, and pandoc prints the marker as "et al."."""
    people = named(names)
    if people and (truncated or len(people) < len(names)):
        people.append(CSLName.model_validate({"literal": ET_AL}))
    return people or None


def make_reference(
    item: CSLItem,
    source_file: Path,
    entry_key: str,
    line: int | None = None,
    raw: str | None = None,
    ids: Identifiers | None = None,
) -> Reference:
    """A Reference with provenance; identifiers from the item's fields and raw text unless given."""
    # model_validate, not keyword arguments: mypy (without pydantic's plugin) takes the models'
    # `Field(None, ...)` defaults for required arguments.
    return Reference.model_validate(
        {
            "item": item,
            "provenance": {"source_file": str(source_file), "entry_key": entry_key, "line": line},
            "ids": ids if ids is not None else identifiers_of(item, raw),
            "raw": raw,
        }
    )


def csl_item(fields: dict[str, Any]) -> CSLItem:
    """A CSL item from CSL-JSON keys (`container-title`, ...), empty values left out."""
    return CSLItem.model_validate({k: v for k, v in fields.items() if v not in (None, "", [])})


_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.IGNORECASE)
_YEAR_IN_PARENS = re.compile(rf"\(({YEARS})[a-z]?\)")


def free_text_item(key: str, text: str, ids: Identifiers) -> CSLItem:
    """The little a free-text reference safely says: its identifiers and a `(2018)`-style year.
    No title or author guessing: that is the registry matcher's job, with the raw text."""
    # Not inside an identifier: a SICI DOI such as 10.1175/1520-0493(1974)102<0736:...> holds one.
    year = _YEAR_IN_PARENS.search(without_identifiers(text))
    return csl_item(
        {
            "id": key,
            "type": "document",
            "DOI": ids.doi,
            "PMID": ids.pmid,
            "PMCID": ids.pmcid,
            "URL": url.group(0).rstrip(".,;:") if ids.url and (url := _URL.search(text)) else None,
            "issued": csl_date([int(year.group(1))]) if year else None,
        }
    )


def read_each(paths: Sequence[Path], read_file: Callable[[Path], ReadResult]) -> ReadResult:
    """One result for several files of the same format, each read on its own."""
    result = ReadResult()
    for path in paths:
        result.extend(read_file(path))
    return result


def merged(parts: Iterable[ReadResult]) -> ReadResult:
    """One result of a reader's streamed parts."""
    result = ReadResult()
    for part in parts:
        result.extend(part)
    return result


def stream_each(
    paths: Sequence[Path], stream_file: Callable[[Path], Iterator[ReadResult]]
) -> Iterator[ReadResult]:
    """The results of several files of the same format, each streamed on its own."""
    for path in paths:
        yield from stream_file(path)


def too_long_field(value: object) -> str | None:
    """The name of a field (of nested dicts and lists: the first) whose text is longer than
    MAX_FIELD_CHARS, else None."""
    pending: list[tuple[str, object]] = [("", value)]
    while pending:
        name, node = pending.pop()
        if isinstance(node, str) and len(node) > MAX_FIELD_CHARS:
            return name or "value"
        if isinstance(node, dict):
            pending.extend((str(key), child) for key, child in node.items())
        elif isinstance(node, list):
            pending.extend((name, child) for child in node)
    return None


@contextmanager
def young_collections_only() -> Iterator[None]:
    """A large library is millions of small objects that all live to the end; full collections
    would rescan the growing heap again and again (superlinear: 100,000 entries took 2.5 times
    longer per entry than 20,000). Turning the collector off instead let the garbage cycles of
    parsing and decoding pile up (a peak of ~40 KB per entry, 3 GB for 100,000): so collect the
    young generations only, whose size does not grow with the library. A streamed read keeps
    nothing and needs no such setting; a whole read (read_inputs) does."""
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, 10, 1_000_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
