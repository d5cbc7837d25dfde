"""The same audit_job on Dask: in-process workers (the default) and separate worker processes
on an existing scheduler give the thread runner's citations.parquet, minus timestamps.

Dask worker processes cannot use Prefect's in-process test server, so these tests run against a
real `prefect server start` (tests/prefect_server.py)."""

from pathlib import Path

import polars as pl
import pytest
from distributed import Client, LocalCluster
from prefect import flow
from prefect_dask import DaskTaskRunner

from flows.audit import audit_job
from flows.runners import local_cluster_kwargs, task_runner, tasks_run_here
from models.job import JobParams

FIXTURES = Path(__file__).parent / "fixtures"
INPUTS = [
    FIXTURES / "reflists" / "crew_report.md",
    FIXTURES / "reflists" / "manubot_bibliography.bib",
]

pytestmark = pytest.mark.usefixtures("prefect_server")


def audited(tmp_path: Path, name: str, kind: str) -> pl.DataFrame:
    flow = audit_job.with_options(task_runner=task_runner(kind, workers=2))
    params = JobParams(
        inputs=[str(p) for p in INPUTS],
        job_id=name,
        out_dir=str(tmp_path / "out"),
        db=str(tmp_path / f"{name}.duckdb"),  # separate libraries: no cross-job duplicates
        chunk_size=2,  # several chunks, so several workers take part
        styles=["apa"],
    )
    flow(params)
    table = pl.read_parquet(tmp_path / "out" / name / "citations.parquet")
    return table.drop("checked_at", "job_id").sort("citation_id")


def test_dask_in_process_workers_give_the_thread_runners_results(registry_env, tmp_path):
    assert isinstance(task_runner("dask", 2), DaskTaskRunner)
    threads = audited(tmp_path, "threads", "threads")
    dask = audited(tmp_path, "dask", "dask")
    assert threads.height > 5
    assert dask.equals(threads)


def test_dask_worker_processes_on_an_existing_scheduler(registry_env, tmp_path, monkeypatch):
    threads = audited(tmp_path, "threads", "threads")
    # Worker processes inherit this environment: the fake registry and the real Prefect server.
    with LocalCluster(**local_cluster_kwargs(2, processes=True)) as cluster:
        monkeypatch.setenv("CITEAUDIT_DASK_ADDRESS", cluster.scheduler_address)
        dask = audited(tmp_path, "dask-processes", "dask")
        with Client(cluster) as client:
            transitions = client.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.transition_counter
            )
            pids = client.run(lambda: __import__("os").getpid())
    assert dask.equals(threads)
    assert transitions > 0  # the chunks really went through the scheduler
    assert len(set(pids.values())) == 2


def test_process_workers_each_get_a_share_of_the_rate():
    assert "env" not in local_cluster_kwargs(4, processes=False)
    share = float(local_cluster_kwargs(4, processes=True)["env"]["CITEAUDIT_RATE_SAFETY"])
    assert share == pytest.approx(0.9 / 4)


def test_unknown_runner_is_refused():
    with pytest.raises(ValueError, match="known: threads, dask"):
        task_runner("ray", 2)


@pytest.mark.parametrize(
    ("env", "here"),
    [
        ({}, True),
        ({"CITEAUDIT_TASK_RUNNER": "dask"}, True),
        ({"CITEAUDIT_TASK_RUNNER": "dask", "CITEAUDIT_DASK_PROCESSES": "1"}, False),
        ({"CITEAUDIT_TASK_RUNNER": "dask", "CITEAUDIT_DASK_ADDRESS": "tcp://h:8786"}, False),
    ],
)
def test_bibliographies_render_ahead_only_where_the_render_task_runs(
    env: dict[str, str], here: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A render task in another process could not take runs started in this one.
    for name in ("CITEAUDIT_TASK_RUNNER", "CITEAUDIT_DASK_PROCESSES", "CITEAUDIT_DASK_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tasks_run_here() is here


def test_the_running_flows_runner_decides_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A flow given its runner in code (with_options) renders ahead by that runner: the
    # environment here names Dask worker processes, the flow runs on threads.
    monkeypatch.setenv("CITEAUDIT_TASK_RUNNER", "dask")
    monkeypatch.setenv("CITEAUDIT_DASK_PROCESSES", "1")

    @flow(task_runner=task_runner("threads", 1))
    def judged() -> bool:
        return tasks_run_here()

    assert judged() is True
    assert tasks_run_here() is False
    in_process = DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(2, processes=False))
    processes = DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(2, processes=True))
    assert tasks_run_here(in_process) is True
    assert tasks_run_here(processes) is False
    assert tasks_run_here(DaskTaskRunner(address="tcp://h:8786")) is False
    elsewhere = local_cluster_kwargs(2, processes=False)
    other_cluster = DaskTaskRunner(
        cluster_class="distributed.SpecCluster", cluster_kwargs=elsewhere
    )
    assert tasks_run_here(other_cluster) is False
