"""Progress of a running job, for whoever is watching (the CLI's progress bar).

The flow reports; a listener (set by the CLI) draws. With no listener, reporting costs nothing."""

from collections.abc import Callable
from typing import cast
from uuid import UUID

# (stage, done, total); total None while it is not known yet (a bulk import reading its input)
Listener = Callable[[str, int, int | None], None]

_listener: Listener | None = None


def set_listener(listener: Listener | None) -> None:
    global _listener
    _listener = listener


def report(stage: str, done: int, total: int | None) -> None:
    if _listener is not None:
        _listener(stage, done, total)


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
