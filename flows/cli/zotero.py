"""`citeaudit zotero audit`: a Zotero library, collection or saved search audited as any input,
and with `--write-back` its findings written to the library as tags and child notes (with
`--fix`, verified items corrected as `citeaudit fix` corrects a .bib).

The items are fetched (tasks/registries/zotero.py), kept as OUT/zotero/JOB.json (the job's input,
as a .bib would be: `report`, `jobs` and a re-run read the same file) and audited by the same flow
as `citeaudit audit`, each item keyed by its item key. The write-back is planned from the job's
citations (tasks/render/zotero.py) and sent with each item's version: an item changed in Zotero
meanwhile is reported and left alone.

A key or library Zotero refuses is a usage error (exit 2); a Zotero that cannot be reached, keeps
refusing, or fails to write what was sent is an infrastructure failure (exit 3), said after what
was written.

`--fix` adds `citeaudit fix`'s corrections of verified items to the write-back (in the same
object as the item's tags: one version, one write). It does not imply `--write-back`: alone it is
a usage error (exit 2), so that a library is written only when asked in so many words.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flows.cli.app import DbOption, JobOption, OfflineOption, OutOption, fail, out, usage_error
from flows.cli.audit import run_audit
from flows.cli.checks import check_job, registry_settings
from flows.cli.summary import gate_failed, parse_gate
from tasks.plural import counted

if TYPE_CHECKING:
    from tasks.registries.zotero import ZoteroLibrary

zotero_app = typer.Typer(help="Audit a Zotero library, and write the findings back to it.")


@zotero_app.command("audit")
def zotero_audit(
    job: JobOption,
    library_id: Annotated[str, typer.Option(help="The user's or group's numeric id.")] = "",
    library_type: Annotated[str, typer.Option(help="user or group.")] = "user",
    collection: Annotated[str | None, typer.Option(help="Only this collection (its key).")] = None,
    search: Annotated[
        str | None, typer.Option(help="Only this saved search's items (its key; --local only).")
    ] = None,
    local: Annotated[
        bool, typer.Option(help="Zotero 7's local API (read-only) instead of the web API.")
    ] = False,
    write_back: Annotated[
        bool, typer.Option(help="Tag each flagged item and add a note (web API only).")
    ] = False,
    fix: Annotated[
        bool,
        typer.Option(help="With --write-back: correct verified items as `citeaudit fix` does."),
    ] = False,
    out_dir: OutOption = Path("out"),
    db: DbOption = None,
    offline: OfflineOption = False,
    fail_on: Annotated[str, typer.Option(help="As audit's --fail-on.")] = "",
) -> None:
    """Audit the items of a Zotero library (ZOTERO_API_KEY for the web API)."""
    if library_type not in ("user", "group"):
        usage_error("--library-type: user or group")
    if not library_id and not local:
        usage_error("--library-id: the library's numeric id (zotero.org/settings/keys shows it)")
    if search and not local:
        usage_error("--search: Zotero's web API does not run saved searches; use --local")
    if fix and not write_back:
        usage_error("--fix: corrections are written to the library; add --write-back")
    if write_back and local:
        usage_error("--write-back: Zotero's local API is read-only; use the web API")
    # before the items are fetched: the gate, and the job id that names OUT/zotero/JOB.json
    gate = parse_gate(fail_on)
    check_job(job)
    settings = registry_settings()
    if write_back and settings.zotero_api_key is None:
        usage_error("--write-back: set ZOTERO_API_KEY to a key that may write to the library")
    from tasks.errors import CiteauditError

    try:
        from tasks.registries.zotero import ZoteroLibrary

        library = ZoteroLibrary(
            library_id or "0",  # the local API's own library is user 0
            library_type,
            settings.zotero_api_key,
            local=local,
            url=settings.zotero_url,
            retry_after_cap_s=settings.retry_after_cap_s,
        )
        items = library.items(collection=collection, search=search)
    except CiteauditError as exc:  # the extra not installed; Zotero refused or unreachable
        fail(exc)
    source = out_dir / "zotero" / f"{job}.json"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n")
    out.print(f"{library.where}: {len(items)} items read into {source}", highlight=False)
    summary = run_audit([source], job, out_dir, db, offline, input_format="zotero")
    if write_back:  # before the gate's exit
        _write_back(library, items, out_dir / job, fix)
    if gate_failed(summary, gate):
        raise typer.Exit(1)


def _write_back(library: "ZoteroLibrary", items: list[Any], folder: Path, fix: bool) -> None:
    import polars as pl

    from tasks.registries.zotero import ZoteroError, ZoteroUnavailable
    from tasks.render.zotero import NOTE_TAG, write_back

    try:
        plan = write_back(
            items, pl.read_parquet(folder / "citations.parquet"), library.notes(NOTE_TAG), fix
        )
        updated = library.write(plan.items)
        noted = library.write(plan.notes)
    except ZoteroError as exc:
        fail(type(exc)(f"write-back: {exc}"))
    corrected = [key for key in plan.corrected if key in updated.written]
    out.print(
        f"written back: {len(updated.written)} items updated"
        + (f" ({len(corrected)} corrected)" if fix else "")
        + f", {len(noted.written)} notes ({plan.flagged} flagged)",
        highlight=False,
    )
    for key in corrected:
        for change in plan.corrected[key]:
            out.print(f"  {key}: {change.field} = {change.new} ({change.rule})", highlight=False)
    for key, doubts in plan.doubts.items():
        for doubt in doubts:
            out.print(f"  {key}: not corrected: {doubt}", highlight=False)
    for key in updated.conflicts + noted.conflicts:
        out.print(f"  {key}: changed in Zotero since it was read; left alone", highlight=False)
    failed = updated.failed | noted.failed
    for key, reason in failed.items():
        out.print(f"  {key}: not written: {reason}", highlight=False)
    if failed:
        fail(
            ZoteroUnavailable(f"write-back: Zotero did not write {counted(len(failed), 'object')}")
        )
