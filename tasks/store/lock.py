"""One writer at a time per library file, across processes and threads.

DuckDB lets one process hold a file read-write and then refuses every other process, even
readers, with a lock error. So every opening goes through this lock first (`LIBRARY.lock` beside
the file): writers exclusively, readers shared. A run that finds the library in use waits with
bounded backoff, saying so on stderr every few seconds, and gives up after
`CITEAUDIT_LOCK_TIMEOUT` seconds (default 600) with LibraryLocked. The lock is reentrant within
a process: a flow holds it from the moment it reads the library to mint work ids until its rows
are written, and the tasks inside open the library again under it."""

import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

DEFAULT_TIMEOUT_S = 600.0
SAY_EVERY_S = 10.0
MAX_BACKOFF_S = 2.0


class LibraryLocked(RuntimeError):
    """Another run held the library longer than the lock timeout."""


class _Held:
    def __init__(self, handle: IO[str], exclusive: bool) -> None:
        self.handle = handle
        self.exclusive = exclusive
        self.depth = 0
        self.owner = threading.RLock()  # other threads of this process wait their turn


_held: dict[Path, _Held] = {}
_registry = threading.Lock()


def lock_timeout() -> float:
    raw = os.environ.get("CITEAUDIT_LOCK_TIMEOUT")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"CITEAUDIT_LOCK_TIMEOUT must be seconds, not {raw!r}") from None
    return max(value, 0.0)


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


@contextmanager
def library_lock(db: Path, exclusive: bool = True, timeout: float | None = None) -> Iterator[None]:
    """Hold the library's lock for the block (exclusive for writers, shared for readers)."""
    key = lock_path(Path(db)).resolve()
    with _registry:
        held = _held.get(key)
    if held is not None and held.owner.acquire(blocking=False):
        # This thread already holds it (a shared hold cannot become exclusive in place).
        if exclusive and not held.exclusive:
            held.owner.release()
            raise RuntimeError(f"{db}: a reader cannot start writing; open it for writing first")
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            held.owner.release()
        return
    with _registry:
        owner_lock = _held[key].owner if key in _held else threading.RLock()
    owner_lock.acquire()  # another thread of this process writing: wait for it
    try:
        handle = _acquire(key, exclusive, lock_timeout() if timeout is None else timeout)
        held = _Held(handle, exclusive)
        held.owner = owner_lock
        held.depth = 1
        with _registry:
            _held[key] = held
        try:
            yield
        finally:
            with _registry:
                _held.pop(key, None)
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
    finally:
        owner_lock.release()


def _acquire(path: Path, exclusive: bool, timeout: float) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    start = time.monotonic()
    said = start
    backoff = 0.05
    while True:
        try:
            fcntl.flock(handle, mode)
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= timeout:
                handle.close()
                raise LibraryLocked(
                    f"the library {path.with_suffix('')} stayed in use by another run for "
                    f"{waited:.0f} s (CITEAUDIT_LOCK_TIMEOUT); registry answers so far are "
                    "cached: run the same command again to store the job"
                ) from None
            if time.monotonic() - said >= SAY_EVERY_S:
                said = time.monotonic()
                sys.stderr.write(
                    f"citeaudit: waiting for the library {path.with_suffix('')}, in use by "
                    f"another run ({waited:.0f} s of {timeout:.0f} s)\n"
                )
                sys.stderr.flush()
            time.sleep(min(backoff, MAX_BACKOFF_S, max(timeout - waited, 0.01)))
            backoff *= 2
            continue
        return handle
