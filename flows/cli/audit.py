"""`citeaudit audit` and `citeaudit check`: a job's inputs audited by the audit flow, its summary
printed, then `--fail-on`'s gate. `run_audit` is the one way a command audits (`zotero audit`
calls it too): it gives the summary back, and the caller applies its gate."""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows.cli.app import (
    ChunkSizeOption,
    DbOption,
    FormatOption,
    JobOption,
    OfflineOption,
    OutOption,
    WorkersOption,
    internal_error,
    usage_error,
)
from flows.cli.checks import checked_params
from flows.cli.run import run_flow
from flows.cli.snapshot import warn_if_stale
from flows.cli.summary import gate_failed, parse_gate, print_summary

if TYPE_CHECKING:
    from models.job import JobSummary


def run_audit(
    inputs: list[Path],
    job: str,
    out_dir: Path,
    db: str | None,
    offline: bool,
    input_format: str | None = None,
    chunk_size: int = 200,
    workers: int = 4,
    styles: list[str] | None = None,
) -> "JobSummary":
    """Audit INPUTS as job JOB (the arguments checked first), print its summary and return it."""
    from flows.interrupt import stop_on_signals

    stop_on_signals()
    params = checked_params(
        job, inputs, input_format, out_dir, db, offline, chunk_size, styles=styles
    )
    warn_if_stale()
    summary: JobSummary = run_flow("flows.audit:audit_job", workers, params=params)
    print_summary(summary)
    return summary


def audit(
    inputs: Annotated[list[Path], typer.Argument(help="Reference files to audit.")],
    job: JobOption,
    out_dir: OutOption = Path("out"),
    db: DbOption = None,
    offline: OfflineOption = False,
    input_format: FormatOption = None,
    fail_on: Annotated[
        str,
        typer.Option(
            help="Exit 1 if any citation has one of these outcomes: a status, 'retracted', "
            "'missing' (cited, but no reference given has it), or 'any' (mismatch, not_found, "
            "unmatched, unverified, retracted, missing)."
        ),
    ] = "",
    chunk_size: ChunkSizeOption = 200,
    workers: WorkersOption = 4,
    styles: Annotated[
        str | None,
        # The default is models.job.DEFAULT_STYLES, not imported here so that --help stays fast.
        typer.Option(help="Bibliography styles, comma-separated (default: apa)."),
    ] = None,
    sarif: Annotated[
        Path | None,
        typer.Option(help="Also write the problems as SARIF 2.1.0 here (OUT/JOB/citeaudit.sarif)."),
    ] = None,
) -> None:
    """Validate every citation of INPUTS, write OUT/JOB/ and the library."""
    if chunk_size < 1 or workers < 1:
        usage_error("--chunk-size and --workers must be at least 1")
    gate = parse_gate(fail_on)
    if sarif is not None and (sarif.is_dir() or not sarif.parent.is_dir()):
        usage_error(f"--sarif: {sarif} is not a file in an existing folder")
    chosen_styles = None
    if styles is not None:
        from tasks.render.citeproc import STYLES

        chosen_styles = [s.strip() for s in styles.split(",") if s.strip()]
        unknown = [s for s in chosen_styles if s not in STYLES]
        if unknown or not chosen_styles:
            known = ", ".join(STYLES)
            usage_error(f"--styles: unknown style {', '.join(unknown)} (known: {known})")
    summary = run_audit(
        inputs, job, out_dir, db, offline, input_format, chunk_size, workers, chosen_styles
    )
    if sarif is not None:
        from tasks.store.jobfolder import write_output

        try:
            write_output(sarif, (out_dir / job / "citeaudit.sarif").read_bytes())
        except OSError as exc:
            internal_error(f"--sarif {sarif}: not written ({exc.strerror or exc}); it is as it was")
    if gate_failed(summary, gate):
        raise typer.Exit(1)


def check(
    inputs: Annotated[list[Path], typer.Argument(help="Bibliographies or manuscripts to check.")],
    fail_on: Annotated[
        str, typer.Option(help="Exit 1 on these outcomes (as audit's --fail-on).")
    ] = "not_found,mismatch,retracted,missing",
    offline: OfflineOption = False,
) -> None:
    """Audit INPUTS as a gate (a pre-commit hook, a CI step): audit's summary, then exit 1 if an
    outcome of --fail-on occurs. The job folder (one per repository) and its library stay in
    citeaudit's cache folder, not in the repository; the HTTP cache keeps a re-run to what
    changed."""
    import platformdirs

    gate = parse_gate(fail_on)
    home = platformdirs.user_cache_path("citeaudit") / "checks"
    home.mkdir(parents=True, exist_ok=True)
    db = os.environ.get("CITEAUDIT_DB") or str(home / "checks.duckdb")
    summary = run_audit(inputs, check_job(Path.cwd()), home, db, offline)
    if gate_failed(summary, gate):
        raise typer.Exit(1)


def check_job(where: Path) -> str:
    """The job `check` keeps for the repository holding `where` (the nearest folder up with a
    `.git`, else `where`): its name and a digest of its path, so two repositories of one name
    never share a job folder, and one repository's re-runs replace its own."""
    import hashlib
    import re

    where = where.resolve()
    root = next((d for d in (where, *where.parents) if (d / ".git").exists()), where)
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", root.name).strip("-")[:40] or "repository"
    return f"check-{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:10]}"
