"""Turning an input file's bytes into text, the one place every reader decodes.

Exports come in UTF-8 (with or without BOM), UTF-16 with BOM (Windows EndNote, Excel) and legacy
single-byte encodings. Undecodable UTF-8 falls back to Windows-1252, which is Latin-1 plus
printable characters where Latin-1 has C1 control codes; bytes cp1252 leaves undefined fall back
to Latin-1 itself, so text always decodes. What cannot be text (NUL bytes, control-code soup) is
reported as an unreadable file.
"""

import codecs
import json
from pathlib import Path
from typing import Any

from models.audit import InputError
from tasks.read.kinds import html_to_text, looks_like_html

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Text has tabs and newlines; a file where more than this share of characters are other control
# codes is binary, whatever it decoded to.
_MAX_CONTROL_SHARE = 0.05
_TEXT_CONTROLS = frozenset("\t\n\r\f\v")


class UnreadableFileError(ValueError):
    """The file is not text in any encoding we accept."""

    def as_input_error(self, path: Path) -> InputError:
        return InputError(source_file=str(path), reason=f"unreadable file: {self}")


def decode_bytes(data: bytes, *, partial: bool = False) -> str:
    """Text of `data`; `partial` for a head cut at an arbitrary byte (tolerates a split char)."""
    errors = "replace" if partial else "strict"
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return _checked(data.decode(encoding, errors))
            except UnicodeDecodeError as exc:
                raise UnreadableFileError(
                    f"invalid {encoding} after its BOM ({exc.reason})"
                ) from exc
    if b"\x00" in data:
        raise UnreadableFileError("binary content (NUL bytes)")
    try:
        return _checked(data.decode("utf-8", errors))
    except UnicodeDecodeError:
        pass
    try:
        return _checked(data.decode("cp1252"))
    except UnicodeDecodeError:
        return _checked(data.decode("latin-1"))


def _checked(text: str) -> str:
    if "\x00" in text:
        raise UnreadableFileError("binary content (NUL characters)")
    sample = text[:4096]
    controls = sum(1 for ch in sample if ch < " " and ch not in _TEXT_CONTROLS)
    if sample and controls / len(sample) > _MAX_CONTROL_SHARE:
        raise UnreadableFileError("binary content (control characters)")
    return text


def read_text(path: Path) -> str:
    """The decoded text of a file; UnreadableFileError if it is not text or cannot be opened."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc)) from exc
    text = decode_bytes(data)
    return html_to_text(text) if looks_like_html(text) else text


def load_json(path: Path) -> tuple[Any, InputError | None]:
    """The file's JSON value, or an error naming why the whole file could not be read."""
    try:
        return json.loads(read_text(path)), None
    except UnreadableFileError as exc:
        return None, exc.as_input_error(path)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON: {exc.msg} (column {exc.colno})"
        return None, InputError(source_file=str(path), line=exc.lineno, reason=reason)


def read_head(path: Path, size: int = 4096) -> str:
    """The first `size` bytes as text, for sniffing the format."""
    try:
        with path.open("rb") as handle:
            data = handle.read(size)
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc)) from exc
    text = decode_bytes(data, partial=True)
    return html_to_text(text) if looks_like_html(text) else text
