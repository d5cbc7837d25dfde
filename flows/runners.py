"""Which Prefect task runner executes a flow's tasks, chosen by configuration.

`threads` (default): a bounded thread pool in this process; the registry clients' rate limiters
are shared by all its threads, so the limit holds however many workers run."""

import os
from typing import Any, cast

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

DEFAULT_WORKERS = 4


def task_runner(kind: str | None = None, workers: int | None = None) -> TaskRunner[Any]:
    """A task runner by name: `threads` (env `CITEAUDIT_TASK_RUNNER`, default)."""
    kind = kind or os.environ.get("CITEAUDIT_TASK_RUNNER", "threads")
    workers = workers or int(os.environ.get("CITEAUDIT_WORKERS", DEFAULT_WORKERS))
    if kind == "threads":
        return cast(TaskRunner[Any], ThreadPoolTaskRunner(max_workers=workers))
    raise ValueError(f"unknown task runner {kind!r} (known: threads)")
