"""Strings seen so far in a list of millions (a bulk import's citation ids, entry keys, export
keys, works listed), each held as a 16-byte digest with an int beside it: ~24 bytes a string,
where a Python set or dict of str takes ~100 and more for long keys.

Digests are kept in sorted NumPy arrays, looked up by binary search, with the newest in a small
dict merged into the arrays every `MERGE` additions. Two strings share a digest once in 2^60
pairs (120 bits of BLAKE2b): for a billion strings, about once in a million lists."""

import hashlib
from typing import Protocol

import numpy as np

MERGE = 1 << 16
# NumPy drops trailing NUL bytes of its fixed-width bytes: a digest ends with 0x01 instead.
_DIGEST = 15


class StringSet(Protocol):
    """What code keeping strings seen needs: a set[str], or a DigestMap for millions."""

    def __contains__(self, text: object, /) -> bool: ...

    def add(self, text: str, /) -> None: ...


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=_DIGEST).digest() + b"\x01"


class DigestMap:
    """str -> int for many strings; `add` and `in` make it a set."""

    def __init__(self) -> None:
        self._keys = np.empty(0, dtype=f"S{_DIGEST + 1}")
        self._values = np.empty(0, dtype=np.int64)
        self._recent: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._keys) + len(self._recent)

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and self.get(text) is not None

    def get(self, text: str, default: int | None = None) -> int | None:
        key = _digest(text)
        if key in self._recent:
            return self._recent[key]
        at = self._find(key)
        return default if at is None else int(self._values[at])

    def __setitem__(self, text: str, value: int) -> None:
        key = _digest(text)
        at = None if key in self._recent else self._find(key)
        if at is not None:
            self._values[at] = value
            return
        self._recent[key] = value
        if len(self._recent) >= MERGE:
            self._merge()

    def add(self, text: str) -> None:
        if text not in self:
            self[text] = 0

    def _find(self, key: bytes) -> int | None:
        at = int(np.searchsorted(self._keys, key))
        return at if at < len(self._keys) and self._keys[at] == key else None

    def _merge(self) -> None:
        keys = np.concatenate([self._keys, np.array(list(self._recent), dtype=self._keys.dtype)])
        values = np.concatenate([self._values, np.fromiter(self._recent.values(), np.int64)])
        order = np.argsort(keys, kind="stable")
        self._keys, self._values = keys[order], values[order]
        self._recent.clear()
