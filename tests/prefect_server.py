"""A real `prefect server start` on a free loopback port, for tests that need what the in-process
test harness cannot give: Dask worker processes (which would otherwise start servers of their
own) and the scheduler service (which never runs in Prefect's local mode)."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flows.server import end_process

QUIET = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}
STARTUP_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_healthy(api_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"prefect server exited with {server.returncode}")
        try:
            if httpx.get(f"{api_url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"prefect server not healthy after {STARTUP_TIMEOUT_S:.0f} s")


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Start a server (scheduler loop: 1 s), point this process's Prefect settings and the
    environment (inherited by worker processes) at it; yield that environment; stop it after."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_HOME,
        PREFECT_LOGGING_TO_API_ENABLED,
        temporary_settings,
    )

    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = {
        **QUIET,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": api_url,
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1",
        # Logs stay local: a late log flush must not race the server's shutdown.
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
    }
    server_log = (Path(home) / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1"]
        + ["--port", str(port), "--no-ui"],
        env={**os.environ, **env},
        stdout=server_log,
        stderr=subprocess.STDOUT,
    )
    saved = {name: os.environ.get(name) for name in env}
    try:
        wait_until_healthy(api_url, server)
        os.environ.update(env)
        updates = {
            PREFECT_API_URL: api_url,
            PREFECT_HOME: home,
            PREFECT_LOGGING_TO_API_ENABLED: False,
        }
        with temporary_settings(updates=updates):
            yield env
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        end_process(server)
        server_log.close()


@pytest.fixture
def this_process_on_prefect_server(prefect_server: dict[str, str]) -> Iterator[None]:
    """This process's Prefect settings pointed at `prefect_server` for one test. The session's
    other server (conftest's prefect_harness), when set up after this one in the same worker,
    points them at itself while the environment the CLI's subprocesses inherit still names
    this one: a work pool made in-process was then missing where `prefect deploy` looked."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    updates = {
        PREFECT_API_URL: prefect_server["PREFECT_API_URL"],
        PREFECT_HOME: prefect_server["PREFECT_HOME"],
    }
    with temporary_settings(updates=updates):
        yield
