"""Where snapshots live and how a build replaces one whole.

```
$CITEAUDIT_SNAPSHOTS/                 (default: the user data dir's citeaudit/snapshots)
  dblp -> .dblp.20261128T031500       the current snapshot: a symlink, swapped atomically
  .dblp.20261128T031500/
    manifest.json                     name, date, records, bytes, built_at, inputs, format,
                                      the broken records named, each file's size and hash
    parts/00000/part-00000.parquet    one folder per input part (a file of the dump)
    records.arrow, id_keys.arrow, ... what lookups read (tasks/snapshots/index.py)
  .dblp.staging/                      a build in progress (or killed): resumed by the next build
  .dblp.lock                          one build of a name at a time
```

A build writes into the staging folder beside the current snapshot, one input part at a time:
a part's records go to `parts/NNNNN.tmp/`, renamed to `parts/NNNNN/` when the part is whole,
so a killed build resumes with the parts not renamed (and any whose input file has changed
since: its path, size and modification time are kept beside it). When every part is there
the index is built, the staging folder renamed to its own version folder and the symlink
swapped in one rename: readers see the old snapshot or the new one, never half of one. A
failed build (a format we do not know) leaves the old one in place. The manifest keeps each
file's size and hash (of the whole file, or of blocks spread over a large one) as written at
the swap: a snapshot whose files differ (truncated, shuffled, overwritten) is `damaged`, never
opened, and an audit warns once naming it.

A builder (tasks/snapshots/dblp.py, arxiv.py, ...) is a plain function streaming one input
part's records as Arrow batches of the table's schema, in bounded memory; the store writes
them, adds the normalised title the title index reads, and indexes them. `workers` processes
write that many parts at once; a builder whose one part is big (dblp's one file) may instead
cut it into pieces that the workers read side by side, in order, a few at a time.
"""

import contextlib
import fcntl
import hashlib
import json
import multiprocessing
import os
import shutil
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import platformdirs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.errors import UsageError
from tasks.snapshots.schema import FORMAT_VERSION, NAMED, Skipped, Table
from tasks.textnorm import normalise_title

TITLE_KEY = "title_key"  # the column the store adds: the title as tasks/textnorm normalises it
ROW_GROUP = 64_000
AHEAD = 2  # pieces read ahead per worker: what a build holds in memory beyond its workers'
SAMPLED = 4 << 20  # a file up to this size is hashed whole; a larger one by SAMPLES blocks
SAMPLES = 64
SAMPLE_BLOCK = SAMPLED // SAMPLES
_UNCHECKED = {"manifest.json", "plan.json"}


class SnapshotFormatError(UsageError):
    """A dump in a format we do not know: which file, and what changed."""

    def __init__(self, path: Path | str, what: str) -> None:
        super().__init__(f"{path}: {what}; the snapshot was not changed")
        self.path = str(path)
        self.what = what

    def __reduce__(self) -> tuple[type["SnapshotFormatError"], tuple[str, str]]:
        return type(self), (self.path, self.what)  # raised in a build's worker process


# One input part's records in batches; what it returns is the records it skipped (broken ones:
# a line that is no JSON, a record without a title): how many, or a Skipped naming them.
Reader = Callable[[Path], Generator[pa.RecordBatch, None, int | Skipped | None]]


def files_of(inputs: Sequence[Path]) -> list[Path]:
    """The input parts: each file given, and the files of each folder given, by name."""
    parts: list[Path] = []
    for path in inputs:
        if path.is_dir():
            parts.extend(sorted(p for p in path.iterdir() if p.is_file() or p.is_fifo()))
        else:
            parts.append(path)
    return parts


@dataclass(frozen=True)
class Builder:
    """How one snapshot is made: its name, its table and the reader of one input part."""

    name: str
    table: Table
    read: Reader
    parts: Callable[[Sequence[Path]], list[Path]] = files_of
    # What the reader was told (crossref's `since`, `types`): a killed build resumes only with
    # the same options.
    options: dict[str, object] = field(default_factory=dict)
    # A part cut into pieces (picklable, read apart), and the reader of one: `read` reads the
    # pieces in turn, several workers read them side by side.
    pieces: Callable[[Path], Iterator[Any]] | None = None
    read_piece: Callable[[Any], Generator[pa.RecordBatch, None, int | Skipped]] | None = None

    @property
    def complete(self) -> bool:
        """Built whole from the dump: no option keeps only some of its records (`since`,
        `types`, a venue). Only a complete snapshot's silence decides (tasks/lookup/absence.py)."""
        return not any(self.options.values())


@dataclass(frozen=True)
class InputFile:
    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> "InputFile":
        stat = path.stat()
        return cls(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Manifest:
    name: str
    table: str
    date: str | None  # ISO date of the dump's newest record
    records: int
    bytes: int
    built_at: str  # ISO timestamp, UTC
    inputs: list[dict[str, object]] = field(default_factory=list)
    skipped: int = 0  # broken records the builders left out
    format_version: int = FORMAT_VERSION
    options: dict[str, object] = field(default_factory=dict)  # the builder's: an update's too
    broken: list[str] = field(default_factory=list)  # the first NAMED skipped: where, and why
    # Each file lookups read (the folder's own, not its parts): [size, hash], written at the
    # swap, checked when the snapshot is opened (`damage`). None: built before they were kept.
    files: dict[str, list[int | str]] | None = None
    # Built whole from the registry's dump (no filter): absence from it is the registry's answer
    # as of `date`. A manifest written before this was known reads as not complete.
    complete: bool = False
    highest_pmid: int | None = None  # the highest PMID a record holds (PubMed's numbering)

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        return cls(**json.loads((folder / "manifest.json").read_text()))


@dataclass(frozen=True)
class Status:
    name: str
    folder: Path  # the current build's
    date: str | None
    records: int
    bytes: int
    age_days: int | None  # days since the snapshot's date
    built_at: str
    current: bool  # built by this citeaudit's format (else: rebuild it)
    complete: bool  # built whole: its absence decides (Manifest.complete)
    damage: str | None = None  # what is wrong with its files (`damage`): lookups skip it


def snapshots_root(env: dict[str, str] | None = None) -> Path:
    """$CITEAUDIT_SNAPSHOTS, or the user data dir's `snapshots` folder."""
    value = (os.environ if env is None else env).get("CITEAUDIT_SNAPSHOTS")
    return Path(value) if value else platformdirs.user_data_path("citeaudit") / "snapshots"


def current(root: Path, name: str) -> Path | None:
    """The folder of the snapshot `name`, or None if none is built."""
    link = root / name
    if not link.is_symlink() or not (link / "manifest.json").is_file():
        return None
    return link.resolve()


def checksums(folder: Path) -> dict[str, list[int | str]]:
    """[size, hash] of each file directly in `folder` (what lookups read), by name."""
    return {
        path.name: [path.stat().st_size, _digest(path)]
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name not in _UNCHECKED
    }


def damage(folder: Path) -> str | None:
    """What is wrong with a built snapshot's files, in a few words; None if each has the size
    and hash written at its swap (or it was built before they were written)."""
    try:
        manifest = Manifest.read(folder)
    except (OSError, ValueError, TypeError) as exc:
        return f"manifest.json unreadable ({exc})"
    for name, (size, digest) in (manifest.files or {}).items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if (found := path.stat().st_size) != size:
            return f"{name} holds {found:,} bytes, {size:,} when built"
        if _digest(path) != digest:
            return f"{name} is not the file built (its hash differs)"
    return None


def damaged(found: Iterable[Status]) -> dict[str, str]:
    """Each snapshot of `found` (status's) whose files are damaged, by name: `name (folder):
    what is wrong`."""
    return {s.name: f"{s.name} ({s.folder}): {s.damage}" for s in found if s.damage is not None}


def built(root: Path) -> Iterator[tuple[str, Path]]:
    """Each snapshot built under `root`: its name and its folder, by name."""
    if root.is_dir():
        for link in sorted(root.iterdir()):
            folder = current(root, link.name) if not link.name.startswith(".") else None
            if folder is not None:
                yield link.name, folder


def _digest(path: Path) -> str:
    """A hash of the file: of all of it up to SAMPLED bytes, else of SAMPLES blocks spread
    evenly over it (a snapshot of GBs is opened by every audit: a shuffled or overwritten file
    changes its blocks; its size catches a truncated one)."""
    digest = hashlib.blake2b(digest_size=16)
    size = path.stat().st_size
    with path.open("rb") as handle:
        if size <= SAMPLED:
            digest.update(handle.read())
        else:
            step = (size - SAMPLE_BLOCK) // (SAMPLES - 1)
            for number in range(SAMPLES):
                digest.update(os.pread(handle.fileno(), SAMPLE_BLOCK, number * step))
    return digest.hexdigest()


def status(root: Path) -> list[Status]:
    """Every snapshot built under `root`, by name."""
    found = []
    for name, folder in built(root):
        try:
            m = Manifest.read(folder)
        except (OSError, ValueError, TypeError) as exc:
            wrong = f"manifest.json unreadable ({exc})"
            found.append(
                Status(name, folder, None, 0, _size(folder), None, "", False, False, wrong)
            )
            continue
        age = (date.today() - date.fromisoformat(m.date)).days if m.date else None
        found.append(
            Status(
                m.name,
                folder,
                m.date,
                m.records,
                _size(folder),  # on disk now: the manifest's is the build's
                age,
                m.built_at,
                m.format_version == FORMAT_VERSION,
                m.complete,
                damage(folder),
            )
        )
    return found


def remove(root: Path, name: str) -> bool:
    """Remove the snapshot `name` and any build of it left unfinished; whether there was one."""
    with _locked(root, name):
        link = root / name
        target = link.resolve() if link.is_symlink() else None
        existed = target is not None
        if link.is_symlink():
            link.unlink()
        for folder in (target, root / f".{name}.staging"):
            if folder is not None and folder.exists():
                shutil.rmtree(folder)
    return existed


def build(
    builder: Builder, inputs: Sequence[Path], root: Path, extend: bool = False, workers: int = 1
) -> Manifest:
    """Build the snapshot `builder.name` from `inputs` and swap it in; resume a killed build.

    `extend`: the new parts are added to the current snapshot's (an incremental update), a
    record of a later part replacing one of the same `id` before it. `workers`: how many parts
    are written at once, each in a process of its own."""
    from tasks.snapshots.index import build_index  # DuckDB only once the parts are written

    with _locked(root, builder.name):
        parts = builder.parts([Path(p) for p in inputs])
        if not parts and not extend:  # an update may find nothing new; a build needs a dump
            given = ", ".join(map(str, inputs))
            raise SnapshotFormatError(given, f"holds no file of a {builder.name} dump")
        base = current(root, builder.name) if extend else None
        staging = _staging(root, builder, base)
        folder = staging / "parts"
        first = json.loads((staging / "plan.json").read_text())["base_parts"]
        wanted = set()
        todo = []
        for number, part in enumerate(parts, start=first):
            wanted.add(f"{number:05d}")
            if _done(folder / f"{number:05d}") != asdict(InputFile.of(part)):
                todo.append((number, part))
        _write_parts(builder, todo, folder, workers)
        for stale in folder.iterdir():  # parts of inputs no longer given
            if int(stale.name[:5]) >= first and stale.name not in wanted:
                shutil.rmtree(stale)
        extent = build_index(staging, builder.table)
        written = [json.loads(p.read_text()) for p in sorted(folder.glob("*/part.json"))]
        manifest = Manifest(
            name=builder.name,
            table=builder.table.name,
            date=extent.newest.isoformat() if extent.newest else None,
            records=extent.records,
            bytes=0,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            inputs=[p["input"] for p in written],
            skipped=sum(p["skipped"] for p in written),
            options=builder.options,
            broken=[where for p in written for where in p.get("broken", [])][:NAMED],
            # An update keeps the base's completeness: added to a filtered snapshot, whole
            # parts do not make it whole.
            complete=builder.complete and (base is None or Manifest.read(base).complete),
            highest_pmid=extent.highest_pmid,
        )
        manifest = replace(manifest, bytes=_size(staging), files=checksums(staging))
        (staging / "manifest.json").write_text(json.dumps(asdict(manifest), indent=1))
        _swap(root, builder.name, staging)
    return manifest


@contextlib.contextmanager
def _locked(root: Path, name: str) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _staging(root: Path, builder: Builder, base: Path | None) -> Path:
    """The staging folder: a killed build's, if it was building the same thing, else anew."""
    staging = root / f".{builder.name}.staging"
    base_parts = sorted((base / "parts").iterdir()) if base else []
    plan = {
        "format_version": FORMAT_VERSION,
        "table": builder.table.name,
        "base": base.name if base else None,
        "base_parts": len(base_parts),
        "options": builder.options,
    }
    plan_file = staging / "plan.json"
    if staging.is_dir() and plan_file.is_file() and json.loads(plan_file.read_text()) == plan:
        for unfinished in (staging / "parts").glob("*.tmp"):
            shutil.rmtree(unfinished)
        return staging
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "parts").mkdir(parents=True)
    # Hard links: the current snapshot's parts are read again, never written again.
    for folder in base_parts:
        shutil.copytree(folder, staging / "parts" / folder.name, copy_function=os.link)
    plan_file.write_text(json.dumps(plan, indent=1))
    return staging


def _done(folder: Path) -> dict[str, object] | None:
    """The input a finished part was written from (None if it is not finished)."""
    done = folder / "part.json"
    return json.loads(done.read_text())["input"] if done.is_file() else None


def _write_parts(builder: Builder, todo: list[tuple[int, Path]], parts: Path, workers: int) -> None:
    if workers <= 1 or len(todo) <= 1:
        for number, part in todo:
            _write_part(builder, part, parts, number, workers)
        return
    with _pool(min(workers, len(todo))) as pool:
        futures = [pool.submit(_write_part, builder, part, parts, n) for n, part in todo]
        try:
            for future in futures:
                future.result()  # the first part that failed fails the build
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise


def _pool(workers: int) -> ProcessPoolExecutor:
    # forkserver: a worker starts from a clean process, not a fork of Prefect's threads.
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"))


def _write_part(builder: Builder, part: Path, parts: Path, number: int, workers: int = 1) -> None:
    """Write one input part's records to Parquet; renamed whole when complete."""
    identity = asdict(InputFile.of(part))  # before reading: a file changed meanwhile is re-read
    final = parts / f"{number:05d}"
    tmp = parts / f"{number:05d}.tmp"
    for old in (final, tmp):
        if old.exists():
            shutil.rmtree(old)
    tmp.mkdir()
    schema = builder.table.schema.append(pa.field(TITLE_KEY, pa.string()))
    records = 0
    batches = (
        _read_pieces(builder, part, workers)
        if workers > 1 and builder.pieces is not None
        else _keyed(builder.read(part), builder.table.schema)
    )
    with pq.ParquetWriter(tmp / "part.parquet", schema, compression="zstd") as writer:
        while True:
            try:
                batch = next(batches)
            except StopIteration as end:
                skipped: Skipped = end.value
                break
            writer.write_batch(batch, row_group_size=ROW_GROUP)
            records += batch.num_rows
    summary = {
        "input": identity,
        "records": records,
        "skipped": skipped.count,
        "broken": skipped.named,
    }
    (tmp / "part.json").write_text(json.dumps(summary))
    tmp.rename(final)


def _keyed(
    batches: Generator[pa.RecordBatch, None, int | Skipped | None], schema: pa.Schema
) -> Generator[pa.RecordBatch, None, Skipped]:
    """`batches` of `schema`, each with its titles' TITLE_KEY; returns what was skipped."""
    while True:
        try:
            batch = next(batches)
        except StopIteration as end:
            skipped = Skipped()
            skipped.merge(end.value)
            return skipped
        if batch.schema != schema:
            batch = pa.RecordBatch.from_pylist(batch.to_pylist(), schema=schema)
        keys = (
            title_keys(batch.column("title"))
            if "title" in batch.schema.names
            else pa.nulls(batch.num_rows, pa.string())
        )
        yield batch.append_column(TITLE_KEY, keys)


# What tasks/textnorm.fold changes in a title of ASCII: markup (HTML tags and entities, LaTeX).
_MARKUP = r"[<&\\{}$]"


def title_keys(titles: pa.Array) -> pa.Array:
    """normalise_title of each title (None for none or an empty one), in Arrow for most: a
    title of ASCII without markup is, by textnorm's rules, its letters and digits lower-cased,
    each run of anything else one space, none at either end. Any other goes through
    normalise_title (a fifth of a build's CPU when every title did)."""
    plain = pc.fill_null(
        pc.and_(pc.string_is_ascii(titles), pc.invert(pc.match_substring_regex(titles, _MARKUP))),
        False,
    )
    lowered = pc.ascii_lower(titles)
    keys = pc.utf8_trim(pc.replace_substring_regex(lowered, "[^0-9a-z]+", " "), " ")
    others = pc.and_(pc.invert(plain), pc.is_valid(titles))
    if pc.any(others).as_py():
        rest = [normalise_title(t) for t in pc.filter(titles, others).to_pylist()]
        keys = pc.replace_with_mask(keys, others, pa.array(rest, keys.type))
    return pc.if_else(pc.equal(titles, ""), pa.scalar(None, keys.type), keys).cast(pa.string())


def _read_pieces(
    builder: Builder, part: Path, workers: int
) -> Generator[pa.RecordBatch, None, Skipped]:
    """A part's batches, its pieces read by `workers` processes, in the pieces' order."""
    assert builder.pieces is not None
    skipped = Skipped()
    with _pool(workers) as pool:
        pending: deque[Future[tuple[list[pa.RecordBatch], Skipped]]] = deque()
        try:
            for piece in builder.pieces(part):
                pending.append(pool.submit(_read_piece, builder, piece))
                while len(pending) > AHEAD * workers:
                    batches, count = pending.popleft().result()
                    skipped.merge(count)
                    yield from batches
            while pending:
                batches, count = pending.popleft().result()
                skipped.merge(count)
                yield from batches
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    return skipped


def _read_piece(builder: Builder, piece: Any) -> tuple[list[pa.RecordBatch], Skipped]:
    """One piece's batches with their title keys, and how many records it skipped (in a
    worker)."""
    assert builder.read_piece is not None
    keyed = _keyed(builder.read_piece(piece), builder.table.schema)
    batches = []
    while True:
        try:
            batches.append(next(keyed))
        except StopIteration as end:
            return batches, end.value


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _swap(root: Path, name: str, staging: Path) -> None:
    """Make the staged build the current snapshot in one rename; remove the one it replaces."""
    link = root / name
    old = link.resolve() if link.is_symlink() else None
    version = root / f".{name}.{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"
    staging.rename(version)
    fresh = root / f".{name}.link"
    if fresh.is_symlink():
        fresh.unlink()
    fresh.symlink_to(version.name)
    fresh.replace(link)
    if old is not None and old.exists():
        shutil.rmtree(old)
