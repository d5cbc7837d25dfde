"""Crash safety: `kill -9` a 1,000-citation `citeaudit audit` mid-run, run it again, and the job
folder and library are exactly as after an uninterrupted run (real subprocess, real HTTP)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at
from tests.reliability_data import bundled_works, write_doi_list

N_CITATIONS = 1_000  # 5 chunks of 200 over 4 workers, 20 Crossref batches: killed mid-run
JOB = "crash-job"
# Written at the end; everything else is compared column by column.
TIMESTAMP_COLUMNS = ("checked_at",)
CLI = [sys.executable, "-c", "from flows.cli.main import main; main()"]


def cli_env(registry: FakeRegistry, state: Path) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ)
    env.update(point_env_at(registry, state))
    env["CITEAUDIT_MAILTO"] = "crash@example.org"
    # The session's Prefect test server: the CLI starts no ephemeral server of its own.
    env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
    return env


def audit(inputs: Path, out: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            *CLI,
            "audit",
            str(inputs),
            "--job",
            JOB,
            "--out",
            str(out),
            "--workers",
            "4",
            "--styles",
            "apa",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so the kill reaches every child
    )


def finish(process: subprocess.Popen[bytes]) -> None:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr.decode() + stdout.decode()


def job_rows(db: Path, table: str) -> pl.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.sql(f"SELECT * FROM {table} WHERE job_id = ?", params=[JOB]).pl()


def comparable(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop([c for c in TIMESTAMP_COLUMNS if c in frame.columns]).sort("citation_id")


def assert_no_debris(folder: Path) -> None:
    """Only finished files: no temp files, and every file there parses."""
    if not folder.exists():
        return
    names = [p.name for p in folder.iterdir()]
    assert not [n for n in names if n.startswith(".") or n.endswith(".tmp")], names
    for path in folder.glob("*.parquet"):
        pl.read_parquet(path)


@pytest.mark.usefixtures("prefect_harness")
def test_kill_9_mid_run_then_rerun_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    with FakeRegistry(latency=0.05) as registry:
        works = list(bundled_works())[:N_CITATIONS]  # real Crossref works, as the fake serves them
        # Same file name in both runs: citation ids hash the input's name.
        inputs = write_doi_list(tmp_path / "refs.txt", [w["DOI"] for w in works])

        reference_state, crashed_state = tmp_path / "reference", tmp_path / "crashed"
        finish(audit(inputs, reference_state / "out", cli_env(registry, reference_state)))

        registry.reset()
        env = cli_env(registry, crashed_state)
        victim = audit(inputs, crashed_state / "out", env)
        deadline = time.monotonic() + 120
        while registry.count(service="crossref") < 8:  # validation is under way
            assert victim.poll() is None, victim.communicate()[1].decode()
            assert time.monotonic() < deadline, "validation never started"
            time.sleep(0.01)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        assert victim.returncode == -signal.SIGKILL
        assert_no_debris(crashed_state / "out" / JOB)

        finish(audit(inputs, crashed_state / "out", env))

    for state in (reference_state, crashed_state):
        assert_no_debris(state / "out" / JOB)
    for name in ("citations", "input_errors", "claims"):
        expected = pl.read_parquet(reference_state / "out" / JOB / f"{name}.parquet")
        got = pl.read_parquet(crashed_state / "out" / JOB / f"{name}.parquet")
        assert got.schema == expected.schema
        if name == "citations":
            assert got.height == N_CITATIONS
            assert comparable(got).equals(comparable(expected))
        else:
            assert got.equals(expected)

    stored = job_rows(crashed_state / "citeaudit.duckdb", "citations")
    assert stored.height == N_CITATIONS
    assert stored["citation_id"].n_unique() == N_CITATIONS
    parquet = pl.read_parquet(crashed_state / "out" / JOB / "citations.parquet")
    assert comparable(stored.select(parquet.columns)).equals(comparable(parquet))
    assert job_rows(crashed_state / "citeaudit.duckdb", "jobs").height == 1
