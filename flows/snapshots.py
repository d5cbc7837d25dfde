"""snapshot_update: the local snapshots brought up to their publishers' present, on a schedule
(deployments/prefect.yaml's `daily`, beside the weekly audit).

each snapshot named (default: every one built) -> update it (tasks/snapshots/update.py: what
changed since its date fetched and applied, a rebuild for dblp and Retraction Watch) -> one line
each. A snapshot that cannot be updated now (its publisher down, a disk too full) keeps its
current version and is said; the others still run, and the run then fails so that it shows.
"""

from prefect import flow

from flows.steps import stage_task
from tasks.errors import CiteauditError, InfrastructureError
from tasks.registries.settings import read_settings
from tasks.snapshots.sources import read_fetch_settings
from tasks.snapshots.store import snapshots_root
from tasks.snapshots.update import Updated, chosen_snapshots, update


@stage_task("update-snapshot")
def update_step(name: str) -> Updated:
    return update(name, snapshots_root(), read_fetch_settings(), read_settings())


def _line(done: Updated) -> str:
    return f"{done.name}@{done.manifest.date}: {done.how}, {done.manifest.records} records"


@flow(name="snapshot_update", log_prints=False)
def snapshot_update(names: list[str] | None = None) -> dict[str, str]:
    """Fetch what changed since each snapshot's date and apply it.

    Parameters:
        names: the snapshots to update (dblp, arxiv, retractions, crossref, openalex, pubmed;
            default: every one built under $CITEAUDIT_SNAPSHOTS).

    Returns each snapshot's line (`dblp@2026-11-30: rebuilt, 7,012,345 records`); fails, once
    every snapshot was tried, when one could not be updated (its line says why).
    """
    chosen = chosen_snapshots(snapshots_root(), names)
    lines: dict[str, str] = {}
    failed: list[str] = []
    for name in chosen:
        try:
            lines[name] = _line(update_step(name))
        except CiteauditError as exc:
            lines[name] = f"{name}: not updated: {exc}"
            failed.append(lines[name])
    if failed:
        raise InfrastructureError("; ".join(failed))
    return lines
