"""`citeaudit snapshot fetch|build|update|status|remove`: the registries' public dumps as local
snapshots (tasks/snapshots), which every audit asks before the live registries
(tasks/lookup/snapshots.py). `fetch` downloads a dump (tasks/snapshots/sources.py), `update`
brings a built snapshot up to its publisher's present (tasks/snapshots/update.py).

Snapshots live under CITEAUDIT_SNAPSHOTS (default: the user data dir's citeaudit/snapshots). A
build writes beside the current snapshot and swaps in whole; a killed one resumes when run again.
Unknown names, missing inputs and dumps in a format we do not know are one-line errors (exit 2).
"""

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.app import err, fail, out, usage_error
from flows.cli.run import progress_bars
from tasks.plural import counted

FILTERED = ("crossref", "openalex")  # the snapshots --since and --types keep part of
INPUTS = {
    "dblp": "dblp.xml.gz, with dblp.dtd beside it (https://dblp.org/xml/)",
    "arxiv": "arXiv's metadata snapshot, JSON lines (Kaggle: Cornell-University/arxiv)",
    "retractions": "Retraction Watch's CSV as Crossref distributes it",
    "crossref": "the folder (or files) of Crossref's public data file, N.json.gz",
    "pubmed": "PubMed's baseline and update files, pubmedYYnNNNN.xml.gz (or their folder)",
    "openalex": "OpenAlex's works snapshot folder (data/works/updated_date=*/part_*.gz, manifest)",
}
NAMES = tuple(INPUTS)

snapshot_app = typer.Typer(
    help="Fetch, build, update, list and remove the local snapshots audits ask before the live"
    " registries.",
    no_args_is_help=True,
)


@snapshot_app.command("build")
def build(
    name: Annotated[str, typer.Argument(help=f"One of {', '.join(NAMES)}.")],
    inputs: Annotated[list[Path], typer.Argument(help="The dump's files (or a folder of them).")],
    since: Annotated[
        int | None,
        typer.Option(help="crossref, openalex: only the works of this year and after."),
    ] = None,
    types: Annotated[
        str | None,
        typer.Option(
            help="crossref, openalex: only these types, comma-separated (each registry's names)."
        ),
    ] = None,
    sources: Annotated[
        str | None,
        typer.Option(help="openalex: only these sources (S123 ids or names), comma-separated."),
    ] = None,
    workers: Annotated[
        int, typer.Option(help="Processes reading the input: files at once, or dblp's pieces.")
    ] = 1,
) -> None:
    """Build the snapshot NAME from INPUTS and swap it in (resumes a killed build)."""
    if name not in NAMES:
        usage_error(f"snapshot: unknown snapshot {name!r} (known: {', '.join(NAMES)})")
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        usage_error(f"snapshot build {name}: no such input {', '.join(missing)} ({INPUTS[name]})")
    if workers < 1:
        usage_error("--workers must be at least 1")
    if name not in FILTERED and (since is not None or types is not None):
        usage_error(f"--since and --types are for the {' and '.join(FILTERED)} snapshots only")
    if name != "openalex" and sources is not None:
        usage_error("--sources is for the openalex snapshot only")
    from tasks.snapshots.store import build as build_snapshot
    from tasks.snapshots.store import snapshots_root
    from tasks.snapshots.update import builder_of

    given = {"since": since, "types": _listed(types), "sources": _listed(sources)}
    builder = builder_of(name, {k: v for k, v in given.items() if v is not None})
    try:
        manifest = build_snapshot(builder, inputs, snapshots_root(), workers=workers)
    except (ValueError, OSError) as exc:  # a format we do not know, a broken file: name it
        from tasks.errors import UsageError

        fail(exc if isinstance(exc, UsageError) else UsageError(f"snapshot build {name}: {exc}"))
    skipped = f", {counted(manifest.skipped, 'broken record')} skipped" if manifest.skipped else ""
    out.print(
        f"{name}@{manifest.date}: {counted(manifest.records, 'record')}{skipped}", highlight=False
    )
    for where in manifest.broken:  # each broken record named, as the dump wrote it
        err.print(f"skipped: {where}", soft_wrap=True)
    if manifest.skipped > len(manifest.broken):
        err.print(f"and {manifest.skipped - len(manifest.broken)} more")


@snapshot_app.command("fetch")
def fetch(
    names: Annotated[list[str], typer.Argument(help="dblp, arxiv, retractions, openalex, pubmed.")],
    since: Annotated[
        str | None,
        typer.Option(help="openalex: only the partitions updated on or after this day (ISO)."),
    ] = None,
) -> None:
    """Download what `snapshot build NAME` reads from its publisher (resumes a killed fetch)."""
    from datetime import date

    from flows.progress import report
    from tasks.errors import CiteauditError
    from tasks.registries.settings import read_settings
    from tasks.snapshots.sources import CROSSREF_MANUAL, read_fetch_settings
    from tasks.snapshots.sources import NAMES as SOURCES
    from tasks.snapshots.update import fetch_dump

    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        usage_error(
            f"snapshot fetch: unknown snapshot {unknown[0]!r} (known: {', '.join(SOURCES)})"
        )
    if "crossref" in names:
        usage_error(CROSSREF_MANUAL)
    try:
        day = date.fromisoformat(since) if since else None
    except ValueError:
        usage_error(f"--since {since!r}: not a day (YYYY-MM-DD)")
    try:
        settings, registries = read_fetch_settings(), read_settings()
        for name in names:
            with progress_bars():
                result = fetch_dump(name, settings, registries, day, report)
            got = counted(len(result.fetched), "file") if result.fetched else "nothing new"
            out.print(
                f"{name}: {got} fetched into {result.folder}; build it with `citeaudit snapshot"
                f" build {name} {result.folder}`",
                highlight=False,
                soft_wrap=True,
            )
    except CiteauditError as exc:
        fail(exc)


@snapshot_app.command("update")
def update(
    names: Annotated[
        list[str] | None, typer.Argument(help="The snapshots to update (default: every one built).")
    ] = None,
) -> None:
    """Fetch what changed since each snapshot's date and apply it (a rebuild where the source
    publishes only whole releases: dblp, Retraction Watch)."""
    from flows.progress import report
    from tasks.errors import CiteauditError, UsageError, exit_code
    from tasks.registries.settings import read_settings
    from tasks.snapshots.sources import read_fetch_settings
    from tasks.snapshots.store import snapshots_root
    from tasks.snapshots.update import chosen_snapshots
    from tasks.snapshots.update import update as update_snapshot

    root = snapshots_root()
    try:
        chosen = chosen_snapshots(root, names)
    except UsageError as exc:
        usage_error(f"snapshot update: {exc}")
    if not chosen:
        usage_error(f"snapshot update: no snapshot built under {root} (fetch and build one first)")
    try:
        settings, registries = read_fetch_settings(), read_settings()
    except CiteauditError as exc:
        fail(exc)
    failed: list[CiteauditError] = []
    for name in chosen:
        try:
            with progress_bars():
                done = update_snapshot(name, root, settings, registries, report)
        except CiteauditError as exc:  # said, and the others still updated
            err.print(f"citeaudit: error: {exc}", highlight=False, soft_wrap=True)
            failed.append(exc)
            continue
        m = done.manifest
        out.print(f"{name}@{m.date}: {done.how}, {counted(m.records, 'record')}", highlight=False)
    if failed:
        raise typer.Exit(max(exit_code(e) for e in failed))


@snapshot_app.command("status")
def status() -> None:
    """Each snapshot's date, records, size on disk, age, and whether it was built whole
    (complete: its absence decides) or filtered."""
    from rich.table import Table
    from rich.text import Text

    from tasks.snapshots.store import snapshots_root
    from tasks.snapshots.store import status as snapshot_status

    root = snapshots_root()
    found = snapshot_status(root)
    if not found:
        out.print(f"no snapshot built under {root}", highlight=False)
        return
    table = Table()
    for column in ("snapshot", "date", "records", "size", "age", "built", "complete"):
        table.add_column(column, justify="right" if column in ("records", "size") else "left")
    for s in found:
        age = "" if s.age_days is None else f"{s.age_days} days"
        note = "" if s.current else " (old format: build it again)"
        if s.damage:
            note += f" DAMAGED: {s.damage} (build it again)"
        whole = "yes" if s.complete else "no"
        table.add_row(
            s.name,
            s.date or "",
            f"{s.records:,}",
            _size(s.bytes),
            age,
            Text(s.built_at[:16] + note),  # a file's name verbatim, never markup
            whole,
        )
    out.print(table)
    out.print(f"under {root}", highlight=False)


@snapshot_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="The snapshot to remove.")]) -> None:
    """Remove the snapshot NAME (and any unfinished build of it)."""
    if name not in NAMES:
        usage_error(f"snapshot: unknown snapshot {name!r} (known: {', '.join(NAMES)})")
    from tasks.snapshots.store import remove as remove_snapshot
    from tasks.snapshots.store import snapshots_root

    try:
        removed = remove_snapshot(snapshots_root(), name)
    except OSError as exc:  # a folder we may not change: as the build says it
        usage_error(f"snapshot remove {name}: {exc}")
    if removed:
        out.print(f"removed the {name} snapshot", highlight=False)
    else:
        err.print(f"no {name} snapshot built", highlight=False)


def warn_if_stale() -> None:
    """An audit's one warning when a snapshot it asks is older than 30 days, and one for each
    snapshot whose files are damaged (it is not asked: lookups go on as without it)."""
    from tasks.lookup.snapshots import stale_snapshots
    from tasks.snapshots.store import damaged, snapshots_root, status

    found = status(snapshots_root())  # one look at each snapshot's files
    for said in damaged(found).values():
        err.print(
            f"warning: local snapshot {said}: skipped; run `citeaudit snapshot build` again",
            style="yellow",
            soft_wrap=True,
        )
    old = stale_snapshots(found)
    if old:
        err.print(
            f"warning: local snapshot {', '.join(old)}: run `citeaudit snapshot build` "
            "again for newer works",
            style="yellow",
            soft_wrap=True,
        )


def _listed(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KB", "MB"):
        if amount < 1024:
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GB"
