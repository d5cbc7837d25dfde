"""`citeaudit import`: a large list imported into the library in resumable batches by the bulk
flow, then its summary."""

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
    out,
    usage_error,
)
from flows.cli.checks import checked_params
from flows.cli.run import run_flow
from flows.cli.summary import print_summary

if TYPE_CHECKING:
    from models.job import BulkSummary


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
