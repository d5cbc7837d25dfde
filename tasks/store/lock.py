"""One writer at a time per library, across processes and threads.

DuckDB lets one process hold a file read-write and then refuses every other process, even
readers, with a lock error. So every opening goes through this lock first (`LIBRARY.lock` beside
the file): writers exclusively, readers shared. A run that finds the library in use queues for
it in turn: a blocking flock in a worker thread, behind a turnstile (`LIBRARY.lock.turn`) that a
waiter holds until it has the lock, so that a run coming back for the lock lines up behind the
one already waiting instead of taking it again at once. A waiter polling with backoff lost every
time to a server taking the lock call after call (two MCP servers on one library: one finished 4
calls while the other did 146). It says so on stderr every few seconds and gives up after
`CITEAUDIT_LOCK_TIMEOUT` seconds (default 600) with LibraryLocked. The lock is reentrant within
a process: a flow holds it from the moment it reads the library to mint work ids until its rows
are written, and the tasks inside open the library again under it. A DuckLake library
(tasks/store/lake.py) is held the same way through its catalog's advisory lock.

A job is written by one run at a time (`job_lock`, `LIBRARY.job-JOB.lock` beside the library's
lock), held for the whole run of an audit or an import: two imports into one job at once left
the library with both lists' rows, the jobs row naming one input, the folder holding the other
list and work ids missing from `works`, because each run's steps take the library lock only a
step at a time. A second run of a job is refused at once (JobBusy, exit 2) rather than queued:
it is almost always the same command started twice, and a queued import would wait hours to
redo (or resume) what the first is doing. A lake's job lock is left to its users (no file to
hold)."""

import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol

from tasks.errors import InfrastructureError, UsageError
from tasks.store.lake import Lake, LakeLock

DEFAULT_TIMEOUT_S = 600.0
SAY_EVERY_S = 10.0
MAX_BACKOFF_S = 2.0


class LibraryLocked(InfrastructureError):
    """Another run held the library longer than the lock timeout."""


class JobNotStored(LibraryLocked):
    """The library stayed locked: the job's folder was written, its library rows were not."""


class JobBusy(UsageError):
    """Another run is writing the same job of the same library."""


class _FileLock:
    """The lock file of a library file: shared for readers, exclusive for writers. `wait` queues
    in the kernel from a worker thread; given up (a timeout), the thread hands the lock back as
    soon as it gets it."""

    def __init__(self, path: Path, exclusive: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handle: IO[str] = path.open("a+")
        self.turnstile = path.with_name(path.name + ".turn")
        self.mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        self._got = threading.Event()
        self._state = threading.Lock()
        self._waiter: threading.Thread | None = None
        self._abandoned = False

    def wait(self, seconds: float) -> bool:
        if self._waiter is None:
            self._waiter = threading.Thread(target=self._block, daemon=True)
            self._waiter.start()
        return self._got.wait(seconds)

    def _block(self) -> None:
        with self.turnstile.open("a+") as turn:
            fcntl.flock(turn, fcntl.LOCK_EX)  # behind whoever waits already
            fcntl.flock(self.handle, self.mode)
        with self._state:
            if self._abandoned:
                self._unlock()
            else:
                self._got.set()

    def release(self) -> None:
        with self._state:
            if self._waiter is not None and not self._got.is_set():
                self._abandoned = True  # still queued: _block gives it back when it gets it
            else:
                self._unlock()

    def _unlock(self) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


class _PolledLock:
    """A lock that can only be tried (a DuckLake catalog's advisory lock), waited for by polling
    with bounded backoff."""

    def __init__(self, lock: LakeLock) -> None:
        self.lock = lock
        self.backoff = 0.05

    def wait(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while not self.lock.try_acquire():
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.backoff, MAX_BACKOFF_S, left))
            self.backoff *= 2
        return True

    def release(self) -> None:
        self.lock.release()


class _Lock(Protocol):
    def wait(self, seconds: float) -> bool: ...

    def release(self) -> None: ...


class _Held:
    def __init__(self, lock: _Lock, exclusive: bool) -> None:
        self.lock = lock
        self.exclusive = exclusive
        self.depth = 0
        self.owner = threading.RLock()  # other threads of this process wait their turn


_held: dict[Path | Lake, _Held] = {}
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
def library_lock(
    db: Path | Lake, exclusive: bool = True, timeout: float | None = None
) -> Iterator[None]:
    """Hold the library's lock for the block (exclusive for writers, shared for readers; a
    lake's readers read a snapshot and take none)."""
    if isinstance(db, Lake) and not exclusive:
        yield
        return
    key = db if isinstance(db, Lake) else lock_path(Path(db)).resolve()
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
        lock: _Lock = (
            _PolledLock(LakeLock(key)) if isinstance(key, Lake) else _FileLock(key, exclusive)
        )
        _acquire(lock, db, lock_timeout() if timeout is None else timeout)
        held = _Held(lock, exclusive)
        held.owner = owner_lock
        held.depth = 1
        with _registry:
            _held[key] = held
        try:
            yield
        finally:
            with _registry:
                _held.pop(key, None)
            lock.release()
    finally:
        owner_lock.release()


def _acquire(lock: _Lock, db: Path | Lake, timeout: float) -> None:
    start = time.monotonic()
    # at least a moment, so that a free lock is taken even with no time to wait
    while not lock.wait(min(SAY_EVERY_S, max(timeout - (time.monotonic() - start), 0.05))):
        waited = time.monotonic() - start
        if waited >= timeout:
            lock.release()
            raise LibraryLocked(
                f"the library {db} stayed in use by another run for "
                f"{waited:.0f} s (CITEAUDIT_LOCK_TIMEOUT); registry answers so far are "
                "cached: run the same command again to store the job"
            )
        sys.stderr.write(
            f"citeaudit: waiting for the library {db}, in use by "
            f"another run ({waited:.0f} s of {timeout:.0f} s)\n"
        )
        sys.stderr.flush()


@contextmanager
def job_lock(db: Path | Lake, job_id: str) -> Iterator[None]:
    """Hold job `job_id` of the library `db` for this run, or raise JobBusy at once if another
    run (another process, or another thread of this one) holds it. `job_id` is checked safe."""
    if isinstance(db, Lake):
        yield
        return
    library = lock_path(Path(db)).resolve()
    path = library.with_name(f"{Path(db).name}.job-{job_id}.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    # flock belongs to the open file: a second opening in this process is refused as well
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise JobBusy(
                f"job {job_id} is being written by another run; try again when it ends"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
