"""Progress of a running job, for whoever is watching (the CLI's progress bar).

The flow reports; a listener (the CLI's, for the `with watching(...)` block around the run)
draws. With no listener, reporting costs nothing. The listener lives in a context variable, not
a module global: a run watched in one thread is not drawn by another's listener."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import cast
from uuid import UUID

# (stage, done, total); total None while it is not known yet (a bulk import reading its input)
Listener = Callable[[str, int, int | None], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("citeaudit_progress", default=None)


@contextmanager
def watching(listener: Listener) -> Iterator[None]:
    """Progress reported inside the block goes to `listener`."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(stage: str, done: int, total: int | None) -> None:
    listener = _LISTENER.get()
    if listener is not None:
        listener(stage, done, total)


class ArtifactProgress:
    """Progress shown on the flow run in the Prefect UI (a progress artifact); outside a flow
    run (the plain pipeline) there is no UI and it shows nothing."""

    def __init__(self, kind: str, job_id: str, description: str) -> None:
        from prefect.artifacts import create_progress_artifact
        from prefect.context import FlowRunContext

        from flows.artifacts import artifact_key

        self.artifact: UUID | None = None
        if FlowRunContext.get() is None:
            return
        # sync_compatible: called from a sync flow it returns the id, not a coroutine
        self.artifact = cast(
            UUID,
            create_progress_artifact(
                progress=0.0, key=artifact_key(kind, job_id), description=description
            ),
        )

    def update(self, done: int, total: int) -> None:
        from prefect.artifacts import update_progress_artifact

        if self.artifact is not None:
            update_progress_artifact(self.artifact, 100.0 * done / max(total, 1))
