"""scheduled_audit end to end: a library built by audit_job against the fake registry, the
registry's records changed afterwards, rows aged in the DuckDB file, the audit run, and
changes.parquet, the report and the library read back."""

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import duckdb
import polars as pl
import pytest

from flows.audit import audit_job
from flows.scheduled import scheduled_audit
from models.job import JobParams, RecheckSummary
from tests.fake_registry import FakeRegistry

pytestmark = pytest.mark.usefixtures("prefect_harness")

LATER_DOI = "10.9999/citeaudit.registered-later"


def dated_works(registry: FakeRegistry, n: int) -> list[dict[str, Any]]:
    """Real Crossref records with a title, authors and a year."""
    works = []
    for doi in sorted(registry.data.crossref):
        work = registry.data.crossref[doi]
        year = work.get("issued", {}).get("date-parts", [[None]])[0][0]
        if (
            isinstance(year, int)
            and work.get("title")
            and work.get("author")
            and "update-to" not in work
        ):
            works.append(work)
        if len(works) == n:
            return works
    raise AssertionError("not enough works")


def csl_item(key: str, work: dict[str, Any], doi: str | None = None) -> dict[str, Any]:
    return {
        "id": key,
        "type": "article-journal",
        "DOI": doi or work["DOI"],
        "title": work["title"][0],
        "author": [
            {"family": a["family"], "given": a.get("given", "")}
            for a in work["author"]
            if "family" in a
        ],
        "issued": work["issued"],
        "container-title": (work.get("container-title") or [None])[0],
    }


class Library:
    """The test's view of the situation: which works play which part."""

    def __init__(self, registry: FakeRegistry, folder: Path) -> None:
        self.retracted, self.corrected, self.fresh, self.unchanged, self.later = dated_works(
            registry, 5
        )
        self.folder = folder
        items = [
            csl_item("to-be-retracted", self.retracted),
            csl_item("record-corrected", self.corrected),
            csl_item("checked-recently", self.fresh),
            csl_item("unchanged", self.unchanged),
            csl_item("registered-later", self.later, doi=LATER_DOI),
        ]
        (folder / "list.json").write_text(json.dumps(items), encoding="utf-8")
        # a second job citing the to-be-retracted work too: still asked about once
        (folder / "other.json").write_text(json.dumps(items[:1]), encoding="utf-8")

    def db(self) -> str:
        return str(self.folder / "citeaudit.duckdb")

    def rows(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        with duckdb.connect(self.db(), read_only=True) as con:
            return con.execute(sql, params or []).pl()

    def age_all_but_recent(self, days: int) -> None:
        with duckdb.connect(self.db()) as con:
            con.execute(
                "UPDATE citations SET checked_at = checked_at - to_days(?) "
                "WHERE entry_key <> 'checked-recently'",
                [days],
            )


@pytest.fixture
def library(registry_env: FakeRegistry, tmp_path: Path) -> Library:
    registry_env.rate_limits = False
    lib = Library(registry_env, tmp_path)
    for job, name in (("reading-list", "list.json"), ("other", "other.json")):
        audit_job(
            JobParams(
                inputs=[str(tmp_path / name)],
                job_id=job,
                out_dir=str(tmp_path / "out"),
                styles=["apa"],
            )
        )
    return lib


def publish_changes(registry: FakeRegistry, lib: Library) -> None:
    """What happens at the registries between two audits."""
    retracted = copy.deepcopy(lib.retracted)
    retracted["updated-by"] = [
        {
            "type": "retraction",
            "source": "retraction-watch",
            "DOI": "10.9999/citeaudit.notice",
            "label": "Retraction",
            "updated": {"date-parts": [[2025, 1, 1]]},
        }
    ]
    registry.add_crossref_work(retracted)
    corrected = copy.deepcopy(lib.corrected)
    corrected["container-title"] = ["Journal of Corrected Records"]
    registry.add_crossref_work(corrected)
    registry.add_crossref_work({**copy.deepcopy(lib.later), "DOI": LATER_DOI})


def audit(tmp_path: Path, **options: Any) -> RecheckSummary:
    options.setdefault("audit_id", "audit-1")
    return scheduled_audit(out_dir=str(tmp_path / "out"), **options)


def test_changes_since_the_last_audit_are_found_written_and_stored(registry_env, library, tmp_path):
    before = library.rows("SELECT * FROM citations ORDER BY job_id, entry_key")
    assert dict(zip(before["entry_key"], before["status"], strict=False))["registered-later"] == (
        "not_found"
    )
    publish_changes(registry_env, library)
    library.age_all_but_recent(days=10)
    registry_env.reset()

    summary = audit(tmp_path, max_age_days=7)

    assert summary.rechecked == before.height - 1  # all but the recently checked one
    changes = pl.read_parquet(tmp_path / "out" / "audit-1" / "changes.parquet")
    assert changes.columns == [
        "job_id",
        "citation_id",
        "entry_key",
        "field",
        "before",
        "after",
        "detected_at",
    ]
    found = {
        (r["job_id"], r["entry_key"], r["field"]): (r["before"], r["after"])
        for r in changes.iter_rows(named=True)
    }
    assert found[("reading-list", "to-be-retracted", "retracted")] == ("false", "true")
    assert found[("other", "to-be-retracted", "retracted")] == ("false", "true")
    assert found[("reading-list", "registered-later", "status")] == ("not_found", "verified")
    assert found[("reading-list", "registered-later", "matched_id")] == (None, LATER_DOI)
    assert found[("reading-list", "record-corrected", "matched_container")][1] == (
        "Journal of Corrected Records"
    )
    assert not [k for k in found if k[1] in ("unchanged", "checked-recently")]
    assert summary.changed_citations == changes["citation_id"].n_unique() == 4

    # each DOI asked once, though two jobs cite the retracted one
    asked = " ".join(unquote(r.path).lower() for r in registry_env.log if r.service == "crossref")
    assert asked.count(library.retracted["DOI"].lower()) == 1

    after = library.rows("SELECT * FROM citations ORDER BY job_id, entry_key")
    assert after.height == before.height
    by_key = {(r["job_id"], r["entry_key"]): r for r in after.iter_rows(named=True)}
    assert by_key[("reading-list", "to-be-retracted")]["retracted"] is True
    assert by_key[("other", "to-be-retracted")]["retracted"] is True
    assert by_key[("reading-list", "registered-later")]["status"] == "verified"
    now = datetime.now(UTC)
    assert now - by_key[("reading-list", "unchanged")]["checked_at"] < timedelta(minutes=5)
    recent_before = before.filter(pl.col("entry_key") == "checked-recently")["checked_at"][0]
    assert by_key[("reading-list", "checked-recently")]["checked_at"] == recent_before
    stored = library.rows("SELECT count(*) AS n FROM citation_changes")
    assert stored["n"][0] == changes.height
    counts = library.rows("SELECT status_counts FROM jobs WHERE job_id = 'reading-list'")
    assert json.loads(counts["status_counts"][0]) == {"verified": 5}

    page = (tmp_path / "out" / "audit-1" / "report.html").read_text()
    assert f"Changes since the last audit ({changes.height})" in page
    assert "Journal of Corrected Records" in page
    assert "RETRACTED" in page

    # nothing is stale any more: a second audit right away re-checks nothing
    again = audit(tmp_path, max_age_days=7, audit_id=None)
    assert again.rechecked == 0 and again.changes_by_field == {}


def test_a_registry_outage_changes_nothing_and_is_retried_next_time(
    registry_env, library, tmp_path, monkeypatch
):
    monkeypatch.setenv("CITEAUDIT_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CITEAUDIT_BACKOFF_BASE_S", "0.01")
    library.age_all_but_recent(days=10)
    before = library.rows("SELECT * FROM citations ORDER BY job_id, citation_id")
    registry_env.inject_fault("server_error", rate=1.0)

    summary = audit(tmp_path, max_age_days=7)

    assert summary.rechecked == before.height - 1
    assert summary.updated == 0
    assert pl.read_parquet(tmp_path / "out" / "audit-1" / "changes.parquet").height == 0
    after = library.rows("SELECT * FROM citations ORDER BY job_id, citation_id")
    assert after.equals(before)  # verdicts and checked_at kept: still due next time


def test_one_file_audited_as_several_jobs_is_rechecked_job_by_job(
    registry_env, tmp_path: Path
) -> None:
    """A citation id hashes provenance, so one file audited as three jobs repeats every id:
    each job keeps one row per citation, all three are re-checked (the offline one at once,
    though just imported), each DOI is asked once and every change names its job."""
    registry_env.rate_limits = False
    lib = Library(registry_env, tmp_path)
    for job, offline in (("job-a", False), ("job-b", False), ("job-c", True)):
        audit_job(
            JobParams(
                inputs=[str(tmp_path / "list.json")],
                job_id=job,
                out_dir=str(tmp_path / "out"),
                styles=["apa"],
                offline=offline,
            )
        )
    per_job = "SELECT job_id, count(*) AS n FROM citations GROUP BY job_id ORDER BY job_id"
    counts_before = lib.rows(per_job)
    assert counts_before["n"].to_list() == [5, 5, 5]
    assert lib.rows("SELECT count(DISTINCT citation_id) AS n FROM citations")["n"][0] == 5
    publish_changes(registry_env, lib)
    with duckdb.connect(lib.db()) as con:  # the two online jobs are due; job-c was just imported
        con.execute(
            "UPDATE citations SET checked_at = checked_at - to_days(10) "
            "WHERE job_id <> 'job-c' AND entry_key <> 'checked-recently'"
        )
    registry_env.reset()

    summary = audit(tmp_path, max_age_days=7)

    assert lib.rows(per_job).equals(counts_before)
    after = lib.rows("SELECT * FROM citations ORDER BY job_id, entry_key")
    assert not after.select("job_id", "citation_id").is_duplicated().any()
    assert summary.rechecked == 4 + 4 + 5
    by_key = {(r["job_id"], r["entry_key"]): r for r in after.iter_rows(named=True)}
    now = datetime.now(UTC)
    for job in ("job-a", "job-b", "job-c"):
        assert by_key[(job, "to-be-retracted")]["retracted"] is True
        assert by_key[(job, "registered-later")]["status"] == "verified"
        assert by_key[(job, "unchanged")]["status"] == "verified"
        assert now - by_key[(job, "unchanged")]["checked_at"] < timedelta(minutes=5)
    asked = " ".join(unquote(r.path).lower() for r in registry_env.log if r.service == "crossref")
    assert asked.count(lib.retracted["DOI"].lower()) == 1

    changes = pl.read_parquet(tmp_path / "out" / "audit-1" / "changes.parquet")
    found = {
        (r["job_id"], r["entry_key"], r["field"]): (r["before"], r["after"])
        for r in changes.iter_rows(named=True)
    }
    for job in ("job-a", "job-b"):
        assert found[(job, "to-be-retracted", "retracted")] == ("false", "true")
        assert found[(job, "registered-later", "status")] == ("not_found", "verified")
        assert found[(job, "record-corrected", "matched_container")][1] == (
            "Journal of Corrected Records"
        )
    assert found[("job-c", "unchanged", "status")] == ("unverified", "verified")
    assert not changes.select("job_id", "citation_id", "field").is_duplicated().any()
    assert summary.changed_citations == changes.select("job_id", "citation_id").n_unique()
    stored = lib.rows("SELECT job_id, count(*) AS n FROM citation_changes GROUP BY job_id")
    assert dict(stored.iter_rows()) == dict(changes.group_by("job_id").len().iter_rows())
    statuses = lib.rows("SELECT job_id, status_counts FROM jobs ORDER BY job_id")
    assert [json.loads(s) for s in statuses["status_counts"]] == [{"verified": 5}] * 3

    report = (tmp_path / "out" / "audit-1" / "report.md").read_text()
    listed = report.split("## Changes since the last audit")[1].split("\n## ")[0]
    lines = [line for line in listed.splitlines() if line.startswith("- ")]  # one per citation
    assert len(lines) == summary.changed_citations
    assert all(line.startswith("- job `job-") for line in lines)
    retracted = listed.split("### Newly retracted")[1].split("\n### ")[0]
    for job in ("job-a", "job-b"):
        assert f"job `{job}` `to-be-retracted`" in retracted
        assert f"job `{job}` `registered-later`" in listed.split("### Newly resolving")[1]
    notices = report.split("## Retracted, corrected or of concern")[1].split("\n## ")[0]
    for job in ("job-a", "job-b", "job-c"):  # flagged rows name their job too
        assert f"job `{job}` `to-be-retracted`" in notices
