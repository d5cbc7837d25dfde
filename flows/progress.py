"""Progress of a running job, for whoever is watching (the CLI's progress bar).

The flow reports; a listener (set by the CLI) draws. With no listener, reporting costs nothing."""

from collections.abc import Callable

Listener = Callable[[str, int, int], None]  # (stage, done, total)

_listener: Listener | None = None


def set_listener(listener: Listener | None) -> None:
    global _listener
    _listener = listener


def report(stage: str, done: int, total: int) -> None:
    if _listener is not None:
        _listener(stage, done, total)
