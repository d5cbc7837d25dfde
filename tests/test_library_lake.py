"""The library as a DuckLake with a PostgreSQL catalog (tasks/store/lake.py), against a real
PostgreSQL server the test starts: the declared tables without keys, re-runs replacing, readers
reading, a password never shown, and several writer processes at once leaving what running them
one after the other leaves."""

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

import polars as pl
import pytest

from flows.audit import run_pipeline
from models.audit import Status
from models.job import JobParams
from tasks.store.lake import LakeUnavailable
from tasks.store.library import Library, open_library
from tasks.store.names import Lake, lake_at, library_at, redact
from tasks.store.schema import SCHEMA_VERSION, columns_of, library_tables, table_names, version_of
from tests.postgres import Postgres, postgres_server
from tests.test_store import frames_for, make_refs

_names = count()


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def lake(postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new lake: its own catalog database, its data files in this test's folder."""
    monkeypatch.setenv("CITEAUDIT_LAKE_DATA", str(tmp_path / "lake-data") + "/")
    return postgres.new_database(f"lake{next(_names)}")


def test_a_lake_is_the_declared_library(lake: str) -> None:
    refs = make_refs(3)
    assert isinstance(library_at(lake), Lake)  # a postgresql:// name is a lake
    with open_library(library_at(lake)) as lib:
        assert version_of(lib.con) == SCHEMA_VERSION
        assert table_names(lib.con) == {*library_tables(), "validations"}
        assert {n: columns_of(lib.con, n) for n in library_tables()} == {
            t.name: t.sql_columns for t in library_tables().values()
        }
        lib.save_job("j", ["x"], frames_for("j", refs, Status.UNVERIFIED))
        created = lib.job("j")
        lib.save_job("j", ["x"], frames_for("j", refs[:2], Status.VERIFIED))  # a re-run
        lib.save_bulk_batch("b", 0, "f", frames_for("b", refs, Status.UNVERIFIED)["citations"])
        assert lib.bulk_batches_done("b", "f") == {0}
        lib.apply_recheck(
            lib.stale_citations(datetime.now(UTC), ["b"]).with_columns(status=pl.lit("verified")),
            pl.DataFrame(),
        )
    with open_library(library_at(lake), read_only=True) as reader:
        job = reader.job("j")
        assert created is not None and job is not None
        assert job["created_at"] == created["created_at"] < job["updated_at"]
        assert job["status_counts"] == {"verified": 2}
        assert reader.table("citations", "j").height == 2
        assert set(reader.table("citations", "b")["status"]) == {"verified"}
        verdicts = reader.con.execute("SELECT count(*) FROM validations").fetchone()
        assert verdicts == (5,)


def test_a_password_is_never_shown(postgres: Postgres) -> None:
    where = lake_at(f"postgresql://citeaudit:hunter2@127.0.0.1:{postgres.port}/no_such_db")
    assert where is not None and "hunter2" not in str(where)
    with pytest.raises(LakeUnavailable) as failed:
        Library(where)
    assert "no_such_db" in str(failed.value) and "hunter2" not in str(failed.value)


def test_connection_strings_lose_their_passwords() -> None:
    assert redact("host=db password=s3cret user=u") == "host=db password=*** user=u"
    assert redact("password = 'a b' dbname=x") == "password = *** dbname=x"
    assert redact("postgresql://u:s3cret@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert redact("postgresql://u@db/x") == "postgresql://u@db/x"


JOBS = {
    "first": ["10.1038/srep16696", "10.1016/j.eng.2020.01.007", "10.1145/2983323.2983779"],
    "second": ["10.1145/2983323.2983779", "10.1038/srep16696", "10.7554/eLife.01567"],
    "third": ["10.7554/eLife.01567", "10.1016/j.eng.2020.01.007", "10.1038/nature14539"],
}

WRITER = """
import sys
import flows.prefect_logging
from flows.audit import run_pipeline
from models.job import JobParams
job, source, out, db = sys.argv[1:]
run_pipeline(JobParams(inputs=[source], job_id=job, out_dir=out, db=db, offline=True, styles=[]))
"""


def params(tmp_path: Path, job: str, db: str) -> list[str]:
    source = tmp_path / f"{job}.txt"
    source.write_text("\n".join(JOBS[job]) + "\n")
    return [job, str(source), str(tmp_path / "out"), db]


def stored(db: str) -> tuple[set[frozenset[tuple[str, str]]], int, list[tuple[str, int]], int]:
    """Which citations share a work, how many works, each job's citation count, and how many
    dedupe records: what a library holds, its work ids aside."""
    with open_library(library_at(db), read_only=True) as lib:
        citations = lib.table("citations")
        works = lib.table("works")
        jobs = lib.jobs()
        records = lib.table("dedupe_records").height
    assert works["work_id"].n_unique() == works.height  # no work id names two works
    groups = citations.group_by("work_id").agg(pl.struct("job_id", "doi").alias("members"))
    shared = {frozenset((m["job_id"], m["doi"]) for m in ms) for ms in groups["members"]}
    return shared, works.height, sorted(jobs.select("job_id", "n_citations").rows()), records


def test_writers_at_once_leave_what_one_after_the_other_leaves(lake: str, tmp_path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, *params(tmp_path, job, lake)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in JOBS
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr
    one_by_one = str(tmp_path / "one-by-one.duckdb")
    for job in JOBS:
        job_id, source, out, _ = params(tmp_path, job, one_by_one)
        run_pipeline(
            JobParams(
                inputs=[source], job_id=job_id, out_dir=out, db=one_by_one, offline=True, styles=[]
            )
        )
    together = stored(lake)
    assert together == stored(one_by_one)
    assert together[1] == 5 and len(together[0]) == 5  # five DOIs, one work each
    listed = subprocess.run(
        [sys.executable, "-m", "flows.cli", "jobs", "--db", lake],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert listed.returncode == 0, listed.stderr
    assert all(f"│ {job} " in listed.stdout for job in JOBS)


def test_a_cli_audit_runs_its_prefect_flow_on_a_lake(lake: str, tmp_path, prefect_server) -> None:
    job, source, _, _ = params(tmp_path, "first", lake)
    cli = [sys.executable, "-m", "flows.cli"]
    audit = subprocess.run(
        [*cli, "audit", source, "--job", job, "--offline", "--db", lake, "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stderr
    assert (tmp_path / "out" / job / "report.html").is_file()
    assert stored(lake)[2] == [(job, len(JOBS[job]))]
    report = subprocess.run(
        [*cli, "report", job, "--db", lake, "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    assert f"{len(JOBS[job])} citations" in report.stdout
