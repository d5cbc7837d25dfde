"""Turning an input file's bytes into text, the one place every reader decodes.

Exports come in UTF-8 (with or without BOM), UTF-16 with BOM (Windows EndNote, Excel) and legacy
single-byte encodings. Decoding is honest about the whole file: a BOM's encoding, else UTF-8;
a UTF-8 file with a few stray bytes stays UTF-8 (each stray byte becomes U+FFFD, so one bad byte
never changes the meaning of the rest); anything else is decoded in the encoding
charset-normalizer detects for the whole file (Windows-1252 on a tie: the usual legacy
encoding of Western exports). Both fallbacks come with a note the job reports as a warning for
that file. What cannot be text (NUL bytes, control-code soup) is reported as an unreadable file.
"""

import codecs
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import charset_normalizer

from models.audit import InputError
from tasks.errors import UsageError
from tasks.read.kinds import BOMS, html_to_text, is_binary, looks_like_html

# Text has tabs and newlines; a file where more than this share of characters are other control
# codes is binary, whatever it decoded to.
_MAX_CONTROL_SHARE = 0.05
_TEXT_CONTROLS = frozenset("\t\n\r\f\v")
# Real bibliographic JSON nests a few levels (CSL date-parts: 5); anything this deep is hostile.
MAX_JSON_DEPTH = 100


class UnreadableFileError(UsageError):
    """The file is not text in any encoding we accept."""

    def as_input_error(self, path: Path) -> InputError:
        return InputError(source_file=str(path), reason=f"unreadable file: {self}")


@dataclass(frozen=True)
class Decoded:
    text: str
    note: str | None = None  # why the text may not be what the file's author meant


# How text is written back behind each BOM (the decoders above read the BOM themselves).
_BOM_ENCODINGS = {
    codecs.BOM_UTF32_LE: "utf-32-le",
    codecs.BOM_UTF32_BE: "utf-32-be",
    codecs.BOM_UTF8: "utf-8",
    codecs.BOM_UTF16_LE: "utf-16-le",
    codecs.BOM_UTF16_BE: "utf-16-be",
}


def encoded_like(text: str, original: bytes) -> bytes:
    """`text` as the file `original` was written: behind its BOM in the encoding the BOM names,
    else UTF-8 (a legacy encoding is not written back; fix says so)."""
    for bom, _ in BOMS:
        if original.startswith(bom):
            return bom + text.encode(_BOM_ENCODINGS[bom])
    return text.encode("utf-8")


def decode_bytes(data: bytes, *, partial: bool = False) -> str:
    """Text of `data`; `partial` for a head cut at an arbitrary byte (tolerates a split char)."""
    return decode(data, partial=partial).text


def decode(data: bytes, *, partial: bool = False) -> Decoded:
    errors = "replace" if partial else "strict"
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return Decoded(_checked(data.decode(encoding, errors)))
            except UnicodeDecodeError as exc:
                raise UnreadableFileError(
                    f"invalid {encoding} after its BOM ({exc.reason})"
                ) from exc
    if is_binary(data):
        raise UnreadableFileError("binary content (NUL bytes)")
    try:
        return Decoded(_checked(data.decode("utf-8", errors)))
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    replaced = data.decode("utf-8", "replace")
    stray = replaced.count("\ufffd")
    valid = len(replaced) - len(replaced.encode("ascii", "ignore")) - stray
    if valid >= stray:  # mostly UTF-8: the stray bytes are damage, not another encoding
        line = data.count(b"\n", 0, first_bad) + 1
        note = (
            f"{stray} byte(s) are not valid UTF-8 (the first on line {line}): "
            "each was replaced by U+FFFD, the rest read as UTF-8"
        )
        return Decoded(_checked(replaced), note)
    encoding = _detected_encoding(data)
    text = data.decode(encoding, "replace")
    return Decoded(_checked(text), f"not UTF-8: the whole file was read as {encoding} (detected)")


# charset-normalizer ranks by chaos and, within 0.01 of it, by coherence: a guess at the language
# from letter frequencies, which a few accented names among English titles cannot carry (a
# Latin-1 .bib came out as the DOS Baltic cp775, "Müller" as "M³ller"). Within that margin it is
# a tie, and a tie goes to Windows-1252, also when it is only an encoding decoding the same text.
_CHAOS_TIE = 0.01


def _detected_encoding(data: bytes) -> str:
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None:
        return "cp1252"
    lowest = min(m.chaos for m in matches)
    tied = {e for m in matches if m.chaos <= lowest + _CHAOS_TIE for e in m.could_be_from_charset}
    return "cp1252" if "cp1252" in tied else best.encoding


def decoding_note(path: Path) -> str | None:
    """Why the file's text may not be what its author meant (None: it decoded cleanly)."""
    try:
        if is_clean_utf8(path):
            return None
        return decode(path.read_bytes()).note
    except (OSError, UnreadableFileError):
        return None  # reported where the file is read


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
    return html_to_text(text) if is_html(path, text) else text


def is_html(path: Path, text: str) -> bool:
    """Whether the file is a web page, read for its text. A .bib is BibTeX whatever its head
    holds: an HTML comment above the entries is the user's, kept as written."""
    return path.suffix.lower() != ".bib" and looks_like_html(text)


def text_lines(path: Path) -> Iterator[str]:
    """The file's lines as read_text decodes them (newlines: \\n, \\r\\n or \\r), read as they
    are consumed when the file is clean UTF-8 and not HTML, so a big list is never held whole;
    any other file is decoded whole by read_text. UnreadableFileError is raised here, before
    the first line, never midway."""
    if is_clean_utf8(path):
        return _lines(partial(path.open, encoding="utf-8-sig", newline=None))
    text = read_text(path)
    return _lines(partial(io.StringIO, text, newline=None))


def _lines(opened: Callable[[], TextIO]) -> Iterator[str]:
    with opened() as source:
        for line in source:
            yield line.removesuffix("\n")


_BLOCK = 1 << 20


def is_clean_utf8(path: Path) -> bool:
    """Whether the file is clean UTF-8 (a UTF-8 BOM allowed) without NUL bytes and its head is
    neither HTML nor control codes: then its text is the file read as UTF-8, line by line. Checked
    a block at a time (the whole file, as decoding it whole would)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        with path.open("rb") as handle:
            head = handle.read(_BLOCK)
            if head.startswith(tuple(bom for bom, encoding in BOMS if encoding != "utf-8-sig")):
                return False
            text = decoder.decode(head)
            _checked(text[:4096])
            if is_html(path, text[:4096]):
                return False
            block = head
            while block:
                if b"\x00" in block:
                    return False
                block = handle.read(_BLOCK)
                decoder.decode(block, final=not block)
    except (OSError, UnicodeDecodeError, UnreadableFileError):
        return False  # read whole by read_text, which says what is wrong
    return True


def parse_json(text: str) -> Any:
    """`json.loads`, with nesting bounded: a deeper document is a ValueError (never a
    RecursionError, which would end the whole job)."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from exc
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        if children and depth > MAX_JSON_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        pending.extend((child, depth + 1) for child in children)
    return value


def load_json(path: Path) -> tuple[Any, InputError | None]:
    """The file's JSON value, or an error naming why the whole file could not be read."""
    try:
        return parse_json(read_text(path)), None
    except UnreadableFileError as exc:
        return None, exc.as_input_error(path)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON: {exc.msg} (column {exc.colno})"
        return None, InputError(source_file=str(path), line=exc.lineno, reason=reason)
    except ValueError as exc:
        return None, InputError(source_file=str(path), reason=f"not read: {exc}")


def read_head(path: Path, size: int = 4096) -> str:
    """The first `size` bytes as text, for sniffing the format."""
    try:
        with path.open("rb") as handle:
            data = handle.read(size)
    except OSError as exc:
        raise UnreadableFileError(exc.strerror or str(exc)) from exc
    text = decode_bytes(data, partial=True)
    return html_to_text(text) if is_html(path, text) else text
