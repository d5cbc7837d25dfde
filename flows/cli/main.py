"""The `citeaudit` command line.

Imports stay lazy: `--help` and `--version` must answer in well under a second, and Prefect alone
costs seconds to import, so each command imports what it runs."""

import json
import logging
import os
import sys
import textwrap
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

import flows.quiet  # noqa: F401  (must come before anything imports prefect)
from flows.cli.fix import fix
from tasks.words import counted

if TYPE_CHECKING:
    from flows.progress import Listener
    from models.job import BulkSummary, JobParams, JobSummary
    from tasks.errors import CiteauditError
    from tasks.registries import RegistrySettings
    from tasks.store.library import Library
    from tasks.store.names import LibraryPath

app = typer.Typer(
    help=(
        "Audit research citations against Crossref, PubMed, DBLP, arXiv, Semantic Scholar, "
        "OpenAlex and Europe PMC (`citeaudit registries` lists those asked)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Verbatim: what is printed carries user data (entry keys, titles, paths), which Rich's markup
# would eat (`[support]`) and its emoji codes rewrite (`:cat:`); styles are given as `style=`.
out = Console(markup=False, emoji=False, highlight=False)
err = Console(stderr=True, markup=False, emoji=False, highlight=False)


# The options several commands share, declared once.
JobOption = Annotated[str, typer.Option("--job", help="Job id (letters, digits, . _ -).")]
OutOption = Annotated[Path, typer.Option("--out", help="Output folder.")]
DbOption = Annotated[str | None, typer.Option(help="DuckDB library (default $CITEAUDIT_DB).")]
OfflineOption = Annotated[bool, typer.Option(help="Do not contact the registries.")]
FormatOption = Annotated[str | None, typer.Option("--format", help="Force an input format.")]
ChunkSizeOption = Annotated[int, typer.Option(help="Citations per Prefect task.")]
WorkersOption = Annotated[int, typer.Option(help="Parallel validation tasks.")]


def show_version(value: bool) -> None:
    if value:
        from tasks.version import citeaudit_version

        typer.echo(f"citeaudit {citeaudit_version()}")
        raise typer.Exit()


@app.callback()
def citeaudit(
    version: Annotated[
        bool,
        typer.Option("--version", callback=show_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Audit research citations against Crossref, PubMed, DBLP, arXiv, Semantic Scholar,
    OpenAlex and Europe PMC (`citeaudit registries` lists those asked)."""


def fail(exc: "CiteauditError") -> NoReturn:
    """Our error in one line, the exit code its branch's (tasks/errors.py): 2 usage, 3
    infrastructure."""
    from tasks.errors import exit_code

    typer.echo(f"citeaudit: error: {exc}", err=True)
    raise typer.Exit(exit_code(exc))


def debugging() -> bool:
    """CITEAUDIT_DEBUG: Prefect's logs and tracebacks beside the one-line errors. Off when unset,
    empty, 0, false, no or off. It changes what is printed, never the exit code."""
    return os.environ.get("CITEAUDIT_DEBUG", "").strip().lower() not in _DEBUG_OFF


_DEBUG_OFF = frozenset({"", "0", "false", "no", "off"})


def usage_error(message: str) -> NoReturn:
    from tasks.errors import UsageError

    fail(UsageError(message))


def internal_error(message: str) -> NoReturn:
    """An internal or infrastructure failure (Prefect, the library lock): one line, exit 3."""
    from tasks.errors import InfrastructureError

    fail(InfrastructureError(message))


# `--fail-on` names statuses, `retracted` (a flag beside the status), `missing` (a citation whose
# reference the input does not hold: an input error of that kind) and `any`: every outcome a
# reader must look at.
RETRACTED = "retracted"
MISSING = "missing"
FLAGGED_OUTCOMES = ("mismatch", "not_found", "unmatched", "unverified", RETRACTED, MISSING)


def parse_gate(text: str) -> set[str]:
    """The outcomes `--fail-on` fails the run on."""
    from models.status import Status

    wanted = {s.strip() for s in text.split(",") if s.strip()}
    known = [s.value for s in Status] + [RETRACTED, MISSING, "any"]
    unknown = sorted(wanted - set(known))
    if unknown:
        usage_error(f"--fail-on: unknown status {', '.join(unknown)} (known: {', '.join(known)})")
    if "any" in wanted:
        wanted = (wanted - {"any"}) | set(FLAGGED_OUTCOMES)
    return wanted


def gate_failed(summary: "JobSummary", gate: set[str]) -> bool:
    """Whether the job has an outcome of `gate`; if so, which tripped it, said on stderr (a CI
    log shows why the step failed without scrolling back through the summary)."""
    counts = dict(summary.status_counts)
    counts[RETRACTED] = int(summary.metrics.get(RETRACTED, 0))
    counts[MISSING] = sum(1 for e in summary.input_errors if e.kind == MISSING)
    tripped = [f"{counts[o]} {o}" for o in sorted(gate) if counts.get(o, 0)]
    if tripped:
        typer.echo(f"citeaudit: --fail-on {','.join(sorted(gate))}: {', '.join(tripped)}", err=True)
    return bool(tripped)


def print_item(line: str) -> None:
    """A line of a list (a flagged citation, an input error): on a terminal, wrapped at spaces to
    its width, the rest indented under it (left whole, the terminal breaks it mid-word); piped
    or captured, one line each, for grep."""
    if out.is_terminal:
        line = textwrap.fill(
            line,
            width=out.width,
            subsequent_indent="      ",
            break_long_words=False,  # a path or URL longer than the line stays whole
            break_on_hyphens=False,
        )
    out.print(line, soft_wrap=True)


def no_registry_answered(summary: "JobSummary") -> bool:
    """Every citation unverified, some because asking failed (not --offline's choice): the
    network or the registries' addresses are wrong, which the user needs told at once."""
    unverified = summary.status_counts.get("unverified", 0)
    failed = any(f.error for f in summary.flagged if f.label == "unverified")
    return unverified == summary.citations > 0 and failed


def print_summary(summary: "JobSummary") -> None:
    from rich.table import Table

    out.print(f"job {summary.job_id}: {summary.citations} citations", highlight=False)
    table = Table()
    table.add_column("status")
    table.add_column("count", justify="right")
    for status, count in summary.status_counts.items():
        table.add_row(status, str(count))
    out.print(table)
    # Unverified citations usually share one cause (offline, registry down): say it once.
    unchecked = Counter(f.error or f.reason for f in summary.flagged if f.label == "unverified")
    flagged = [f for f in summary.flagged if f.label != "unverified"]
    if flagged:
        out.print(f"{counted(len(flagged), 'citation')} need attention:", style="red")
        for f in flagged[:20]:
            print_item(f"  {f.label}  {f.source_file}:{f.entry_key}: {f.reason}")
        if len(flagged) > 20:
            out.print(f"  ... and {len(flagged) - 20} more (see report.html)")
    if summary.flagged_left_out:
        out.print(
            f"{counted(summary.flagged_left_out, 'more flagged citation')} past the first "
            f"{len(summary.flagged):,} (see citations.parquet)",
            style="red",
        )
    if unchecked:
        # a big import's summary lists its first flagged citations only (report.py's cap)
        listed = unchecked.total()
        total = max(listed, summary.status_counts.get("unverified", 0))
        more = f" (the reasons of the first {listed})" if total > listed else ""
        out.print(f"{counted(total, 'citation')} could not be checked{more}:", style="yellow")
        for reason, count in unchecked.most_common(5):
            print_item(f"  {count} x {reason}")
        rest = unchecked.most_common()[5:]
        if rest:
            others = sum(count for _, count in rest)
            out.print(f"  ... and {others} more, for {counted(len(rest), 'other reason')}")
        if no_registry_answered(summary):
            out.print(
                "No registry answered (no network?): --offline skips the registries; "
                "the README's 'No internet?' recipe runs against the fake registry.",
                style="yellow",
                soft_wrap=True,  # one line, for grep
            )
    errors = summary.input_errors
    if errors:
        out.print(f"{counted(len(errors), 'input error')}:", style="yellow")
        for e in errors[:20]:
            print_item(f"  {e.where}: {e.reason}")
        if len(errors) > 20:
            out.print(f"  ... and {len(errors) - 20} more (see input_errors.parquet)")
    support = summary.metrics.get("claim_support")
    if isinstance(support, dict) and support["pairs"]:
        out.print(
            f"claim support: {support['related']} related, {support['unrelated']} unrelated, "
            f"{support['no_abstract']} without abstract (of {support['pairs']} cited works); "
            f"{support['stances']['contradicts']} contradicting",
            highlight=False,
        )
    elif isinstance(support, str) and summary.metrics.get("claims"):
        out.print(f"claim support: {support}", highlight=False)
    out.print(f"outputs: {summary.out}", highlight=False)


# Off a terminal (a CI log), a line at least this often says the run is alive and how far it is.
PROGRESS_EVERY_S = 30.0


@contextmanager
def progress_bars() -> Iterator[None]:
    """The progress the running flow reports (flows/progress.py): one bar per stage on a
    terminal; elsewhere (a CI log, a file) a line every $CITEAUDIT_PROGRESS_SECONDS (default
    PROGRESS_EVERY_S) seconds, so that a long run's log never stays empty."""
    from flows import progress

    every = float(os.environ.get("CITEAUDIT_PROGRESS_SECONDS") or PROGRESS_EVERY_S)
    shown = _bars() if err.is_terminal else _progress_lines(every)
    with shown as on_progress, progress.watching(on_progress):
        yield


@contextmanager
def _progress_lines(every: float) -> "Iterator[Listener]":
    """A line on stderr every `every` seconds: the stage last reported, how far it is, and the
    time since the run started (`citeaudit: validate 120/285, 2:30 elapsed`)."""
    import threading
    import time

    started = time.monotonic()
    latest: list[str] = ["starting"]
    stop = threading.Event()

    def on_progress(stage: str, done: int, total: int | None) -> None:
        latest[0] = f"{stage} {done}/{'?' if total is None else total}"

    def say() -> None:
        while not stop.wait(every):
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            typer.echo(f"citeaudit: {latest[0]}, {minutes}:{seconds:02d} elapsed", err=True)

    thread = threading.Thread(target=say, name="citeaudit-progress", daemon=True)
    thread.start()
    try:
        yield on_progress
    finally:
        stop.set()
        thread.join()


@contextmanager
def _bars() -> "Iterator[Listener]":
    """One bar per stage, on the terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        bars: dict[str, TaskID] = {}

        def on_progress(stage: str, done: int, total: int | None) -> None:
            if stage not in bars:
                bars[stage] = bar.add_task(stage, total=total)
            bar.update(bars[stage], completed=done, total=total)

        yield on_progress


@contextmanager
def prefect_api() -> Iterator[None]:
    """The Prefect API for this run (flows/server.py): one the user configured, or the shared
    background server, started on first use. Failing to start it is an infrastructure error."""
    from flows import interrupt, server

    try:
        with server.prefect_api() as api:
            if api.lease is not None:
                interrupt.on_stop(partial(server.release, api.lease))
            yield
    except server.ServerStartError as exc:
        internal_error(str(exc))


def run_flow(flow_name: str, workers: int, **parameters: Any) -> Any:
    """Run the job flow `module:name` in this process on `workers` task threads, with progress
    bars, against the run's Prefect API (imported only once that API is set)."""
    import importlib

    module, _, name = flow_name.partition(":")
    with prefect_api():
        flow = getattr(importlib.import_module(module), name)
        from flows import interrupt
        from flows.quiet import Reported
        from flows.runners import task_runner
        from tasks.errors import CiteauditError

        # One line per error (CITEAUDIT_DEBUG=1: Prefect's logs and the traceback as well).
        reported = Reported(CiteauditError, failures=not debugging())
        for runs in ("prefect.flow_runs", "prefect.task_runs"):
            logging.getLogger(runs).addFilter(reported)
        if not debugging():
            # Prefect's own record keepers warn while they drain at exit on a slow server
            # ("Still processing items"): nothing the user can act on, and the records still go.
            for worker in ("EventsWorker", "APILogWorker"):
                logging.getLogger(worker).setLevel(logging.ERROR)

        def note_run(flow: Any, flow_run: Any, state: Any) -> None:
            interrupt.note_flow_run(str(flow_run.id))

        try:
            with progress_bars():
                runner = task_runner(workers=workers)
                summary = flow.with_options(task_runner=runner, on_running=[note_run])(**parameters)
        except CiteauditError as exc:  # an input changed after it was checked, a library lock
            fail(exc)
        except Exception as exc:
            if debugging():
                traceback.print_exc()
            internal_error(f"{type(exc).__name__}: {exc}")
    return summary


def check_inputs(
    job: str, inputs: list[Path], input_format: str | None, out_dir: Path, db: str | None
) -> None:
    """Arguments and settings, checked before a flow starts: a bad one is a one-line usage
    error (exit 2), never a traceback from inside a task or an exit 1 a --fail-on gate reads.
    The arguments' shape and the files are checked with the standard library first, the
    settings last: neither a reader nor the store (DuckDB, Polars, pyarrow), Prefect or the
    registry clients is imported here, so that a usage error answers at once."""
    from tasks.read import FORMATS
    from tasks.read.kinds import NotABibliography, check_bibliographies

    check_job(job)
    if input_format is not None and input_format not in FORMATS:
        usage_error(f"--format: unknown format {input_format!r} (known: {', '.join(FORMATS)})")
    check_out(out_dir)
    library_path(db)
    for path in inputs:
        if path.is_dir():
            usage_error(f"{path} is a folder: give the reference files in it")
    try:
        check_bibliographies(inputs)
    except NotABibliography as exc:
        usage_error(str(exc))

    from flows.runners import runner_choice
    from tasks.trust import load_trusted_domains

    registry_settings()  # checked here; the flow reads them in its own process
    try:
        runner_choice()
        load_trusted_domains()
    except (ValueError, OSError) as exc:
        usage_error(f"configuration: {exc}")


def checked_params(
    job: str,
    inputs: list[Path],
    input_format: str | None,
    out_dir: Path,
    db: str | None,
    offline: bool,
    chunk_size: int,
    styles: list[str] | None = None,
) -> "JobParams":
    """The job's parameters, once check_inputs has passed them."""
    check_inputs(job, inputs, input_format, out_dir, db)
    from models.job import JobParams

    return JobParams(
        inputs=[str(p) for p in inputs],
        job_id=job,
        out_dir=str(out_dir),
        db=db,
        offline=offline,
        input_format=input_format,
        chunk_size=chunk_size,
        styles=styles,
    )


def registry_settings() -> "RegistrySettings":
    """The command's registry settings, read once from the environment; a bad one is a usage
    error naming its variable."""
    from tasks.registries import SettingsError, read_settings

    try:
        return read_settings()
    except SettingsError as exc:
        fail(exc)


def check_job(job: str) -> None:
    """A job id that is safe as a folder name, else a usage error."""
    from tasks.store.names import UnsafeJobId, check_job_id

    try:
        check_job_id(job)
    except UnsafeJobId as exc:
        usage_error(str(exc))


def check_out(out_dir: Path) -> None:
    """--out names a folder, or nothing yet."""
    if out_dir.exists() and not out_dir.is_dir():
        usage_error(f"--out: {out_dir} is a file, not a folder")


def library_path(db: str | None) -> "LibraryPath":
    """Where --db (or CITEAUDIT_DB) puts the library, resolved once for the command; a folder or
    a file that is no library is a usage error."""
    from tasks.store.names import NotALibrary, check_library, library_at

    path = library_at(db)
    try:
        check_library(path)
    except NotALibrary as exc:
        usage_error(f"{exc} (set --db or CITEAUDIT_DB)")
    return path


def existing_library(db: str | None, read_only: bool = True) -> "Library":
    """An existing library (a mistyped path is an error, not a new empty library), read-only
    unless the command changes it."""
    from tasks.store.names import library_exists

    path = library_path(db)
    if not library_exists(path):
        usage_error(f"no library at {path} (set --db or CITEAUDIT_DB)")
    from tasks.store.library import open_library  # DuckDB, Polars, pyarrow: once it is there

    return open_library(path, read_only=read_only)


@app.command()
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
    from flows.interrupt import stop_on_signals

    stop_on_signals()
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
    params = checked_params(
        job, inputs, input_format, out_dir, db, offline, chunk_size, styles=chosen_styles
    )
    warn_if_stale()
    summary: JobSummary = run_flow("flows.audit:audit_job", workers, params=params)
    print_summary(summary)
    if sarif is not None:
        from tasks.store.jobfolder import write_output

        try:
            write_output(sarif, (out_dir / job / "citeaudit.sarif").read_bytes())
        except OSError as exc:
            internal_error(f"--sarif {sarif}: not written ({exc.strerror or exc}); it is as it was")
    if gate_failed(summary, gate):
        raise typer.Exit(1)


@app.command()
def check(
    inputs: Annotated[list[Path], typer.Argument(help="Bibliographies or manuscripts to check.")],
    fail_on: Annotated[
        str, typer.Option(help="Exit 1 on these outcomes (as audit's --fail-on).")
    ] = "not_found,mismatch,retracted,missing",
    offline: OfflineOption = False,
) -> None:
    """Audit INPUTS as a gate (a pre-commit hook, a CI step): audit's summary, then exit 1 if an
    outcome of --fail-on occurs. The job folder and its library stay in citeaudit's cache
    folder, not in the repository; the HTTP cache keeps a re-run to what changed."""
    import platformdirs

    home = platformdirs.user_cache_path("citeaudit") / "checks"
    home.mkdir(parents=True, exist_ok=True)
    audit(
        inputs,
        job="check",
        out_dir=home,
        db=os.environ.get("CITEAUDIT_DB") or str(home / "checks.duckdb"),
        offline=offline,
        fail_on=fail_on,
    )


@app.command()
def serve(
    deployments: Annotated[
        Path | None, typer.Option("--file", help="Prefect project file (default: the repo's).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Most flow runs at once.")] = None,
) -> None:
    """Serve every deployment (and its schedule) from this process, without a work pool."""
    if deployments is not None and not deployments.is_file():
        usage_error(f"--file: no such file {deployments}")  # before Prefect and its server start
    with prefect_api():
        from flows.serve import DEPLOYMENTS_FILE, serve_all

        serve_all(deployments or DEPLOYMENTS_FILE, limit=limit)


@app.command("import")
def import_(
    inputs: Annotated[list[Path], typer.Argument(help="Reference files to import.")],
    job: JobOption,
    out_dir: OutOption = Path("out"),
    db: DbOption = None,
    offline: OfflineOption = False,
    input_format: FormatOption = None,
    batch_size: Annotated[int, typer.Option(help="References per resumable batch.")] = 5_000,
    chunk_size: ChunkSizeOption = 200,
    workers: WorkersOption = 4,
) -> None:
    """Import a large list into the library in batches; re-run the same command to resume."""
    from flows.interrupt import stop_on_signals

    stop_on_signals()
    if batch_size < 1 or chunk_size < 1 or workers < 1:
        usage_error("--batch-size, --chunk-size and --workers must be at least 1")
    params = checked_params(job, inputs, input_format, out_dir, db, offline, chunk_size)
    summary: BulkSummary = run_flow(
        "flows.bulk:bulk_import", workers, params=params, batch_size=batch_size
    )
    print_summary(summary)
    out.print(
        f"{summary.batches} batches, {summary.batches_skipped} already stored"
        + ("; bibliographies skipped (list too long)" if summary.bibliographies_skipped else "")
    )


@app.command()
def report(
    job: Annotated[str, typer.Argument(help="Job id.")],
    out_dir: OutOption = Path("out"),
    db: DbOption = None,
    markdown: Annotated[
        bool, typer.Option(help="Print it as short Markdown (a CI job's summary page).")
    ] = False,
) -> None:
    """Reprint a job's summary from the library, and where its report is."""
    unstored = out_dir / job / "NOT_STORED.txt"
    with existing_library(db) as library:
        row = library.job(job)
        if row is None:
            if unstored.is_file():
                usage_error(
                    f"no job {job!r} in the library; {out_dir / job} holds a run of it: "
                    + unstored.read_text().strip()
                )
            usage_error(f"no job {job!r} in the library")
        errors = library.table("input_errors", job)
        citations = library.table("citations", job)
    from models.audit import InputError, Status
    from models.job import Flagged, JobSummary
    from tasks.report import flagged_list

    html_report = out_dir / job / "report.html"
    summary = JobSummary(
        job_id=job,
        citations=row["n_citations"],
        status_counts={s.value: row["status_counts"].get(s.value, 0) for s in Status},
        input_errors=[InputError.model_validate(e) for e in errors.to_dicts()],
        flagged=[Flagged.model_validate(f) for f in flagged_list(citations)],
        out=str(html_report) if html_report.is_file() else f"{out_dir / job} (not found)",
    )
    if markdown:
        from tasks.report.summary import summary_markdown

        typer.echo(summary_markdown(summary), nl=False)
    else:
        print_summary(summary)
    if unstored.is_file():
        typer.echo(
            f"citeaudit: {out_dir / job} is from a later run, not stored: run it again", err=True
        )


@app.command()
def jobs(
    db: DbOption = None,
) -> None:
    """List the jobs in the library with their counts."""
    with existing_library(db) as library:
        rows = library.jobs().to_dicts()
    from rich.table import Table

    from models.status import Status

    # The statuses share one column, a line each with its count: a column per status is wider
    # than an 80-column terminal, which squeezed the counts out of sight.
    table = Table(title=f"{len(rows)} jobs")
    table.add_column("job", overflow="fold")
    table.add_column("updated", no_wrap=True)
    table.add_column("citations", justify="right")
    table.add_column("statuses")
    table.add_column("input errors", justify="right")
    for row in rows:
        counts = json.loads(row["status_counts"] or "{}")
        table.add_row(
            row["job_id"],
            f"{row['updated_at']:%Y-%m-%d}",
            str(row["n_citations"]),
            "\n".join(f"{counts[s.value]} {s.value}" for s in Status if counts.get(s.value)),
            str(row["n_input_errors"]),
        )
    out.print(table)


@app.command()
def dedupe(
    db: DbOption = None,
) -> None:
    """Dedupe the whole library again (e.g. after a threshold change or an upgrade)."""
    with existing_library(db, read_only=False) as library:
        from tasks.dedupe.job import repeats_within_jobs
        from tasks.dedupe.rebuild import rededupe, refreshed_records

        records = refreshed_records(library.table("dedupe_records"), library.table("citations"))
        if not records.height:
            usage_error("the library holds no citations to dedupe")
        before = library.table("works").height
        rebuilt = rededupe(records)
        library.replace_dedupe(rebuilt.records, rebuilt.assignments, rebuilt.works, rebuilt.links)
    duplicates = repeats_within_jobs(rebuilt.assignments).height
    out.print(
        f"{records.height} citations, {rebuilt.works.height} works (was {before}), "
        f"{duplicates} repeated within their jobs, {rebuilt.links.height} links between "
        "related works",
        highlight=False,
    )


@app.command("mcp")
def mcp_server(
    db: DbOption = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Also rewrite each job's folder here.")
    ] = None,
    offline: OfflineOption = False,
    http: Annotated[bool, typer.Option(help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
) -> None:
    """Serve the agent tools (add, validate, format, export, list citations) over MCP, on stdio
    for the agent framework that starts it (needs the mcp extra). Over HTTP off loopback, every
    request must carry `Authorization: Bearer $CITEAUDIT_MCP_TOKEN` (asked on loopback too when
    it is set); without the variable such a server does not start."""
    token = os.environ.get("CITEAUDIT_MCP_TOKEN") or None
    if http and token is None and not _loopback(host):
        usage_error(
            f"--host {host} serves other machines: set CITEAUDIT_MCP_TOKEN (clients send "
            "'Authorization: Bearer TOKEN'), or serve on 127.0.0.1"
        )
    if out_dir is not None:
        check_out(out_dir)
    library = library_path(db)
    from tasks.errors import MissingExtra

    try:
        from flows.agents.mcp import serve
    except MissingExtra as exc:
        fail(exc)
    serve(library, str(out_dir) if out_dir else None, offline, http, host, port, token)


def _loopback(host: str) -> bool:
    """Whether HOST is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, maybe not only this machine


@app.command()
def registries() -> None:
    """List the registries an audit asks, their pace and credentials, and why any is not."""
    from flows.cli.registries import show_registries

    show_registries(out, registry_settings())


server_app = typer.Typer(
    help="The background Prefect server citeaudit runs share.", no_args_is_help=True
)
app.add_typer(server_app, name="server")


@server_app.command("status")
def server_status() -> None:
    """Say whether the background server runs, where, and since when."""
    import time

    from flows import server

    folder = server.server_dir()
    configured = server.configured_api_url()
    if configured:
        out.print(f"PREFECT_API_URL is set: runs use {configured}", highlight=False)
    info = server.running_server(folder)
    if info is None:
        out.print(f"no background server running ({folder})", highlight=False)
        return
    minutes = (time.time() - info.started_at) / 60
    out.print(
        f"background server running at {info.api_url} (pid {info.pid}, up {minutes:.0f} min, "
        f"home {folder})",
        highlight=False,
    )


@server_app.command("stop")
def server_stop() -> None:
    """Stop the background server (the next run starts it again)."""
    from flows import server

    stopped = server.stop()
    if stopped is None:
        out.print("no background server running", highlight=False)
    else:
        out.print(f"stopped the background server at {stopped.api_url}", highlight=False)


app.command("fix")(fix)


from flows.cli.zotero import zotero_app  # noqa: E402  (its command builds on audit above)

app.add_typer(zotero_app, name="zotero")

from flows.cli.snapshot import snapshot_app, warn_if_stale  # noqa: E402  (uses the helpers above)

app.add_typer(snapshot_app, name="snapshot")


def main() -> None:
    """The console script: an error of ours nobody caught is its one line and its exit code;
    any other is an internal error, one line and exit 3 (CITEAUDIT_DEBUG=1 shows its
    traceback)."""
    from flows import interrupt
    from tasks.errors import CiteauditError, exit_code

    interrupt.enable()
    try:
        app()
    except CiteauditError as exc:  # one of ours no command caught (a missing extra): its line
        typer.echo(f"citeaudit: error: {exc}", err=True)
        sys.exit(exit_code(exc))
    except Exception as exc:
        if debugging():
            traceback.print_exc()  # then the same line and exit code: 3 means internal, always
        typer.echo(f"citeaudit: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
