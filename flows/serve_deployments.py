"""`citeaudit serve`: every deployment of deployments/prefect.yaml from one process, for a single
machine without a work pool or worker.

The YAML is the one source of truth: the same names, parameters, tags and schedules reach
`prefect deploy` (work pools) and `prefect.serve` (here)."""

import importlib
from importlib import resources
from pathlib import Path
from typing import Any, cast

import yaml
from prefect import Flow, serve
from prefect.cli.deploy._models import DeploymentConfig, PrefectYamlModel, RawScheduleConfig
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron, Schedule

from flows.server import configured_api_url

REPO_ROOT = Path(__file__).resolve().parents[1]


def deployments_file() -> Path:
    """The project file: a checkout's deployments/prefect.yaml, else the copy an installed
    citeaudit ships inside its `flows` package (pyproject.toml, force-include)."""
    checkout = REPO_ROOT / "deployments" / "prefect.yaml"
    if checkout.is_file():
        return checkout
    return Path(str(resources.files("flows").joinpath("deployments", "prefect.yaml")))


DEPLOYMENTS_FILE = deployments_file()


def load_project(path: Path = DEPLOYMENTS_FILE) -> PrefectYamlModel:
    """The project file, validated by the model `prefect deploy` itself uses (prefect is pinned,
    so this private module cannot move under us unnoticed)."""
    return PrefectYamlModel.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def flow_at(entrypoint: str) -> Flow[Any, Any]:
    """The flow object an entrypoint `flows/audit.py:audit_job` names (a repo-relative path),
    imported as a module so it is the same object the rest of citeaudit uses."""
    file, _, name = entrypoint.partition(":")
    module = importlib.import_module(".".join(Path(file).with_suffix("").parts))
    found = getattr(module, name, None)
    if not isinstance(found, Flow):
        raise ValueError(f"{entrypoint}: not a Prefect flow")
    return found


def schedule_of(config: Any) -> Schedule:
    """A YAML schedule entry as a Prefect schedule; the project only uses cron schedules."""
    raw = RawScheduleConfig.model_validate(config)
    if raw.cron is None:
        raise ValueError(f"only cron schedules are supported by serve, got {config!r}")
    return Cron(
        raw.cron,
        timezone=raw.timezone,
        active=raw.active if isinstance(raw.active, bool) else True,
        parameters=raw.parameters,
    )


def runner_deployment(config: DeploymentConfig) -> RunnerDeployment:
    if not config.name or not config.entrypoint:
        raise ValueError(f"a deployment needs a name and an entrypoint: {config!r}")
    tags = config.tags if isinstance(config.tags, list) else None
    deployment = flow_at(config.entrypoint).to_deployment(
        name=config.name,
        description=config.description,
        tags=[str(t) for t in tags] if tags else None,
        parameters=config.parameters,
        schedules=[schedule_of(s) for s in config.schedules or []],
    )
    return cast(RunnerDeployment, deployment)  # sync call: never the coroutine variant


def build_deployments(path: Path = DEPLOYMENTS_FILE) -> list[RunnerDeployment]:
    """One RunnerDeployment per deployment in the project file, ready for `prefect.serve`."""
    return [runner_deployment(config) for config in load_project(path).deployments]


def how_to_run(deployments: list[RunnerDeployment], api_url: str) -> str:
    """What `serve` prints as it starts. Prefect's own message points at a UI the background
    server does not serve (it runs without one) and at `prefect deployment run` without the API
    URL that finds these deployments from another shell."""
    names = [f"{d.flow_name}/{d.name}" for d in deployments]
    return (
        f"serving {', '.join(names)} against {api_url} until Ctrl-C\n"
        f"run one from another shell: PREFECT_API_URL={api_url} prefect deployment run "
        f"'{names[0]}'"
    )


def serve_all(path: Path = DEPLOYMENTS_FILE, limit: int | None = None) -> None:
    """Serve every deployment until interrupted; `limit` caps concurrent flow runs."""
    deployments = build_deployments(path)
    print(how_to_run(deployments, configured_api_url() or ""), flush=True)
    serve(*deployments, limit=limit, print_starting_message=False)
