"""One library, many writers: the lock, read-only readers, declared schema and migration,
re-checks of citations still there, job folders replaced as a whole, content-keyed resume, and
two real `citeaudit audit` processes writing one library at once."""

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from models.audit import Provenance, Reference, Status
from models.csl import CSLItem
from tasks.citation_ids import assign_citation_ids
from tasks.identifiers import normalize_doi
from tasks.store.jobfolder import JobFolder
from tasks.store.library import Library
from tasks.store.lock import LibraryLocked
from tasks.store.names import UnsafeJobId, check_job_id
from tasks.store.schema import (
    SCHEMA_VERSION,
    UndeclaredColumns,
    columns_of,
    library_tables,
    table_names,
    version_of,
)
from tests.test_store import frames_for, make_refs

VERSION_2 = Path(__file__).parent / "fixtures" / "library-v2"

HOLD = """
import sys, time
from tasks.store.lock import library_lock
from pathlib import Path
with library_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold_library(db: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_writer_waits_for_the_library_then_writes(tmp_path, capsys, monkeypatch) -> None:
    db = tmp_path / "lib.duckdb"
    monkeypatch.setattr("tasks.store.lock.SAY_EVERY_S", 0.5)
    holder = hold_library(db, 2.0)
    start = time.monotonic()
    with Library(db) as lib:
        lib.save_job("j", ["x"], frames_for("j", make_refs(2), Status.VERIFIED))
    assert time.monotonic() - start >= 1.0
    assert "waiting for the library" in capsys.readouterr().err
    holder.wait()


CHURN = """
import sys, time
from pathlib import Path
from tasks.store.lock import library_lock
db, count = Path(sys.argv[1]), Path(sys.argv[2])
for turn in range(1, 41):
    with library_lock(db):
        count.write_text(str(turn))
        if turn == 1:
            print("held", flush=True)
        time.sleep(0.05)
    # a server between two calls: back for the lock at once
"""


def test_a_waiting_writer_is_served_before_a_busy_one_comes_back(tmp_path) -> None:
    """A writer queues for the lock: it is not starved by another process taking the lock
    again and again (a waiter that polled with backoff got it only when the other stopped)."""
    db, count = tmp_path / "lib.duckdb", tmp_path / "turns"
    busy = subprocess.Popen(
        [sys.executable, "-c", CHURN, str(db), str(count)], stdout=subprocess.PIPE, text=True
    )
    assert busy.stdout is not None and busy.stdout.readline().strip() == "held"
    from tasks.store.lock import library_lock

    with library_lock(db):
        turns_before_us = int(count.read_text())
    busy.wait()
    assert turns_before_us <= 5, turns_before_us  # served within a few turns, not after all 40


def test_a_writer_gives_up_after_the_lock_timeout(tmp_path, monkeypatch) -> None:
    db = tmp_path / "lib.duckdb"
    monkeypatch.setenv("CITEAUDIT_LOCK_TIMEOUT", "0.5")
    holder = hold_library(db, 10.0)
    try:
        with pytest.raises(LibraryLocked, match="run the same command again"):
            Library(db)
    finally:
        holder.kill()
        holder.wait()


def test_readers_share_the_library_and_cannot_change_it(tmp_path) -> None:
    db = tmp_path / "lib.duckdb"
    with Library(db) as lib:
        lib.save_job("j", ["x"], frames_for("j", make_refs(2), Status.VERIFIED))
    with Library(db, read_only=True) as one, Library(db, read_only=True) as two:
        assert one.jobs().height == two.jobs().height == 1
        with pytest.raises(duckdb.Error):
            one.con.execute("DELETE FROM jobs")


def test_an_unversioned_library_is_migrated(tmp_path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))  # what the store made before schema versions
    con.execute(
        "CREATE TABLE jobs (job_id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, updated_at "
        "TIMESTAMPTZ, inputs VARCHAR, n_citations BIGINT, n_input_errors BIGINT, "
        "status_counts VARCHAR)"
    )
    con.close()
    with Library(db) as lib:
        assert version_of(lib.con) == SCHEMA_VERSION
        assert lib.bulk_batches_done("j", "f") == set()


def shapes(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    return {name: columns_of(con, name) for name in library_tables()}


def test_a_new_library_has_exactly_the_declared_tables(tmp_path) -> None:
    with Library(tmp_path / "lib.duckdb") as lib:
        assert table_names(lib.con) == {*library_tables(), "validations"}
        assert shapes(lib.con) == {t.name: t.sql_columns for t in library_tables().values()}
        assert version_of(lib.con) == SCHEMA_VERSION


def version_2_library(db: Path) -> dict[str, pl.DataFrame]:
    """The committed version-2 library imported into `db`; its tables' rows by name."""
    with duckdb.connect(str(db)) as con:
        con.execute(f"IMPORT DATABASE '{VERSION_2}'")
        assert version_of(con) == 2
        return {name: con.sql(f'SELECT * FROM "{name}"').pl() for name in table_names(con)}


def same_rows(before: pl.DataFrame, after: pl.DataFrame) -> bool:
    key = [c for c in before.columns if not isinstance(before.schema[c], pl.List | pl.Struct)]
    return after.select(before.columns).sort(key).equals(before.sort(key))


def test_a_version_2_library_migrates_keeping_every_row(tmp_path) -> None:
    db = tmp_path / "old.duckdb"
    before = version_2_library(db)
    emptied = {"citations": "confidence", "works": "type"}
    with duckdb.connect(str(db)) as con:  # tables grown column by column from frames
        con.execute("ALTER TABLE citations DROP COLUMN confidence")
        con.execute("ALTER TABLE citations ADD COLUMN confidence DOUBLE")  # now the last
        con.execute("ALTER TABLE works DROP COLUMN type")
    with Library(db) as lib:
        assert version_of(lib.con) == SCHEMA_VERSION
        assert shapes(lib.con) == {t.name: t.sql_columns for t in library_tables().values()}
        after = {name: lib.table(name) for name in before}
    assert all(frame.height for frame in before.values())  # the fixture fills every table
    for name, rows in before.items():
        if name != "library_meta":  # its schema_version moved on
            assert same_rows(rows.drop(emptied.get(name, [])), after[name]), name
    for name, column in emptied.items():
        assert after[name][column].null_count() == after[name].height


def test_older_input_errors_get_their_kind_from_their_reason(tmp_path) -> None:
    db = tmp_path / "old.duckdb"
    version_2_library(db)
    reasons = {
        "cites 'gone2021', which no reference file given has": "missing",
        "cites [9], which the reference list does not have": "missing",
        "never cited in paper.tex: not audited": "uncited",
        "warning: not UTF-8: read as cp1252": "warning",
    }
    with duckdb.connect(str(db)) as con:
        for reason in reasons:
            con.execute("INSERT INTO input_errors VALUES ('first', 'p.tex', NULL, 1, ?)", [reason])
    with Library(db) as lib:
        kinds = dict(lib.table("input_errors").select("reason", "kind").iter_rows())
    assert {r: kinds[r] for r in reasons} == reasons
    assert kinds[next(r for r in kinds if r.startswith("malformed entry"))] == "malformed"


def test_a_library_with_an_undeclared_column_is_left_as_it_was(tmp_path) -> None:
    db = tmp_path / "old.duckdb"
    version_2_library(db)
    with duckdb.connect(str(db)) as con:
        con.execute("ALTER TABLE works ADD COLUMN legacy VARCHAR")
    with pytest.raises(UndeclaredColumns, match="works has no column legacy"):
        Library(db)
    with duckdb.connect(str(db)) as con:
        assert version_of(con) == 2


def test_a_write_with_an_undeclared_column_fails_and_changes_nothing(tmp_path) -> None:
    db = tmp_path / "lib.duckdb"
    refs = make_refs(2)
    with Library(db) as lib:
        lib.save_job("j", ["x"], frames_for("j", refs, Status.VERIFIED))
        frames = frames_for("j", refs, Status.MISMATCH)
        frames["citations"] = frames["citations"].with_columns(pl.lit(1).alias("surprise"))
        with pytest.raises(UndeclaredColumns, match="citations has no column surprise"):
            lib.save_job("j", ["x"], frames)
        assert set(lib.table("citations", "j")["status"]) == {"verified"}
        assert "surprise" not in lib.table("citations").columns


def test_a_recheck_never_brings_back_a_citation_the_job_dropped(tmp_path) -> None:
    db = tmp_path / "lib.duckdb"
    refs = make_refs(4)
    with Library(db) as lib:
        lib.save_job("j", ["x"], frames_for("j", refs, Status.UNVERIFIED))
        snapshot = lib.stale_citations(datetime.now(UTC))
        lib.save_job("j", ["x"], frames_for("j", refs[:1], Status.UNVERIFIED))  # a re-run
        rechecked = snapshot.with_columns(pl.lit("verified").alias("status"))
        lib.apply_recheck(rechecked, pl.DataFrame())
        stored = lib.table("citations", "j")
        job = lib.job("j")
    assert stored["citation_id"].to_list() == [refs[0].citation_id]
    assert job is not None and job["status_counts"] == {"verified": 1}


def test_job_ids_are_matched_whole() -> None:
    with pytest.raises(UnsafeJobId):
        check_job_id("job\n")
    assert check_job_id("job-1.a_b") == "job-1.a_b"


def test_a_job_folder_is_replaced_as_a_whole(tmp_path) -> None:
    folder = JobFolder(tmp_path, "j")
    folder.write_text("bibliography.mla.txt", "old style")
    folder.write_text("report.md", "old")
    (folder.path / ".report.md.abc.tmp").write_text("left by a kill -9")
    (tmp_path / ".j.new-killed").mkdir()  # a staging folder a killed run left
    with pytest.raises(RuntimeError), folder.replacing() as staging:
        staging.write_text("report.md", "half")
        raise RuntimeError("render failed")
    assert (folder.path / "report.md").read_text() == "old"  # untouched by the failed run
    with folder.replacing() as staging:
        staging.write_text("report.md", "new")
    assert sorted(p.name for p in folder.path.iterdir()) == ["report.md"]
    assert (folder.path / "report.md").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j"]


def test_a_stale_tmp_is_swept_by_the_next_write(tmp_path) -> None:
    folder = JobFolder(tmp_path, "j")
    folder.path.mkdir()
    stale = folder.path / ".changes.parquet.x1.tmp"
    stale.write_text("killed")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    folder.write_text("changes.parquet", "x")
    assert sorted(p.name for p in folder.path.iterdir()) == ["changes.parquet"]


def test_bulk_citation_ids_follow_content_not_file_names() -> None:
    def ref(source: str) -> Reference:
        item = CSLItem(id="k1", title="T")
        return Reference(item=item, provenance=Provenance(source_file=source, entry_key="k1"))

    one = assign_citation_ids([ref("list.bib")], {"list.bib": "ab12"})
    other = assign_citation_ids([ref("copy-of-list.bib")], {"copy-of-list.bib": "ab12"})
    assert one[0].citation_id == other[0].citation_id


# -- two real audits at once

FIRST = ["10.1038/srep16696", "10.1016/j.eng.2020.01.007", "10.1145/2983323.2983779"]
SECOND = ["10.1145/2983323.2983779", "10.1038/srep16696", "10.7554/eLife.01567"]


def audit_process(tmp_path: Path, job: str, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "audit", f"{job}.txt", "--job", job, "--offline"]
        + ["--db", str(db), "--out", "out"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def partition(db: Path) -> tuple[set[frozenset[tuple[str, str]]], int]:
    """Which citations share a work (ids aside), and how many works the library holds."""
    with Library(db, read_only=True) as lib:
        citations = lib.table("citations")
        works = lib.table("works").height
    groups = citations.group_by("work_id").agg(pl.struct("job_id", "doi").alias("members"))
    return {
        frozenset((m["job_id"], m["doi"]) for m in members) for members in groups["members"]
    }, works


def test_two_audits_at_once_leave_what_one_after_the_other_leaves(tmp_path, prefect_server) -> None:
    (tmp_path / "first.txt").write_text("\n".join(FIRST) + "\n")
    (tmp_path / "second.txt").write_text("\n".join(SECOND) + "\n")
    together = tmp_path / "together.duckdb"
    runs = [audit_process(tmp_path, job, together) for job in ("first", "second")]
    for run in runs:
        _, stderr = run.communicate(timeout=400)
        assert run.returncode == 0, stderr
        assert "Traceback" not in stderr
    # One after the other, offline, each DOI is one work holding every citation of it.
    expected = {
        frozenset(
            (job, normalize_doi(doi))
            for job, dois in (("first", FIRST), ("second", SECOND))
            if doi in dois
        )
        for doi in {*FIRST, *SECOND}
    }
    assert partition(together)[0] == expected
    groups, works = partition(together)
    assert works == 4 and len(groups) == 4
    with Library(together, read_only=True) as lib:
        assert sorted(lib.jobs()["job_id"]) == ["first", "second"]
        dois = lib.table("works").select("work_id").to_series()
        assert dois.n_unique() == dois.len()  # no work id names two works


def test_a_job_the_locked_library_cannot_take_keeps_its_outputs_marked_not_stored(
    tmp_path, prefect_server
) -> None:
    (tmp_path / "first.txt").write_text("\n".join(FIRST) + "\n")
    db = tmp_path / "lib.duckdb"
    folder = tmp_path / "out" / "first"
    with Library(db) as lib:  # a library with another job in it
        lib.save_job("other", ["x"], frames_for("other", make_refs(2), Status.VERIFIED))
    holder = hold_library(db, 600.0)
    try:
        env = {**os.environ, "CITEAUDIT_LOCK_TIMEOUT": "1"}
        run = subprocess.run(
            [sys.executable, "-m", "flows.cli", "audit", "first.txt", "--job", "first"]
            + ["--offline", "--db", str(db), "--out", "out"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 3, run.stderr
    said = [line for line in run.stderr.splitlines() if line.startswith("citeaudit: error")]
    assert len(said) == 1 and "marked not stored" in said[0] and "Traceback" not in run.stderr
    assert "JobNotStored" not in said[0]  # a sentence for the user, not our class name
    # The checked citations are kept, and every output says they are not in the library.
    assert pl.read_parquet(folder / "citations.parquet").height == len(FIRST)
    assert "run the same command again" in (folder / "NOT_STORED.txt").read_text()
    assert "Not stored in the library" in (folder / "report.md").read_text()
    assert "Not stored in the library" in (folder / "metrics.json").read_text()
    with Library(db, read_only=True) as lib:
        assert lib.job("first") is None
    report = subprocess.run(
        [sys.executable, "-m", "flows.cli", "report", "first", "--db", str(db), "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 2 and "Not stored in the library" in report.stderr

    # Once the library is free, the same command stores the job and replaces the folder whole.
    rerun = audit_process(tmp_path, "first", db)
    _, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    assert not (folder / "NOT_STORED.txt").exists()
    assert "Not stored" not in (folder / "report.md").read_text()
    with Library(db, read_only=True) as lib:
        assert lib.job("first") is not None


def test_the_readmes_gitignore_line_covers_what_a_write_leaves_beside_the_library(tmp_path) -> None:
    db = tmp_path / "citeaudit.duckdb"
    with Library(db) as lib:
        lib.jobs()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert {"citeaudit.duckdb.lock", "citeaudit.duckdb.lock.turn"} <= set(left), left
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert "`citeaudit.duckdb*` in `.gitignore`" in readme
    assert all(name.startswith("citeaudit.duckdb") for name in left), left
