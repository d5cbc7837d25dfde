"""Ctrl-C and SIGTERM stop a real `citeaudit audit` process within 5 s while its worker threads
wait on a registry that takes a minute to answer and on the rate limiter: one line, no
traceback, nothing half-written."""

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry

DOIS = [
    "10.1016/j.eng.2020.01.007",
    "10.1038/srep16696",
    "10.1145/2983323.2983779",
    "10.1371/journal.pone.0115069",
    "10.1093/nar/gkaa1100",
    "10.7554/eLife.01567",
]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_ends_a_waiting_run_within_5_s(tmp_path, prefect_server, signum) -> None:
    (tmp_path / "refs.txt").write_text("\n".join(DOIS) + "\n")
    with FakeRegistry(latency=60.0) as registry:
        env = {
            **os.environ,
            **point_env_at(registry, tmp_path),
            "CITEAUDIT_RATE_SAFETY": "0.02",  # the other workers sleep in the limiter
        }
        run = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "audit", "refs.txt", "--job", "j"]
            + ["--chunk-size", "1", "--out", "out"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 240
            while not registry.log and time.monotonic() < deadline:  # waiting on an answer
                assert run.poll() is None, run.communicate()
                time.sleep(0.2)
            assert registry.log, "the run never asked the registry"
            time.sleep(1.0)
            run.send_signal(signum)
            sent = time.monotonic()
            _, stderr = run.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if run.poll() is None:
                run.kill()
    assert took <= 5.0, f"took {took:.1f} s to stop"
    assert run.returncode == 128 + signum
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if line.strip()] == [
        line for line in stderr.splitlines() if line.startswith("citeaudit: stopped")
    ]
    assert not list(tmp_path.rglob("*.tmp"))
    assert not (tmp_path / "out" / "j" / "citations.parquet").exists()


def test_a_stop_signal_ends_a_run_reading_a_hostile_manuscript(tmp_path, prefect_server) -> None:
    """1 MB of `[@a` never closed: the pandoc pattern was quadratic over it, one C call that
    held the interpreter for minutes, so the watcher thread never ran and SIGTERM was ignored."""
    (tmp_path / "paper.md").write_text("Text [" + "@a " * 350_000, encoding="utf-8")
    (tmp_path / "refs.txt").write_text("\n".join(DOIS) + "\n")
    before = running_flow_runs(prefect_server)
    run = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "audit", "paper.md", "refs.txt", "--job", "j"]
        + ["--offline", "--out", "out"],
        cwd=tmp_path,
        env={**os.environ, "CITEAUDIT_DB": str(tmp_path / "lib.duckdb")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while running_flow_runs(prefect_server) == before and time.monotonic() < deadline:
            if run.poll() is not None:
                break  # done already (reading is quick now)
            time.sleep(0.2)
        time.sleep(1.0)  # the flow's first step reads the inputs
        run.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        run.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
    assert took <= 5.0, f"took {took:.1f} s to stop"
    assert not list(tmp_path.rglob("*.tmp"))


def running_flow_runs(prefect: dict[str, str]) -> int:
    """How many flow runs the test server has running."""
    running = {"flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}
    answer = httpx.post(f"{prefect['PREFECT_API_URL']}/flow_runs/count", json=running, timeout=10)
    return int(answer.json())


def test_a_stop_signal_in_the_runs_last_moments_says_so_and_exits_143(
    tmp_path, prefect_server
) -> None:
    """SIGTERM while the summary is printed (then the server let go, the interpreter winding
    down): the run still says it stopped, in one line, and exits 143, not 0 nor silently."""
    (tmp_path / "refs.txt").write_text("\n".join(DOIS) + "\n")
    run = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "audit", "refs.txt", "--job", "j", "--offline"]
        + ["--out", "out", "--styles", "apa"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("outputs:"):  # the summary's last line: the run's last step
                run.send_signal(signal.SIGTERM)
                break
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 128 + signal.SIGTERM, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("citeaudit: stopped (SIGTERM)"), stderr
