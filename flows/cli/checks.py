"""Arguments and settings, checked before a command runs anything: a bad one is a one-line usage
error (exit 2). Each check imports only what it needs, so that a usage error answers at once."""

from pathlib import Path
from typing import TYPE_CHECKING

from flows.cli.app import fail, usage_error

if TYPE_CHECKING:
    from models.job import JobParams
    from tasks.registries import RegistrySettings
    from tasks.store.library import Library
    from tasks.store.names import LibraryPath


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
        check_bibliographies(inputs, _pdf_refusal)
    except NotABibliography as exc:
        usage_error(str(exc))

    from flows.runners import runner_choice
    from tasks.score.trust import load_trusted_domains

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


def _pdf_refusal(path: Path) -> str | None:
    """Why a PDF input cannot be read (PDFium loads only when an input is a PDF)."""
    from tasks.read.pdf import refusal

    return refusal(path)
