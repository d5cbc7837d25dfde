"""The shared background Prefect server (flows/server.py) and a CLI that starts fast."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from flows import server

REPO = Path(__file__).resolve().parents[1]
FIVE = "10.1016/j.eng.2020.01.007\n10.1038/srep16696\nPMID: 29424689\n10.1145/2983323.2983779\n"


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user with no Prefect server configured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    (home / "user-prefect").mkdir(parents=True, exist_ok=True)
    return {**env, "CITEAUDIT_HOME": str(home), "PREFECT_HOME": str(home / "user-prefect"), **extra}


def citeaudit(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=400,
    )


def test_help_and_version_do_not_import_prefect() -> None:
    code = (
        "import sys\nfrom flows.cli.main import app\n"
        "for args in (['--help'], ['--version'], ['audit', '--help']):\n"
        "    try:\n        app(args)\n    except SystemExit as e:\n        assert e.code == 0\n"
        "assert 'prefect' not in sys.modules, 'prefect imported'\n"
        "assert 'polars' not in sys.modules, 'polars imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "citeaudit 0.1" in done.stdout


def test_profile_api_url_is_read_without_prefect(tmp_path, monkeypatch) -> None:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        'active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://prefect.example/api"\n'
    )
    monkeypatch.setenv("PREFECT_PROFILES_PATH", str(profiles))
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    assert server.profile_api_url() == "http://prefect.example/api"
    monkeypatch.setenv("PREFECT_PROFILE", "other")
    assert server.profile_api_url() is None


def test_dead_leases_are_dropped_and_idle_time_counts_from_last_use(tmp_path) -> None:
    held = server.lease(tmp_path)
    (tmp_path / "clients" / "999999999").touch()  # a client that died without letting go
    assert server.live_clients(tmp_path) == 1
    assert not (tmp_path / "clients" / "999999999").exists()
    server.release(held)
    assert server.live_clients(tmp_path) == 0
    assert server.idle_for(tmp_path, time.time() + 60) >= 59


def test_runs_share_one_background_server_until_stopped(tmp_path) -> None:
    home = tmp_path / "home"
    env = cli_env(home, CITEAUDIT_DB=str(tmp_path / "lib.duckdb"))
    (tmp_path / "five.txt").write_text(FIVE)
    args = ("audit", "five.txt", "--job", "five", "--out", "out", "--offline")
    first = citeaudit(*args, env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    started = json.loads((home / "prefect-server" / "server.json").read_text())
    second = citeaudit(*args, env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert json.loads((home / "prefect-server" / "server.json").read_text()) == started
    assert not list((home / "prefect-server" / "clients").iterdir())  # both let go

    status = citeaudit("server", "status", env=env, cwd=tmp_path)
    assert f"pid {started['pid']}" in status.stdout
    stopped = citeaudit("server", "stop", env=env, cwd=tmp_path)
    assert "stopped" in stopped.stdout
    assert not server.pid_alive(started["pid"])
    assert not server.healthy(f"http://127.0.0.1:{started['port']}/api", timeout=2)
    assert "no background server" in citeaudit("server", "status", env=env, cwd=tmp_path).stdout


def test_a_server_that_cannot_start_in_time_is_one_line_and_exit_3(tmp_path) -> None:
    env = cli_env(tmp_path / "home", CITEAUDIT_SERVER_STARTUP_TIMEOUT="0.5")
    (tmp_path / "five.txt").write_text(FIVE)
    done = citeaudit("audit", "five.txt", "--job", "x", "--offline", env=env, cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.strip().startswith("citeaudit: error: the background Prefect server")
    assert "PREFECT_API_URL" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    info = server.read_info(tmp_path / "home" / "prefect-server")
    deadline = time.monotonic() + 30
    while info and server.pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.2)  # the supervisor stops its half-started server and exits
    assert info is None or not server.pid_alive(info.pid)
