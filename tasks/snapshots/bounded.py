"""A dump's file read in bounded memory, whatever it holds or expands to.

Every builder reads its input files through these, never with `gzip.open(...).read()`: a small
file can expand to gigabytes (a gzip bomb), and a dump's one line or one record can be as long
as the whole file. The file is streamed (gunzipped by ISA-L when it starts with gzip's magic
bytes, else read as it is) and what a builder holds at once is capped: past the cap, the file is
refused in one line naming it, the snapshot built before it kept.

    chunks(path)               the file's bytes, CHUNK at a time (the stream itself: no cap)
    lines(path, limit)         each line (its `\\n` kept); a line longer than `limit` refuses it
    read_whole(path, limit)    the whole file, if it expands to no more than `limit` (a bomb
                               refused having held no more than HELD)
    too_large(path, what, limit)  the error that refuses a file past its cap
    values(text)               at most how many JSON values (and keys) `text` holds: what a
                               decoder may make Python objects of, each many times its bytes
    too_many(path, what, limit)   the error that refuses a file holding more values than that

A gzip stream that ends early (a truncated download) or is no gzip refuses the file too.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

from isal import igzip, isal_zlib

from tasks.snapshots.store import SnapshotFormatError

CHUNK = 1 << 20  # bytes read (gunzipped) at a time
MB = 1 << 20
HELD = 64 * MB  # what read_whole holds before it knows a file ends within its limit
_GZIP = b"\x1f\x8b"
_CORRUPT = cast(type[Exception], isal_zlib.IsalError)  # its stubs call it an instance


def too_large(path: Path, what: str, limit: int) -> SnapshotFormatError:
    """The refusal of a file holding `what` (`line 7`, `a record`) longer than `limit` bytes."""
    return SnapshotFormatError(
        path, f"{what} is longer than {_size(limit)}: not a dump this builder reads (a gzip bomb?)"
    )


def values(text: bytes) -> int:
    """An upper bound on the JSON values and keys in `text`: each follows a `,`, `[` or `:`, or
    is the first (the count holds those in strings too; it errs only high)."""
    return text.count(b",") + text.count(b"[") + text.count(b":") + 1


def too_many(path: Path, what: str, limit: int) -> SnapshotFormatError:
    """The refusal of a file holding `what` (`item 7`) of more than `limit` JSON values: tiny
    values decoded are many times their bytes."""
    return SnapshotFormatError(
        path, f"{what} holds more than {limit:,} JSON values: not a dump this builder reads"
    )


def chunks(path: Path, size: int = CHUNK) -> Iterator[bytes]:
    """The file's bytes (gunzipped if it is gzipped), `size` at a time."""
    with path.open("rb") as raw:
        gzipped = raw.peek(2)[:2] == _GZIP  # peek: a FIFO cannot seek back
        stream = cast(BinaryIO, igzip.IGzipFile(fileobj=raw) if gzipped else raw)
        try:
            while chunk := stream.read(size):
                yield chunk
        except EOFError:
            raise SnapshotFormatError(
                path, "the gzip stream ends early; a truncated download?"
            ) from None
        except (OSError, _CORRUPT) as exc:
            raise SnapshotFormatError(path, f"not a readable gzip file ({exc})") from None


def lines(path: Path, limit: int) -> Iterator[bytes]:
    """Each line of the file, with its `\\n`; a line longer than `limit` bytes refuses it."""
    held = b""
    number = 0
    for chunk in chunks(path):
        *whole, held = (held + chunk).split(b"\n")
        for line in whole:
            number += 1
            if len(line) > limit:
                raise too_large(path, f"line {number}", limit)
            yield line + b"\n"
        if len(held) > limit:
            raise too_large(path, f"line {number + 1}", limit)
    if held:
        yield held


def read_whole(path: Path, limit: int, held: int = HELD) -> bytes:
    """The whole file (gunzipped), if it expands to no more than `limit` bytes; else refused
    once `limit` is passed. Past `held` bytes, the rest is only counted, and the file read again
    once it is known to end within `limit`: a bomb is refused having held no more than `held`
    (a FIFO, which cannot be read twice, is held up to `limit`)."""
    if not path.is_file():
        held = limit
    parts: list[bytes] | None = []
    total = 0
    for chunk in chunks(path):
        total += len(chunk)
        if total > limit:
            raise too_large(path, "its content", limit)
        if parts is not None and total <= held:
            parts.append(chunk)
        else:
            parts = None
    if parts is None:  # larger than `held`, within `limit`: read whole (checked again)
        return read_whole(path, limit, limit)
    return b"".join(parts)


def _size(limit: int) -> str:
    return f"{limit // MB:,} MB" if limit >= MB else f"{limit:,} bytes"
