"""`citeaudit snapshot fetch` and `update`: a dump fetched, and a snapshot brought up to its
publisher's present with only what changed since the snapshot's date.

| snapshot      | update                                                                   |
|---------------|--------------------------------------------------------------------------|
| `dblp`        | the current release fetched (not when its md5 is the one held), rebuilt  |
| `retractions` | the current CSV fetched (not when unchanged), rebuilt                    |
| `arxiv`       | OAI-PMH `ListRecords` `from=` the snapshot's date: the pages added       |
| `crossref`    | the REST API's `filter=from-index-date:`, cursor paging: the pages added |
| `openalex`    | the `updated_date=` partitions after the snapshot's date, added          |
| `pubmed`      | the update files numbered after the last one built, added                |

"Added" is the store's incremental build (store.build with `extend`): the new files are parts
of the snapshot beside its old ones, a record in them replacing the one of the same `id`
before, the index built again; the old parts are not read again. A builder (a module of
tasks/snapshots with `BUILDER`, or `builder(**options)` given the options the snapshot was
built with) is all a source needs for its update to apply.
"""

import gzip
import importlib
import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path

from tasks.errors import UsageError
from tasks.registries.clients import Registries, RegistryPool
from tasks.registries.http import RegistryHttp, json_body
from tasks.registries.settings import RegistrySettings
from tasks.snapshots import arxiv
from tasks.snapshots.fetch import Progress
from tasks.snapshots.sources import (
    LISTERS,
    NAMES,
    FetchResult,
    FetchSettings,
    Keep,
    fetch,
    fetcher,
    pubmed_number,
    updated_since,
)
from tasks.snapshots.store import Builder, InputFile, Manifest, build, built, current

ROWS = 1000  # Crossref's most a page


@dataclass(frozen=True)
class Updated:
    name: str
    how: str  # rebuilt, extended, unchanged
    manifest: Manifest
    fetched: list[str]  # what was fetched from the publisher for it


class NoSnapshot(UsageError):
    """An incremental update needs the snapshot built first."""


def chosen_snapshots(root: Path, names: Sequence[str] | None) -> list[str]:
    """The snapshots an update is for: `names`, else every one built under `root` (read from
    its folders alone: no file of theirs is checked); an unknown name is a usage error."""
    chosen = list(names) if names else [name for name, _ in built(root)]
    unknown = [n for n in chosen if n not in NAMES]
    if unknown:
        raise UsageError(f"unknown snapshot {unknown[0]!r} (known: {', '.join(NAMES)})")
    return chosen


def builder_of(name: str, options: dict[str, object] | None = None) -> Builder:
    """The builder of the snapshot `name`, given the options it was built with."""
    try:
        module = importlib.import_module(f"tasks.snapshots.{name}")
    except ModuleNotFoundError:
        raise UsageError(f"{name}: this citeaudit cannot build that snapshot") from None
    if hasattr(module, "builder"):
        made: Builder = module.builder(**(options or {}))
        return made
    default: Builder = module.BUILDER
    return default


@contextmanager
def registry_stacks(settings: RegistrySettings) -> Iterator[Registries]:
    """The registries' HTTP stacks (arXiv's OAI-PMH, Crossref's REST API), without their
    response cache: harvested pages are read once."""
    pool = RegistryPool()  # its client set is closed with it
    try:
        yield pool.registries(settings.model_copy(update={"cache_enabled": False}))
    finally:
        pool.close()


def fetch_dump(
    name: str,
    settings: FetchSettings,
    registries: RegistrySettings,
    since: date | None = None,
    progress: Progress | None = None,
) -> FetchResult:
    """`snapshot fetch NAME`: arXiv without a Kaggle token is harvested over OAI-PMH."""
    with registry_stacks(registries) as stacks:
        return fetch(
            name,
            settings,
            since=since,
            progress=progress,
            harvest=lambda folder: arxiv.harvest(
                stacks.http["arxiv"], folder, reserve=settings.fetch_reserve_bytes
            ),
        )


def update(
    name: str,
    root: Path,
    settings: FetchSettings,
    registries: RegistrySettings,
    progress: Progress | None = None,
) -> Updated:
    """Bring the snapshot `name` under `root` up to its publisher's present."""
    if name in ("dblp", "retractions"):
        return _rebuilt(name, root, settings, progress)
    folder = current(root, name)
    if folder is None:
        raise NoSnapshot(
            f"no {name} snapshot to update: fetch and build it first"
            + ("" if name == "crossref" else f" (citeaudit snapshot fetch {name})")
        )
    before = Manifest.read(folder)
    if name in ("arxiv", "crossref"):
        with registry_stacks(registries) as stacks:
            if name == "arxiv":
                after = arxiv.update(stacks.http["arxiv"], root)
                return Updated(name, "unchanged" if after == before else "extended", after, [])
            return _crossref(stacks.http["crossref"], root, before)
    return _new_files(name, root, settings, before, progress)


INPUTS = {"dblp": ["dblp.xml.gz"], "retractions": ["retraction_watch.csv"]}


def _rebuilt(name: str, root: Path, settings: FetchSettings, progress: Progress | None) -> Updated:
    """A source published whole: its current release, rebuilt when it is new."""
    fetched = fetch(name, settings, progress=progress)
    inputs = [fetched.folder / file for file in INPUTS[name]]
    folder = current(root, name)
    if folder is not None:  # built from these very files already (a build killed: not)
        manifest = Manifest.read(folder)
        if all(asdict(InputFile.of(p)) in manifest.inputs for p in inputs):
            return Updated(name, "unchanged", manifest, fetched.fetched)
    return Updated(name, "rebuilt", build(builder_of(name), inputs, root), fetched.fetched)


def _crossref(http: RegistryHttp, root: Path, before: Manifest) -> Updated:
    """The works Crossref indexed since the snapshot's date, from its REST API a thousand a
    page, written as the public data file's own files and added to the snapshot."""
    pages = root / ".crossref.harvest"
    if pages.exists():
        shutil.rmtree(pages)  # a killed harvest's cursor has expired
    pages.mkdir(parents=True)
    since = before.date or date.today().isoformat()
    params: dict[str, str | int] = {"filter": f"from-index-date:{since}", "rows": ROWS}
    cursor = "*"
    saved: list[Path] = []
    while True:
        message = http.get("/works", json_body, params={**params, "cursor": cursor}).value
        items = (message or {}).get("message", {}).get("items") or []
        if items:
            page = pages / f"{len(saved):05d}.json.gz"
            page.write_bytes(gzip.compress(json.dumps({"items": items}).encode(), mtime=0))
            saved.append(page)
        following = (message or {}).get("message", {}).get("next-cursor")
        if len(items) < ROWS or not following:
            break
        cursor = str(following)
    try:
        if not saved:
            return Updated("crossref", "unchanged", before, [])
        after = build(builder_of("crossref", before.options), saved, root, extend=True)
        return Updated("crossref", "extended", after, [f"{len(saved)} REST API pages"])
    finally:
        shutil.rmtree(pages)


def _new_files(
    name: str, root: Path, settings: FetchSettings, before: Manifest, progress: Progress | None
) -> Updated:
    """The files published after those the snapshot was built from, fetched and added."""
    folder = settings.folder(name)
    with fetcher(name, settings, progress) as f:
        wanted = LISTERS[name](f, settings, _newer(name, before))
        got = f.fetch(wanted, folder, settings.fetch_reserve_bytes)
    parts = [folder / r.name for r in got if r.name.endswith(".gz")]
    if not parts:
        return Updated(name, "unchanged", before, [])
    after = build(builder_of(name, before.options), parts, root, extend=True)
    return Updated(name, "extended", after, [r.name for r in got])


def _newer(name: str, before: Manifest) -> Keep:
    """OpenAlex: the partitions after the snapshot's date; PubMed: the update files numbered
    after the last one it was built from."""
    if name == "openalex":
        return updated_since(
            date.fromisoformat(before.date) + timedelta(days=1) if before.date else date.min
        )
    built = [pubmed_number(Path(str(i["path"])).name) for i in before.inputs]
    last = max((n for n in built if n is not None), default=0)
    return lambda file: (pubmed_number(file) or 0) > last
