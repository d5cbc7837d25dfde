"""Dedupe across the library on a real DuckDB file: jobs share works, and the whole library can
be deduped again."""

from pathlib import Path

import polars as pl
from click.testing import Result
from typer.testing import CliRunner

from flows.cli.main import app
from models.audit import Checked, Status, ValidationResult
from tasks import frames
from tasks.citation_ids import assign_citation_ids
from tasks.dedupe.job import dedupe_job
from tasks.dedupe.rebuild import rededupe
from tasks.read.inputs import read_inputs
from tasks.store.library import Library

REFLISTS = Path(__file__).parent / "fixtures" / "reflists"


def save(library: Library, job_id: str, path: Path) -> pl.DataFrame:
    refs = assign_citation_ids(read_inputs([path]).references)
    checked = [
        Checked(
            reference=r,
            result=ValidationResult(citation_id=r.citation_id, status=Status.UNVERIFIED),
        )
        for r in refs
    ]
    found = dedupe_job(job_id, checked, library.dedupe_library(exclude_job=job_id))
    citations = frames.citations_frame(job_id, checked).join(found.columns, on="citation_id")
    library.save_job(
        job_id,
        [str(path)],
        {"citations": citations, "dedupe_records": found.records},
        {
            "works": (found.works, ["work_id"]),
            "work_links": (found.links, ["work_id_a", "work_id_b", "kind"]),
        },
    )
    return citations


def test_two_exports_of_one_list_share_works_and_survive_a_rebuild(tmp_path):
    db = tmp_path / "lib.duckdb"
    with Library(db) as library:
        bib = save(library, "bib", REFLISTS / "manubot_bibliography.bib")
        ris = save(library, "ris", REFLISTS / "manubot_bibliography.ris")
        assert bib.height == ris.height > 0
        assert set(ris["work_id"]) == set(bib["work_id"])
        assert ris["duplicate_of"].str.starts_with("bib/").all()
        works_before = library.table("works").height
        assert works_before == bib["work_id"].n_unique()

        rebuilt = rededupe(library.table("dedupe_records"))
        library.replace_dedupe(rebuilt.records, rebuilt.assignments, rebuilt.works, rebuilt.links)
        after = library.table("citations").sort(["job_id", "citation_id"])
        assert after.height == bib.height + ris.height  # no row dropped
        assert library.table("works").height == works_before
        per_job = after.group_by("job_id").agg(pl.col("work_id").n_unique())
        assert set(per_job["work_id"]) == {works_before}
        assert library.table("dedupe_records").height == after.height


def dedupe_command(db: Path) -> Result:
    return CliRunner().invoke(app, ["dedupe", "--db", str(db)])


def rebuild(db: Path) -> str:
    result = dedupe_command(db)
    assert result.exit_code == 0, result.output
    return result.output


def two_exports(db: Path) -> int:
    """A library holding one list exported twice (BibTeX and RIS) as two jobs; its work count."""
    with Library(db) as library:
        save(library, "bib", REFLISTS / "manubot_bibliography.bib")
        save(library, "ris", REFLISTS / "manubot_bibliography.ris")
        return library.table("works").height


def test_cli_dedupe_rebuilds_the_library(tmp_path):
    db = tmp_path / "lib.duckdb"
    works = two_exports(db)
    assert f"works (was {works})" in rebuild(db)
    empty = dedupe_command(tmp_path / "empty.duckdb")
    assert empty.exit_code == 2


def test_cli_dedupe_computes_match_keys_an_older_library_lacks(tmp_path):
    db = tmp_path / "lib.duckdb"
    with Library(db) as library:
        save(library, "bib", REFLISTS / "manubot_bibliography.bib")
        save(library, "ris", REFLISTS / "manubot_bibliography.ris")
        keys = library.table("dedupe_records").sort("citation_id")
        works = library.table("citations").sort("job_id", "citation_id")["work_id"]
        # A library an older citeaudit stored: its records lack the keys compared since.
        for column in ("first_author_words", "source"):
            library.con.execute(f"ALTER TABLE dedupe_records DROP COLUMN {column}")
        library.con.execute("UPDATE library_meta SET value = '2' WHERE key = 'schema_version'")
    rebuild(db)
    with Library(db) as library:
        rebuilt = library.table("dedupe_records").sort("citation_id")
        assert rebuilt["first_author_words"].to_list() == keys["first_author_words"].to_list()
        assert rebuilt["source"].to_list() == keys["source"].to_list()
        assert rebuilt["relations"].to_list() == keys["relations"].to_list()
        after = library.table("citations").sort("job_id", "citation_id")["work_id"]
        assert after.to_list() == works.to_list()


SILVER = (
    "@article{{silver, title = {{Mastering the game of Go with deep neural networks and tree"
    " search}}, author = {{Silver, David and Huang, Aja}}, journal = {{Nature}}, year = {{2016}}"
    "{doi}}}\n"
)


def test_cli_dedupe_keeps_the_work_ids_it_finds(tmp_path):
    # Cited first without a DOI, then with one: the work is named after the first citation, and
    # re-deduping (which would found it on the DOI) keeps that name.
    listed_twice = SILVER.format(doi="") + SILVER.format(doi="").replace("{silver,", "{again,")
    (tmp_path / "bare.bib").write_text(listed_twice)
    (tmp_path / "doi.bib").write_text(SILVER.format(doi=", doi = {10.1038/nature16961}"))
    db = tmp_path / "lib.duckdb"
    with Library(db) as library:
        bare = save(library, "bare", tmp_path / "bare.bib")
    rebuild(db)
    with Library(db) as library:
        # A duplicate within one job is named by its citation id, as the job's own run names it.
        rebuilt = library.table("citations")["duplicate_of"].drop_nulls()
        assert rebuilt.to_list() == bare["duplicate_of"].drop_nulls().to_list()
        assert rebuilt.is_in(bare["citation_id"].implode()).all()
        with_doi = save(library, "doi", tmp_path / "doi.bib")
    assert set(bare["work_id"]) == set(with_doi["work_id"])
    rebuild(db)
    with Library(db) as library:
        assert set(library.table("citations")["work_id"]) == set(bare["work_id"])
        assert library.table("works")["work_id"].to_list() == bare["work_id"].unique().to_list()


def test_cli_dedupe_gives_works_to_citations_stored_before_dedupe(tmp_path):
    db = tmp_path / "lib.duckdb"
    works = two_exports(db)
    with Library(db) as library:
        # A library from before dedupe: citations only, no dedupe records, works or work ids.
        for table in ("dedupe_records", "works", "work_links"):
            library.con.execute(f"DROP TABLE {table}")
        library.con.execute("UPDATE citations SET work_id = NULL")
        library.con.execute("UPDATE library_meta SET value = '1' WHERE key = 'schema_version'")
    rebuild(db)
    with Library(db) as library:
        citations = library.table("citations")
        assert citations["work_id"].null_count() == 0
        assert library.table("dedupe_records").height == citations.height
        assert library.table("works").height == works
