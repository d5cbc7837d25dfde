"""`OUT/JOB/`: the only place a job's files go.

A file is written to a temporary name in its folder and renamed into place (readers never see
half a file; `write_atomically`, which `citeaudit fix -o` uses too). A job's outputs as a whole
are written into a sibling folder and swapped in, so a folder never mixes two runs' files, and
leftovers of a killed run (`.tmp` files, half-written sibling folders) are swept by the next."""

import ctypes
import glob
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from tasks.store.names import check_job_id

_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
STALE_TMP_S = 60.0  # a .tmp older than this belongs to no running writer of its file


def shared_mode() -> int:
    """The mode a new file gets under the user's umask: mkstemp's files are 0600, so a report
    would otherwise be unreadable to the colleagues the umask lets read it."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def folder_mode() -> int:
    """The mode a new folder gets under the user's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o777 & ~mask


def write_atomically(target: Path, data: bytes, mode: int | None = None) -> None:
    """`target` holds `data` whole, or is as it was: written to a temporary file beside it,
    flushed to disk and renamed into place (a full disk or a kill midway leaves the old file).
    `mode`: the file's permissions (default: a new file's under the umask). A `.tmp` a killed
    writer of `target` left (older than a writer takes) is removed first."""
    _sweep_tmp(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, shared_mode() if mode is None else mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a crash
    finally:
        os.close(folder)


def write_output(output: Path, data: bytes) -> None:
    """A file the user named (`fix -o`, `audit --sarif`): whole, or as it was. Written through a
    symbolic link to the file it names, keeping that file's permissions; a hard link's other
    names keep the old contents (a new file is renamed into place). A device or pipe
    (/dev/stdout) is written as a stream: there is no file to keep."""
    if output.exists() and not output.is_file():
        with output.open("wb") as stream:
            stream.write(data)
        return
    target = output.resolve()
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    write_atomically(target, data, mode)


class JobFolder:
    """`OUT/JOB/`: the only place a job's files go."""

    def __init__(self, out_dir: Path | str, job_id: str) -> None:
        self.path = Path(out_dir) / check_job_id(job_id)

    def file(self, name: str) -> Path:
        if not _FILE_NAME.fullmatch(name) or ".." in name:
            raise ValueError(f"refusing to write {name!r}: not a plain file name")
        return self.path / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        target = self.file(name)
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomically(target, data)
        return target

    def write_text(self, name: str, text: str) -> Path:
        return self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False, default=str))

    def write_parquet(self, name: str, frame: pl.DataFrame) -> Path:
        with self.placing(name) as tmp:
            frame.write_parquet(tmp, statistics=False)
        return self.file(name)

    @contextmanager
    def appending_parquet(
        self, name: str, schema: Mapping[str, pl.DataType | type[pl.DataType]]
    ) -> Iterator[Callable[[pl.DataFrame], None]]:
        """A Parquet file written a frame (of `schema`) at a time: what it reads back is the
        frames' rows in order, as one `write_parquet` of them all would give."""
        arrow_schema = pl.DataFrame(schema=dict(schema)).to_arrow().schema
        with self.placing(name) as tmp, pq.ParquetWriter(tmp, arrow_schema) as writer:
            yield lambda frame: writer.write_table(frame.select(list(schema)).to_arrow())

    @contextmanager
    def placing(self, name: str) -> Iterator[Path]:
        """A temporary path in the folder to write file `name` at, bit by bit (an export written
        a batch at a time); renamed into place on a clean exit, removed on an error."""
        target = self.file(name)
        self.path.mkdir(parents=True, exist_ok=True)
        _sweep_tmp(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        os.fchmod(fd, shared_mode())
        os.close(fd)
        try:
            yield Path(tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @contextmanager
    def replacing(self, locked: bool = True) -> Iterator["JobFolder"]:
        """A staging folder beside this one to write the job's outputs into; on a clean exit it
        takes this folder's place in one swap (the old folder and its leftovers removed), on an
        error it is removed. `locked`: called under the library's write lock, so this job's
        stale staging folders, left by a killed run, are swept first (without the lock another
        run of the job may be writing one)."""
        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f".{self.path.name}.*-*") if locked else ():
            if stale.is_dir() and re.fullmatch(r"(new|old)-\w+", stale.name.rsplit(".", 1)[-1]):
                shutil.rmtree(stale, ignore_errors=True)
        staging = JobFolder(parent, self.path.name)
        staging.path = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.new-", dir=parent))
        os.chmod(staging.path, folder_mode())  # mkdtemp makes it 0700
        try:
            yield staging
            self._swap_in(staging.path)
        except BaseException:
            shutil.rmtree(staging.path, ignore_errors=True)
            raise

    def _swap_in(self, staged: Path) -> None:
        if not self.path.exists():
            os.rename(staged, self.path)
            return
        if _exchange(staged, self.path):  # atomic: readers see the old folder or the new one
            shutil.rmtree(staged, ignore_errors=True)  # now the old folder
            return
        old = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.old-", dir=self.path.parent))
        os.rename(self.path, old / "job")
        os.rename(staged, self.path)
        shutil.rmtree(old, ignore_errors=True)


def _sweep_tmp(target: Path) -> None:
    """`.NAME.*.tmp` files a killed writer of `target` left beside it."""
    cutoff = time.time() - STALE_TMP_S
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        try:
            if stale.stat().st_mtime < cutoff:
                stale.unlink()
        except OSError:
            pass


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return bool(renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), rename_exchange) == 0)
