"""Running a job flow from the command line: the Prefect API it runs against, the progress it
reports (bars on a terminal, a line now and then elsewhere), and its failures as one line."""

import logging
import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import typer

from flows.cli.app import debugging, err, fail, internal_error

if TYPE_CHECKING:
    from flows.progress import Listener


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
        from flows.prefect_logging import Reported
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
