"""bulk_import end to end: batches stored in a real DuckDB file, a crash after batch k, a resumed
run compared with one that ran through, against the fake registry over real HTTP."""

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from prefect.client.orchestration import get_client
from typer.testing import CliRunner

from flows import progress
from flows.bulk import bulk_import
from flows.cli.main import app
from models.job import BulkSummary, JobParams
from tasks.plural import counted
from tasks.report.works import RELATIONS
from tests.fake_registry import FakeRegistry

pytestmark = pytest.mark.usefixtures("prefect_harness")

BATCH = 10
KNOWN = 42  # works the registry holds; plus UNKNOWN DOIs it does not
UNKNOWN = 4


class Crash(Exception):
    """Stands for the process dying between two batches."""


def write_reference_list(registry: FakeRegistry, path: Path, known: int = KNOWN) -> int:
    """A CSL-JSON list citing real Crossref records the registry holds, and a few DOIs it
    does not."""
    items: list[dict] = []
    for doi in sorted(registry.data.crossref):
        work = registry.data.crossref[doi]
        if len(items) == known:
            break
        if not isinstance(work.get("issued", {}).get("date-parts", [[None]])[0][0], int):
            continue  # a few real records carry no date: not what this test is about
        items.append(
            {
                "id": f"ref-{len(items)}",
                "type": "article-journal",
                "DOI": work["DOI"],
                "title": (work.get("title") or [""])[0],
                "author": [
                    {"family": a["family"], "given": a.get("given", "")}
                    for a in work.get("author", [])
                    if "family" in a
                ],
                "issued": work.get("issued"),
            }
        )
    for n in range(UNKNOWN):
        items.append({"id": f"ghost-{n}", "title": f"No such paper {n}", "DOI": f"10.9999/{n}"})
    path.write_text(json.dumps(items), encoding="utf-8")
    return len(items)


@pytest.fixture
def reference_list(
    registry_env: FakeRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    registry_env.rate_limits = False
    # every run asks the registry itself, so request counts show what a resumed run skipped
    monkeypatch.setenv("CITEAUDIT_CACHE_ENABLED", "false")
    path = tmp_path / "big_list.json"
    write_reference_list(registry_env, path)
    return path


@pytest.fixture
def crash_after_batch() -> Iterator[list[int]]:
    """Set `[k]` to make the import die right after its k-th batch is stored."""
    when: list[int] = []

    def listener(stage: str, done: int, total: int | None) -> None:
        # the total is None until the import has read (and stored) everything
        if stage == "import" and when and done >= when[0] * BATCH and total is None:
            raise Crash(f"killed after {done} of {total}")

    with progress.watching(listener):
        yield when


def run(tmp_path: Path, inputs: Path, folder: str) -> BulkSummary:
    return bulk_import(
        JobParams(
            inputs=[str(inputs)],
            job_id="bulk",
            out_dir=str(tmp_path / folder / "out"),
            db=str(tmp_path / folder / "library.duckdb"),
            chunk_size=4,
            styles=["apa"],
        ),
        batch_size=BATCH,
    )


def library_rows(tmp_path: Path, folder: str, sql: str) -> list[tuple]:
    with duckdb.connect(str(tmp_path / folder / "library.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def outputs(tmp_path: Path, folder: str) -> dict[str, pl.DataFrame]:
    job = tmp_path / folder / "out" / "bulk"
    return {
        name: pl.read_parquet(job / f"{name}.parquet").drop("checked_at", strict=False)
        for name in ("citations", "input_errors", "claims")
    }


def test_crash_then_resume_equals_an_uninterrupted_run(
    registry_env, reference_list, crash_after_batch, tmp_path
):
    full = run(tmp_path, reference_list, "full")
    asked_full = registry_env.count()
    assert full.citations == KNOWN + UNKNOWN and full.batches == 5
    assert full.status_counts["verified"] >= KNOWN - 2
    assert full.status_counts["not_found"] == UNKNOWN

    crash_after_batch.append(2)
    with pytest.raises(Crash):
        run(tmp_path, reference_list, "crashed")
    # exactly the two finished batches are in the library, rows and marks alike
    assert library_rows(tmp_path, "crashed", "SELECT count(*) FROM citations") == [(2 * BATCH,)]
    assert library_rows(tmp_path, "crashed", "SELECT batch FROM bulk_progress ORDER BY 1") == [
        (0,),
        (1,),
    ]
    assert not (tmp_path / "crashed" / "out" / "bulk" / "citations.parquet").exists()

    crash_after_batch.clear()
    registry_env.reset()
    resumed = run(tmp_path, reference_list, "crashed")
    assert resumed.batches_skipped == 2
    assert 0 < registry_env.count() < asked_full  # the stored batches were not asked again
    assert resumed.status_counts == full.status_counts
    for name, frame in outputs(tmp_path, "full").items():
        assert frame.equals(outputs(tmp_path, "crashed")[name]), name
    sql = "SELECT * EXCLUDE (checked_at) FROM citations ORDER BY citation_id"
    assert library_rows(tmp_path, "full", sql) == library_rows(tmp_path, "crashed", sql)
    full_metrics = (tmp_path / "full" / "out" / "bulk" / "metrics.json").read_text()
    assert full_metrics == (tmp_path / "crashed" / "out" / "bulk" / "metrics.json").read_text()


def test_finished_import_is_not_redone_but_changed_input_starts_over(
    registry_env, reference_list, tmp_path
):
    run(tmp_path, reference_list, "lib")
    registry_env.reset()
    again = run(tmp_path, reference_list, "lib")
    assert again.batches_skipped == again.batches == 5
    assert registry_env.count() == 0

    write_reference_list(registry_env, reference_list, known=15)  # the list was edited
    changed = run(tmp_path, reference_list, "lib")
    assert changed.batches_skipped == 0
    assert changed.citations == 15 + UNKNOWN
    assert library_rows(tmp_path, "lib", "SELECT count(*) FROM citations") == [(15 + UNKNOWN,)]
    assert library_rows(tmp_path, "lib", "SELECT count(*) FROM bulk_progress") == [(2,)]


def test_progress_is_reported_to_listeners_and_the_prefect_ui(
    registry_env, reference_list, tmp_path
):
    seen: list[tuple[int, int | None]] = []
    with progress.watching(
        lambda stage, done, total: seen.append((done, total)) if stage == "import" else None
    ):
        run(tmp_path, reference_list, "watched")
    total = KNOWN + UNKNOWN
    # the input is read as the batches go: the total is known (and told) at the end
    assert seen == [(10, None), (20, None), (30, None), (40, None), (total, None), (total, total)]
    with get_client(sync_client=True) as client:
        # the API directly: this client version's read_artifacts sends filters the server rejects
        found = client.request(
            "POST",
            "/artifacts/filter",
            json={
                "artifacts": {"key": {"any_": ["import-bulk"]}},
                "sort": "CREATED_DESC",
                "limit": 1,
                "offset": 0,
            },
        ).json()
    assert found and found[0]["type"] == "progress"
    assert float(found[0]["data"]) == 100.0


def test_cli_import_then_jobs_and_report_read_the_library(registry_env, reference_list, tmp_path):
    runner = CliRunner()
    out, db = str(tmp_path / "out"), str(tmp_path / "cli.duckdb")
    args = ["import", str(reference_list), "--job", "cli-bulk", "--out", out, "--db", db]
    imported = runner.invoke(app, [*args, "--batch-size", "20"])
    assert imported.exit_code == 0, imported.output
    assert "3 batches, 0 already stored" in imported.output
    resumed = runner.invoke(app, [*args, "--batch-size", "20"])
    assert "3 batches, 3 already stored" in resumed.output

    listed = runner.invoke(app, ["jobs", "--db", db])
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if "cli-bulk" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[0] == "cli-bulk" and cells[2] == str(KNOWN + UNKNOWN)  # citations
    assert f"│ {UNKNOWN} not_found " in listed.output

    shown = runner.invoke(app, ["report", "cli-bulk", "--out", out, "--db", db])
    assert shown.exit_code == 0, shown.output
    assert f"{KNOWN + UNKNOWN} citations" in shown.output
    assert "10.9999/0" in shown.output or "ghost-0" in shown.output  # a flagged citation
    assert "report.html" in shown.output.replace("\n", "")  # rich wraps long paths

    missing = runner.invoke(app, ["report", "no-such-job", "--db", db])
    assert missing.exit_code == 2
    assert missing.output.startswith("citeaudit: error: no job")


# citation ids are keyed by file content in an import, by file name in an audit
IDS = ("checked_at", "citation_id", "citation_ids", "canonical_citation_id")


def whole_job_outputs(tmp_path: Path, folder: str) -> dict[str, object]:
    """What a job leaves that must not depend on how it was built: its folder's tables and files
    and its library rows (check times and request counts apart: each run asks afresh)."""
    job = tmp_path / folder / "out" / "bulk"
    found: dict[str, object] = {
        name: pl.read_parquet(job / f"{name}.parquet").drop(IDS, strict=False).sort(by)
        for name, by in (
            ("citations", "entry_key"),
            ("input_errors", "line"),
            ("claims", "claim_id"),
            ("works", "work_id"),
        )
    }
    for name in ("references.bib", "references.ris", "references.json", "report.md"):
        found[name] = (job / name).read_text(encoding="utf-8")
    # related works are listed in citation-id order, and the ids differ (IDS): only which
    # relations are listed must agree
    related = [
        line
        for line in found["report.md"].splitlines()
        if any(r in line for r in RELATIONS.values())
    ]
    found["report.md"] = "\n".join(
        line for line in found["report.md"].splitlines() if line not in related
    )
    found["related"] = sorted(len(line) for line in related)
    found["bibliography"] = (job / "bibliography.apa.md").read_text(encoding="utf-8")
    metrics = json.loads((job / "metrics.json").read_text())
    metrics.pop("requests_per_citation")
    found["metrics"] = metrics
    for table, ids in (
        ("citations", "citation_id, checked_at"),
        # the library keeps no registry relations of a citation (frames.result_from_row), so
        # an import's records, made from its stored rows, have none (as before #20's change)
        ("dedupe_records", "citation_id, source, relations"),
        ("claims", "citation_ids"),
        ("input_errors", "line"),
    ):
        found[f"library {table}"] = library_rows(
            tmp_path, folder, f"SELECT * EXCLUDE (job_id, {ids}) FROM {table} ORDER BY ALL"
        )
    found["library works"] = library_rows(
        tmp_path, folder, "SELECT * EXCLUDE (canonical_citation_id) FROM works ORDER BY ALL"
    )
    found["library job"] = library_rows(
        tmp_path, folder, "SELECT n_citations, n_input_errors, status_counts FROM jobs"
    )
    return found


def test_import_written_in_batches_equals_the_whole_job(registry_env, reference_list, tmp_path):
    """An import builds its job folder from the stored rows a batch at a time (5 batches here):
    the folder and library rows are those the whole-job path (`audit`) gives the same list."""
    from flows.audit import audit_job

    imported = run(tmp_path, reference_list, "import")
    registry_env.reset()
    audited = audit_job(
        JobParams(
            inputs=[str(reference_list)],
            job_id="bulk",
            out_dir=str(tmp_path / "audit" / "out"),
            db=str(tmp_path / "audit" / "library.duckdb"),
            chunk_size=4,
            styles=["apa"],
        )
    )
    assert imported.status_counts == audited.status_counts
    assert imported.flagged == audited.flagged
    batched, whole = whole_job_outputs(tmp_path, "import"), whole_job_outputs(tmp_path, "audit")
    for name, value in whole.items():
        if isinstance(value, pl.DataFrame):
            assert value.equals(batched[name]), name  # type: ignore[union-attr]
        else:
            assert value == batched[name], name
    # and a re-run over the stored batches writes the same again
    again = run(tmp_path, reference_list, "import")
    assert again.batches_skipped == 5
    rerun = whole_job_outputs(tmp_path, "import")
    for name, value in batched.items():
        if isinstance(value, pl.DataFrame):
            assert value.equals(rerun[name]), name  # type: ignore[union-attr]
        else:
            assert value == rerun[name], name


def test_a_big_import_reports_its_first_flagged_citations_and_counts_the_rest(
    registry_env, reference_list, tmp_path, monkeypatch
):
    import tasks.report

    monkeypatch.setattr(tasks.report, "MAX_REPORTED_CITATIONS", 3)
    summary = run(tmp_path, reference_list, "big")
    job = tmp_path / "big" / "out" / "bulk"
    report_md = (job / "report.md").read_text(encoding="utf-8")
    flagged = sum(n for s, n in summary.status_counts.items() if s != "verified")
    assert f"{KNOWN + UNKNOWN} citations" in report_md
    left = flagged - 3
    verb = "is" if left == 1 else "are"
    assert f"{counted(left, 'more flagged citation')} {verb} not listed here" in report_md
    assert len(summary.flagged) == 3 and summary.flagged_left_out == flagged - 3
    assert pl.read_parquet(job / "citations.parquet").height == KNOWN + UNKNOWN


def test_no_task_makes_a_cache_key_from_its_inputs():
    """Results are never persisted, so no run uses a cache key; yet Prefect's default policy
    serializes every input to make one, which copied a whole import's frames at its peak. No
    task of ours has a cache policy."""
    import pkgutil
    from importlib import import_module

    from prefect import Task
    from prefect.cache_policies import NO_CACHE

    import flows

    modules = [import_module(f"flows.{m.name}") for m in pkgutil.iter_modules(flows.__path__)]
    tasks = [v for m in modules for v in vars(m).values() if isinstance(v, Task)]
    assert len(tasks) >= 15  # the stages, the import's, the crew's and the scheduled audit's
    assert [t.name for t in tasks if t.cache_policy is not NO_CACHE] == []


def test_checked_citations_are_not_each_linked_to_their_task(tmp_path):
    """Prefect links every element of a list a task returns to the task's state for the rest of
    the flow run (~200 bytes each: 200 MB for a million-citation import); the look-up task
    returns its chunk in one object, linked once."""
    from prefect import flow
    from prefect.context import FlowRunContext

    from flows.steps import check_all_tasks
    from tasks.read.inputs import read_inputs

    listing = tmp_path / "dois.txt"
    listing.write_text("".join(f"10.5555/linked.{n}\n" for n in range(300)))
    refs = read_inputs([listing]).references

    @flow
    def looked_up() -> tuple[int, int]:
        checked = check_all_tasks(refs, offline=True, chunk_size=100)
        context = FlowRunContext.get()
        assert context is not None
        return len(checked), len(context.run_results)

    checked, linked = looked_up()
    assert checked == 300 and linked < 30, linked
