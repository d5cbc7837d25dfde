"""The DuckDB library and the job folder, on real files."""

from pathlib import Path

import duckdb
import polars as pl
import pytest

from models.audit import (
    Checked,
    Identifiers,
    InputError,
    Provenance,
    Reference,
    Status,
    ValidationResult,
)
from models.csl import CSLItem
from tasks import frames
from tasks.citation_ids import assign_citation_ids
from tasks.dedupe.canonical import WORKS_SCHEMA
from tasks.store.jobfolder import JobFolder
from tasks.store.library import Library
from tasks.store.names import UnsafeJobId, check_job_id


def make_refs(n: int, source: str = "refs.bib") -> list[Reference]:
    refs = [
        Reference(
            item=CSLItem(id=f"k{i}", title=f"Title {i}; DROP TABLE citations; --'"),
            provenance=Provenance(source_file=source, entry_key=f"k{i}"),
            ids=Identifiers(doi=f"10.1000/{i}"),
        )
        for i in range(n)
    ]
    return assign_citation_ids(refs)


def frames_for(job: str, refs: list[Reference], status: Status) -> dict[str, pl.DataFrame]:
    checked = [
        Checked(reference=r, result=ValidationResult(citation_id=r.citation_id, status=status))
        for r in refs
    ]
    errors = [InputError(source_file="bad.bib", entry_key="x", reason="unbalanced brace")]
    return {
        "citations": frames.citations_frame(job, checked),
        "input_errors": frames.input_errors_frame(job, errors),
        "claims": frames.claims_frame(job, []),
    }


def test_rerun_replaces_rows_never_duplicates(tmp_path):
    db = tmp_path / "lib.duckdb"
    refs = make_refs(5)
    with Library(db) as lib:
        lib.save_job("job-1", ["refs.bib"], frames_for("job-1", refs, Status.UNVERIFIED))
        lib.save_job("job-2", ["refs.bib"], frames_for("job-2", refs[:2], Status.VERIFIED))
        lib.save_job("job-1", ["refs.bib"], frames_for("job-1", refs, Status.VERIFIED))
    with Library(db) as lib:  # reopened from disk
        citations = lib.table("citations")
        assert citations.filter(pl.col("job_id") == "job-1").height == 5
        assert citations.filter(pl.col("job_id") == "job-2").height == 2
        assert set(citations["status"]) == {"verified"}
        assert lib.table("input_errors").height == 2
        jobs = lib.jobs()
        assert jobs["job_id"].to_list() == ["job-1", "job-2"]
        verdicts = lib.con.execute(
            "SELECT count(*) FROM validations WHERE job_id = ? AND status = 'verified'", ["job-1"]
        ).fetchone()
        assert verdicts == (5,)
        assert jobs.filter(pl.col("job_id") == "job-1")["n_citations"][0] == 5


def test_sql_metacharacters_are_data(tmp_path):
    refs = make_refs(1)
    with Library(tmp_path / "lib.duckdb") as lib:
        lib.save_job("j", ["x"], frames_for("j", refs, Status.VERIFIED))
        title = lib.table("citations", "j")["claimed_title"][0]
    assert title == "Title 0; DROP TABLE citations; --'"


def test_columns_a_frame_leaves_out_are_stored_empty(tmp_path):
    db = tmp_path / "lib.duckdb"
    refs = make_refs(2)
    with Library(db) as lib:
        lib.save_job("a", ["x"], frames_for("a", refs, Status.VERIFIED))
        frames = frames_for("b", refs, Status.VERIFIED)
        frames["citations"] = frames["citations"].with_columns(pl.lit("w1").alias("work_id"))
        lib.save_job("b", ["x"], frames)
        table = lib.table("citations")
    assert table.filter(pl.col("job_id") == "b")["work_id"].to_list() == ["w1", "w1"]
    assert table.filter(pl.col("job_id") == "a")["work_id"].null_count() == 2


def test_failed_save_leaves_previous_run_intact(tmp_path):
    db = tmp_path / "lib.duckdb"
    refs = make_refs(3)
    with Library(db) as lib:
        lib.save_job("j", ["x"], frames_for("j", refs, Status.VERIFIED))
        broken = frames_for("j", refs, Status.MISMATCH)
        broken["bogus_table"] = broken["claims"]
        with pytest.raises(ValueError):
            lib.save_job("j", ["x"], broken)
        assert set(lib.table("citations", "j")["status"]) == {"verified"}


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "..", "a..b", "", "job id", "x\x00"])
def test_unsafe_job_ids_rejected(bad, tmp_path):
    with pytest.raises(UnsafeJobId):
        check_job_id(bad)
    with pytest.raises(UnsafeJobId):
        JobFolder(tmp_path, bad)


def test_parquet_written_atomically_and_reads_back(tmp_path):
    refs = make_refs(4)
    frames = frames_for("j", refs, Status.NOT_FOUND)
    folder = JobFolder(tmp_path, "j")
    path = folder.write_parquet("citations.parquet", frames["citations"])
    assert pl.read_parquet(path).equals(frames["citations"])
    assert [p.name for p in folder.path.iterdir()] == ["citations.parquet"]  # no temp left
    with pytest.raises(ValueError):
        folder.write_text("../escape.txt", "x")


def test_a_library_connection_takes_the_threads_it_is_given(tmp_path: Path) -> None:
    # An import writes on one DuckDB thread (less memory held); an audit keeps DuckDB's default.
    with Library(tmp_path / "lib.duckdb", threads=1) as library:
        assert library.con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    with Library(tmp_path / "lib.duckdb") as library:
        default = library.con.execute("SELECT current_setting('threads')").fetchone()
    assert default == (duckdb.connect().execute("SELECT current_setting('threads')").fetchone())


def _works(*ids: str) -> pl.DataFrame:
    return pl.DataFrame({"work_id": list(ids)}).with_columns(
        pl.lit(None, dtype).alias(name) for name, dtype in WORKS_SCHEMA.items() if name != "work_id"
    )


@pytest.mark.parametrize("as_files", [False, True])
def test_rows_from_parquet_files_store_as_frames_do_and_retired_works_go(
    as_files: bool, tmp_path: Path
) -> None:
    """A bulk import hands its rows over as Parquet files the library's DuckDB reads itself
    (tasks/job/imported.save_import); they store what the same frames store, and the works
    they retire leave `works` with their links."""

    def given(name: str, frame: pl.DataFrame) -> pl.DataFrame | Path:
        if not as_files:
            return frame
        frame.write_parquet(tmp_path / f"{name}.parquet")
        return tmp_path / f"{name}.parquet"

    db = tmp_path / "lib.duckdb"
    refs = make_refs(3)
    links = pl.DataFrame({"work_id_a": ["w-a"], "work_id_b": ["w-b"], "kind": ["version"]})
    tables = frames_for("j", refs, Status.VERIFIED)
    with Library(db) as lib:
        lib.save_job(
            "j",
            ["x"],
            {name: given(name, frame) for name, frame in tables.items()},
            {
                "works": (given("works", _works("w-a", "w-b", "w-c")), ["work_id"]),
                "work_links": (given("links", links), list(links.columns)),
            },
        )
        assert lib.table("citations", "j")["citation_id"].sort().to_list() == sorted(
            r.citation_id for r in refs
        )
        assert lib.table("works")["work_id"].sort().to_list() == ["w-a", "w-b", "w-c"]
        assert lib.table("work_links").height == 1
        retired = pl.DataFrame({"work_id": ["w-b"]})
        lib.save_job("j", ["x"], tables, retired_works=given("retired", retired))
        assert lib.table("works")["work_id"].sort().to_list() == ["w-a", "w-c"]
        assert lib.table("work_links").height == 0
        lib.save_job("j", ["x"], tables, retired_works=["w-c"])
        assert lib.table("works")["work_id"].to_list() == ["w-a"]
