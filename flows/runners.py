"""Which Prefect task runner executes a flow's tasks, chosen by configuration.

`threads` (default): a bounded thread pool in this process; the registry clients' rate limiters
are shared by all its threads, so the limit holds however many workers run.

`dask`: prefect-dask's DaskTaskRunner. Every Dask worker *process* has its own rate limiters, so
the safe default is a LocalCluster of in-process workers (`processes=False`: threads, one shared
limiter). With `CITEAUDIT_DASK_PROCESSES=1` each of the n worker processes gets 1/n of the rate
(`CITEAUDIT_RATE_SAFETY` divided by n). With an existing scheduler (`CITEAUDIT_DASK_ADDRESS`) the
workers are not ours to configure: give them that divided setting yourself (deployments/README.md).

Prefect is imported where a runner is built, not with the module: the CLI checks the
configuration (`runner_choice`) before a run, and a usage error must not wait seconds for it.
"""

import os
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, cast

from tasks.errors import MissingExtra
from tasks.registries import read_settings

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner

DEFAULT_WORKERS = 4
KINDS = ("threads", "dask")


def runner_choice(kind: str | None = None, workers: int | None = None) -> tuple[str, int]:
    """The task runner's name and workers (env `CITEAUDIT_TASK_RUNNER`, `CITEAUDIT_WORKERS`),
    checked without building it: ValueError for a name, a count or an extra that is wrong."""
    kind = kind or os.environ.get("CITEAUDIT_TASK_RUNNER", "threads")
    workers = workers or int(os.environ.get("CITEAUDIT_WORKERS", DEFAULT_WORKERS))
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if kind not in KINDS:
        raise ValueError(f"unknown task runner {kind!r} (known: {', '.join(KINDS)})")
    if kind == "dask" and find_spec("prefect_dask") is None:  # optional engine
        raise MissingExtra("dask", "CITEAUDIT_TASK_RUNNER=dask")
    return kind, workers


def task_runner(kind: str | None = None, workers: int | None = None) -> "TaskRunner[Any]":
    """A task runner by name: `threads` (env `CITEAUDIT_TASK_RUNNER`, default) or `dask`."""
    from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

    kind, workers = runner_choice(kind, workers)
    if kind == "dask":
        return dask_task_runner(workers)
    return cast(TaskRunner[Any], ThreadPoolTaskRunner(max_workers=workers))


def tasks_run_here(runner: "TaskRunner[Any] | None" = None) -> bool:
    """Whether `runner` (by default the running flow's, else the configured one) runs tasks in
    this process, so that they share its state: threads, or a new LocalCluster of in-process
    Dask workers. Any other runner, or one we cannot tell, counts as elsewhere."""
    from prefect.context import FlowRunContext
    from prefect.task_runners import ThreadPoolTaskRunner

    if runner is None:
        context = FlowRunContext.get()
        runner = context.task_runner if context else task_runner()
    if isinstance(runner, ThreadPoolTaskRunner):
        return True
    # prefect-dask's runner, judged by how it was made: a scheduler address means other hosts,
    # and only a LocalCluster named as ours names it is known to keep its workers here
    cluster_kwargs = getattr(runner, "cluster_kwargs", None)
    return (
        getattr(runner, "address", "elsewhere") is None
        and getattr(runner, "cluster_class", None) in (None, "distributed.LocalCluster")
        and isinstance(cluster_kwargs, dict)
        and cluster_kwargs.get("processes") is False
    )


def dask_task_runner(workers: int) -> "TaskRunner[Any]":
    """A DaskTaskRunner on the scheduler at `CITEAUDIT_DASK_ADDRESS`, or on a new LocalCluster of
    `workers` workers (built lazily: the cluster starts when a flow run starts)."""
    from prefect.task_runners import TaskRunner
    from prefect_dask import DaskTaskRunner  # optional engine: runner_choice found it installed

    address = os.environ.get("CITEAUDIT_DASK_ADDRESS")
    if address:
        return cast(TaskRunner[Any], DaskTaskRunner(address=address))
    processes = os.environ.get("CITEAUDIT_DASK_PROCESSES", "0") == "1"
    return cast(
        TaskRunner[Any],
        DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs=local_cluster_kwargs(workers, processes),
        ),
    )


def local_cluster_kwargs(workers: int, processes: bool) -> dict[str, Any]:
    """LocalCluster settings that keep the registries' rate limits whatever the worker kind."""
    kwargs: dict[str, Any] = {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": processes,
        "dashboard_address": None,  # no web server nobody asked for
    }
    if processes:
        # Each process paces itself alone, so each may use only its share of the rate.
        share = read_settings().rate_safety / workers
        kwargs["env"] = {"CITEAUDIT_RATE_SAFETY": str(share)}
    return kwargs
