"""deployments/prefect.yaml and `citeaudit serve`: every entrypoint is a flow, every parameter is
the flow's, the weekly cron parses and is scheduled by a real Prefect server, `prefect deploy --all`
registers the YAML on a work pool as deployments/README.md says, and `serve` builds (and really
serves) the same deployments the YAML declares."""

import inspect
import os
import subprocess
import sys
import time
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import get_type_hints

import polars as pl
import pytest
from cronsim import CronSim
from prefect.cli.deploy._models import DeploymentConfig
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
from prefect.client.schemas.objects import FlowRun
from prefect.client.schemas.schedules import CronSchedule
from prefect.client.schemas.sorting import FlowRunSort
from prefect.deployments import run_deployment
from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import ObjectNotFound
from prefect.flows import load_flow_from_entrypoint
from pydantic import TypeAdapter

from flows.serve_deployments import REPO_ROOT, build_deployments, load_project

FLOWS = {"audit_job", "crew_report", "bulk_import", "scheduled_audit", "snapshot_update"}
REPORT = Path(__file__).parent / "fixtures" / "reflists" / "crew_report.md"


def deployments() -> list[DeploymentConfig]:
    return load_project().deployments


def entrypoint_flow(config: DeploymentConfig):
    assert config.entrypoint
    return load_flow_from_entrypoint(str(REPO_ROOT / config.entrypoint))


def required(fn) -> set[str]:
    return {
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.default is inspect.Parameter.empty
    }


def test_one_deployment_per_flow_and_every_entrypoint_is_a_flow():
    names = [entrypoint_flow(config).name for config in deployments()]
    assert sorted(names) == sorted(FLOWS)


@pytest.mark.parametrize("config", deployments(), ids=lambda c: c.entrypoint)
def test_parameters_belong_to_the_flow_and_required_ones_are_given(config):
    flow = entrypoint_flow(config)
    declared = set(config.parameters)
    assert declared <= set(inspect.signature(flow.fn).parameters)
    missing = required(flow.fn) - declared
    if config.schedules:  # nobody is there to supply them when a schedule fires
        assert not missing
        flow.validate_parameters(config.parameters)
    else:  # left to each run, and the description says so
        assert config.description
        assert all(name in config.description for name in missing)
    hints = get_type_hints(flow.fn)  # and the declared values have the flow's types
    for name, value in config.parameters.items():
        TypeAdapter(hints[name]).validate_python(value, strict=True)


def _fires(entrypoint: str, count: int) -> list[datetime]:
    """When the deployment of `entrypoint` runs next, from Thursday 2026-01-01 noon UTC."""
    (config,) = [c for c in deployments() if c.entrypoint == entrypoint]
    (raw,) = config.schedules or []
    schedule = CronSchedule(cron=raw.cron, timezone=raw.timezone)  # type: ignore[union-attr]
    fires = CronSim(schedule.cron, datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    return [next(fires) for _ in range(count)]


def test_the_scheduled_flows_are_the_weekly_audit_and_the_snapshots_update():
    scheduled = sorted(c.entrypoint or "" for c in deployments() if c.schedules)
    assert scheduled == ["flows/scheduled.py:scheduled_audit", "flows/snapshots.py:snapshot_update"]


def test_the_scheduled_audit_runs_weekly_on_monday_at_three_utc():
    assert _fires("flows/scheduled.py:scheduled_audit", 2) == [
        datetime(2026, 1, 5, 3, 0, tzinfo=UTC),
        datetime(2026, 1, 12, 3, 0, tzinfo=UTC),
    ]


def test_the_snapshots_update_runs_daily_at_two_utc_before_the_weekly_audit():
    assert _fires("flows/snapshots.py:snapshot_update", 2) == [
        datetime(2026, 1, 2, 2, 0, tzinfo=UTC),
        datetime(2026, 1, 3, 2, 0, tzinfo=UTC),
    ]


def test_serve_builds_the_deployments_the_yaml_declares():
    built: dict[tuple[str | None, str | None], RunnerDeployment] = {
        (d.flow_name, d.name): d for d in build_deployments()
    }
    for config in deployments():
        flow = entrypoint_flow(config)
        deployment = built.pop((flow.name, config.name))
        assert deployment.entrypoint
        file, _, name = deployment.entrypoint.partition(":")
        assert f"{Path(file).resolve().relative_to(REPO_ROOT)}:{name}" == config.entrypoint
        assert deployment.parameters == config.parameters
        assert deployment.description == config.description
        assert deployment.tags == config.tags
        schedules = [s.schedule for s in deployment.schedules or []]
        assert all(isinstance(s, CronSchedule) for s in schedules)
        crons = [(s.cron, s.timezone) for s in schedules if isinstance(s, CronSchedule)]
        assert crons == [(s.cron, s.timezone) for s in config.schedules or []]  # type: ignore[union-attr]
    assert not built


@pytest.mark.usefixtures("this_process_on_prefect_server")
def test_a_real_server_schedules_the_weekly_audit_for_next_monday(prefect_server):
    (weekly,) = [d for d in build_deployments() if d.flow_name == "scheduled_audit"]
    deployment_id = weekly.apply()
    expected = next(CronSim("0 3 * * 1", datetime.now(UTC)))
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 60
        runs: list[FlowRun] = []
        while not runs and time.monotonic() < deadline:
            time.sleep(0.5)
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
                sort=FlowRunSort.EXPECTED_START_TIME_ASC,
                limit=10,
            )
    starts = sorted(r.expected_start_time for r in runs if r.expected_start_time)
    assert starts and starts[0] == expected
    assert all(s.weekday() == 0 and (s.hour, s.minute) == (3, 0) for s in starts)


def prefect_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The `prefect` command of this environment, run from the repository root as the README
    does; wide enough that no table cell is cut."""
    command = [sys.executable, "-m", "prefect", "--no-prompt", *args]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.usefixtures("this_process_on_prefect_server")
def test_prefect_deploy_all_registers_every_deployment_on_the_work_pool(prefect_server):
    """deployments/README.md's commands against a real server. Both send `limit: null`, which a
    FastAPI newer than Prefect supports rejects with a 422 (see pyproject.toml)."""
    (pool,) = {c.work_pool.name for c in deployments() if c.work_pool}
    names = {f"{entrypoint_flow(c).name}/{c.name}" for c in deployments()}
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=pool, type="process"), overwrite=True)
        try:
            deploy = prefect_cli("deploy", "--prefect-file", "deployments/prefect.yaml", "--all")
            assert deploy.returncode == 0, deploy.stdout + deploy.stderr
            pools = {client.read_deployment_by_name(name).work_pool_name for name in names}
            assert pools == {pool}
            listed = prefect_cli("deployment", "ls")
            assert listed.returncode == 0, listed.stdout + listed.stderr
            assert all(name in listed.stdout for name in names)
        finally:  # `citeaudit serve` registers the same names: it must not find these
            for name in names:
                with suppress(ObjectNotFound):
                    client.delete_deployment(client.read_deployment_by_name(name).id)


def wait_for_deployment(name: str, server: subprocess.Popen[bytes]) -> None:
    """`serve` registers its deployments as it starts."""
    deadline = time.monotonic() + 120
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline and server.poll() is None:
            try:
                client.read_deployment_by_name(name)
                return
            except ObjectNotFound:
                time.sleep(0.5)
    raise AssertionError(f"citeaudit serve did not register {name}")


@pytest.mark.usefixtures("this_process_on_prefect_server")
def test_citeaudit_serve_runs_a_deployment(prefect_server, registry_env, tmp_path):
    env = {**os.environ, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    command = [str(Path(sys.executable).parent / "citeaudit"), "serve"]
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_deployment("audit_job/on-demand", server)
        run = run_deployment(
            "audit_job/on-demand",
            parameters={
                "params": {
                    "inputs": [str(REPORT)],
                    "job_id": "served",
                    "out_dir": str(tmp_path / "out"),
                    "styles": ["apa"],
                }
            },
            timeout=180,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert isinstance(run, FlowRun)
    printed = (tmp_path / "serve.log").read_text()
    assert run.state and run.state.is_completed(), printed
    # what it tells the user works: the API URL with the run command, no link to a UI
    assert f"PREFECT_API_URL={os.environ['PREFECT_API_URL']} prefect deployment run" in printed
    assert "/deployments" not in printed
    table = pl.read_parquet(tmp_path / "out" / "served" / "citations.parquet")
    assert table.height > 0 and "verified" in set(table["status"])
