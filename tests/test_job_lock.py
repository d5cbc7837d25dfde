"""One run writes a job at a time: two real `citeaudit import` processes on one job of one
library, the second started while the first is checking its references, against the fake
registry over real HTTP (slowed until the second has ended)."""

import fcntl
import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl

from tests.fake_registry import FakeRegistry
from tests.test_flow_bulk import write_reference_list


def citeaudit(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def held_by_another(lock: Path) -> bool:
    """Whether some process holds `lock` (tried without waiting, let go at once)."""
    if not lock.exists():
        return False
    with lock.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def test_a_second_import_of_a_job_being_written_is_refused_and_the_first_stays_whole(
    registry_env: FakeRegistry, prefect_server: dict[str, str], tmp_path: Path, monkeypatch
) -> None:
    registry_env.rate_limits = False
    registry_env.latency = 2.0  # the first import waits on the registry till the second ends
    monkeypatch.setenv("CITEAUDIT_CACHE_ENABLED", "false")
    first_list, second_list = tmp_path / "first.json", tmp_path / "second.json"
    first = write_reference_list(registry_env, first_list)
    write_reference_list(registry_env, second_list, known=20)
    second_list.write_text(second_list.read_text().replace('"ref-', '"other-'))
    db = tmp_path / "lib.duckdb"
    common = ("--job", "shared", "--db", str(db), "--batch-size", "10", "--workers", "2")

    running = citeaudit("import", first_list.name, *common, cwd=tmp_path)
    deadline = time.monotonic() + 240
    while registry_env.count() == 0:  # the first import is checking its first batch
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, "the first import never asked the registry"
        time.sleep(0.05)
    assert held_by_another(tmp_path / "lib.duckdb.job-shared.lock")
    second = citeaudit("import", second_list.name, *common, cwd=tmp_path)
    out, err = second.communicate(timeout=240)
    ended_first = running.poll() is not None
    registry_env.latency = 0.0
    first_out, first_err = running.communicate(timeout=600)

    assert not ended_first, "the first import ended before the second did: no test"
    assert second.returncode == 2, (out, err)
    assert err.strip().splitlines() == [
        "citeaudit: error: job shared is being written by another run; try again when it ends"
    ]
    assert running.returncode == 0, first_err
    with duckdb.connect(str(db), read_only=True) as con:
        inputs = con.execute("SELECT inputs FROM jobs WHERE job_id = 'shared'").fetchall()
        cited = con.execute("SELECT count(*) FROM citations WHERE job_id = 'shared'").fetchone()
        orphans = con.execute(
            "SELECT count(*) FROM citations c WHERE c.work_id IS NOT NULL "
            "AND c.work_id NOT IN (SELECT work_id FROM works)"
        ).fetchone()
    assert [json.loads(row[0]) for row in inputs] == [[first_list.name]]
    assert cited == (first,)
    assert orphans == (0,)
    folder = pl.read_parquet(tmp_path / "out" / "shared" / "citations.parquet")
    assert folder.height == first
