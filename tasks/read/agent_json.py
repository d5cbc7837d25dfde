"""What the readers of agent-system outputs share: JSON of an expected shape, loose metadata to
CSL, and pydantic errors turned into one readable reason per entry.

Agent systems write bibliographic metadata loosely ("author": "Smith, J. and Doe, A.",
"year": "2021", "date": "Aug 17 2025"); these helpers turn it into CSL without guessing more
than the text says.
"""

import re
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from bibtexparser.middlewares.names import parse_single_name_into_parts
from pydantic import ValidationError

from models.audit import InputError, ReadResult, Reference
from models.csl import CSLDate, CSLItem, CSLName, is_et_al_text
from tasks.read.common import make_reference, name_list
from tasks.read.text import UnreadableFileError, load_json, parse_json, read_text

# A whitespace run is matched from its start only ((?<!\s)) and whole (possessive): `\s+and`
# tried from each of a long run's characters was quadratic (tasks/read/__init__.py).
_NAME_SEPARATORS = re.compile(r"(?<!\s)(?:\s++and\s++|\s*+[;&]\s*+)", re.IGNORECASE)
# "Smith J, Doe A, et al.": the marker written after the last name rather than as one.
_TRAILING_ET_AL = re.compile(r"(?<![\s,])[\s,]++et\.?\s*+al\.?$", re.IGNORECASE)
_SURNAME_INITIALS = re.compile(r"^([^,]*?[^,\s])\s++([A-Z]{1,3})$")
_DATE_FORMATS = ("%b %d %Y", "%b %d, %Y", "%B %d %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y")

T = TypeVar("T")


def sniff_json(path: Path, head: str) -> Any:
    """The JSON value of the file whose first characters are `head`, or None when it is not
    JSON. Telling agent formats apart needs the whole document, so a JSON-looking head that is
    cut short is completed from the file."""
    if not head.lstrip().startswith(("{", "[")):
        return None
    try:
        return parse_json(head)
    except ValueError:
        pass
    try:
        stat = path.stat()
    except OSError:
        return None
    return _whole_json(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _whole_json(path: str, mtime_ns: int, size: int) -> Any:
    # Cached: each agent reader's detect asks about the same file in turn (read-only use).
    try:
        return parse_json(read_text(Path(path)))
    except (ValueError, UnreadableFileError):
        return None


def shape_error(path: Path, expected: str) -> InputError:
    return InputError(source_file=str(path), reason=f"not {expected}")


def load_shape(
    path: Path, find: Callable[[Any], T | None], expected: str
) -> tuple[ReadResult, T | None]:
    """A fresh result and the part of the file's JSON that `find` recognises; None (with the
    reason in the result's errors) when the file is not JSON or not of the expected shape."""
    result = ReadResult()
    data, error = load_json(path)
    if error:
        result.errors.append(error)
        return result, None
    found = find(data)
    if found is None:
        result.errors.append(shape_error(path, expected))
    return result, found


def validation_reason(exc: ValidationError) -> str:
    """`claim_text: Field required; citations.0.confidence: Input should be ...`"""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


def entry_error(path: Path, entry: str, reason: str) -> InputError:
    return InputError(source_file=str(path), entry_key=entry, reason=reason)


# Loose metadata keys -> CSL variable (first key present wins): what agents and generic JSON
# reference lists (RefChecker's {"authors": [...], "year": 2024, "venue": ...}) write.
_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "title": ("title",),
    "container-title": ("container-title", "container_title", "journal", "venue", "publication"),
    "publisher": ("publisher",),
    "volume": ("volume",),
    "issue": ("issue", "number"),
    "page": ("page", "pages"),
    "DOI": ("doi", "DOI"),
    "PMID": ("pmid", "PMID"),
    "PMCID": ("pmcid", "PMCID"),
    "ISBN": ("isbn", "ISBN"),
    "URL": ("url", "URL"),
    "type": ("type",),
}
_NAME_KEYS = ("author", "authors")
_DATE_KEYS = ("year", "date", "issued", "published")


def loose_csl_fields(meta: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """CSL variables read from loosely keyed metadata, and the keys they were read from."""
    used: set[str] = set()
    fields: dict[str, Any] = {}
    for csl_key, keys in _TEXT_FIELDS.items():
        for k in keys:
            if meta.get(k) not in (None, ""):
                fields[csl_key] = meta[k]
                used.add(k)
                break
    name_key = next((k for k in _NAME_KEYS if meta.get(k)), None)
    if name_key:
        fields["author"] = csl_names(meta[name_key])
        used.add(name_key)
    date_key = next((k for k in _DATE_KEYS if meta.get(k) not in (None, "")), None)
    if date_key:
        fields["issued"] = csl_date(meta[date_key])
        used.add(date_key)
    return fields, used


def csl_names(value: Any) -> list[CSLName] | None:
    """Authors as agents write them: one string ("A and B", "A; B"), a list of strings, or
    CSL-like dicts. An "et al." (or "others") stays as the list's last name, the marker that the
    list names only the first authors."""
    if not value:
        return None
    raw = value if isinstance(value, list) else [value]
    names: list[CSLName] = []
    truncated = False
    for entry in raw:
        if isinstance(entry, dict):
            names.append(CSLName.model_validate(entry))
        elif isinstance(entry, str):
            text, marked = _TRAILING_ET_AL.subn("", entry.strip())
            parts = [name for part in _NAME_SEPARATORS.split(text) for name in _vancouver(part)]
            truncated = truncated or bool(marked) or any(map(is_et_al_text, parts))
            names.extend(_name(part) for part in parts if part and not is_et_al_text(part))
    return name_list(names, truncated=truncated)


def _vancouver(text: str) -> list[str]:
    """The names of "Alkutbe RB, Alruban A" (PubMed style: surname and initials, commas between
    names); any other text ("Alkutbe, Rabab B.") is one name."""
    pieces = [piece.strip() for piece in text.split(",")]
    if len(pieces) > 1 and all(_SURNAME_INITIALS.match(piece) for piece in pieces):
        return pieces
    return [text.strip()]


def _name(text: str) -> CSLName:
    if len(text.split()) == 1:  # a group or a mononym ("OpenAI"): CSL's literal, not a surname
        return CSLName.model_validate({"literal": text})
    if m := _SURNAME_INITIALS.match(text):  # PubMed style: "Costa-Matos L"
        return CSLName.model_validate({"family": m.group(1), "given": m.group(2)})
    parts = parse_single_name_into_parts(text, strict=False)
    if not parts.last:
        return CSLName.model_validate({"literal": text})
    return CSLName.model_validate(
        {
            "family": " ".join(parts.last),
            "given": " ".join(parts.first) or None,
            "non-dropping-particle": " ".join(parts.von) or None,
            "suffix": " ".join(parts.jr) or None,
        }
    )


def csl_date(value: Any) -> CSLDate | None:
    """A year (2021, "2021"), an ISO date or timestamp, "Aug 17 2025", or a CSL date dict."""
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        return CSLDate.model_validate(value)  # by alias or field name: date-parts, date_parts
    if isinstance(value, int) and not isinstance(value, bool):
        return CSLDate.from_year(value)
    text = str(value).strip()
    if text.isdigit():
        return CSLDate.from_year(int(text))
    moment = _parse_moment(text)
    if moment is None:
        return CSLDate.model_validate({"raw": text})
    return CSLDate.model_validate({"date-parts": [[moment.year, moment.month, moment.day]]})


def _parse_moment(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def unit_score(value: Any) -> float | None:
    """A stated score in [0, 1]; percentages (85) are read as 0.85, anything else is dropped."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value) / 100 if 1 < value <= 100 else float(value)
    return score if 0.0 <= score <= 1.0 else None


def reference(
    item: CSLItem,
    path: Path,
    entry_key: str,
    *,
    raw: str | None = None,
    claim_ids: list[str] | None = None,
    location: str | None = None,
    snippet: str | None = None,
    stated_confidence: float | None = None,
) -> Reference:
    """A Reference (identifiers normalised from the item and its raw text) with what agent
    outputs add: the claims it backs, where in the source, the quoted snippet, a confidence."""
    return make_reference(item, path, entry_key, raw=raw).model_copy(
        update={
            "claim_ids": claim_ids or [],
            "location": location,
            "snippet": snippet,
            "stated_confidence": stated_confidence,
        }
    )
