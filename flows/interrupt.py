"""Ctrl-C and SIGTERM end a CLI run within a second or two, whatever it is waiting on.

Python runs signal handlers only in the main thread and only between bytecodes, and Prefect
swaps in its own SIGTERM handler for a flow run; a worker thread sleeping in a rate limiter or
blocked in a socket read then keeps the run alive for minutes. So the run blocks both signals in
every thread (threads inherit the mask) and one watcher thread waits for them with sigwait. On a
signal it prints one line, marks the flow run crashed (best effort, bounded), lets go of the
background server and ends the process: nothing is left half-written, because every output file
is written under a temporary name and renamed into place and the library changes in one
transaction (an interrupted one is rolled back); answers received so far are in the HTTP cache,
so a re-run asks only for the rest. A signal in the run's last moments (its summary printed,
its server let go) still ends it so: the command waits for the watcher before it returns
(`finish`), where it would otherwise exit 0 under the watcher, or be ended by the signal
without a word once the interpreter winds down."""

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
MARK_CRASHED_S = 2.0

_cleanups: list[Callable[[], None]] = []
_flow_run_id: str | None = None
_enabled = False
_watching = False
_stopping = threading.Event()
_finished = threading.Event()  # the command is done: a later signal has nothing to clean up
_ending = threading.Lock()  # which came first: the stop signal or the command's end


def enable() -> None:
    """Arm `stop_on_signals` (the console script does; an in-process caller such as a test's
    CliRunner keeps its own signal handling)."""
    global _enabled
    _enabled = True


def on_stop(cleanup: Callable[[], None]) -> None:
    """Run `cleanup` (quickly, never raising) when a stop signal ends the run."""
    _cleanups.append(cleanup)


def note_flow_run(flow_run_id: str) -> None:
    """The flow run to mark crashed if the run is stopped."""
    global _flow_run_id
    _flow_run_id = flow_run_id


def stop_on_signals() -> None:
    """Call first thing in a command that runs a flow, before any thread starts."""
    global _watching
    if not _enabled or _watching:
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    threading.Thread(target=_watch, name="citeaudit-stop", daemon=True).start()
    _watching = True


def finish() -> None:
    """Call last in a command that armed `stop_on_signals`: a stop signal already sent ends
    the run as any other does (its line, exit 128 + signal), never an exit 0 or a silent one."""
    if not _watching:
        return
    with _ending:
        stopped = _stopping.is_set() or bool(STOP_SIGNALS & signal.sigpending())
        if not stopped:
            _finished.set()
    if stopped:
        threading.Event().wait()  # the watcher ends the process


def _watch() -> None:
    signum = signal.sigwait(STOP_SIGNALS)
    with _ending:
        _stopping.set()
    name = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    # To the file descriptor itself: sys.stderr may be wound down with the interpreter.
    os.write(
        sys.stderr.fileno() if sys.stderr else 2,
        f"\nciteaudit: stopped ({name}); nothing half-written, answers so far are cached: "
        "run the same command again to finish\n".encode(),
    )
    if _finished.is_set():  # the interpreter is winding down: end before it does, as said
        os._exit(128 + signum)
    for cleanup in _cleanups:
        with contextlib.suppress(Exception):  # ending anyway: a failed cleanup must not stop it
            cleanup()
    if _flow_run_id is not None:
        marker = threading.Thread(target=_mark_crashed, args=(_flow_run_id,), daemon=True)
        marker.start()
        marker.join(MARK_CRASHED_S)
    os._exit(128 + signum)


def _mark_crashed(flow_run_id: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    with contextlib.suppress(Exception), get_client(sync_client=True) as client:  # best effort
        client.set_flow_run_state(flow_run_id, Crashed(message="stopped by the user"), force=True)
