"""The audit_job flow end to end: real files in, real HTTP to the fake registry, real Parquet and
DuckDB read back."""

import re
from pathlib import Path

import bibtexparser
import duckdb
import polars as pl
import pytest

from flows.audit import audit_job
from models.job import JobParams, JobSummary

FIXTURES = Path(__file__).parent / "fixtures"
REPORT = FIXTURES / "reflists" / "crew_report.md"
BIB = FIXTURES / "reflists" / "manubot_bibliography.bib"

pytestmark = pytest.mark.usefixtures("prefect_harness")


def run(tmp_path: Path, *inputs: Path, job: str = "job-1", **options) -> JobSummary:
    return audit_job(
        JobParams(
            inputs=[str(p) for p in inputs],
            job_id=job,
            out_dir=str(tmp_path / "out"),
            styles=["apa", "ieee"],
            **options,
        )
    )


def citations(tmp_path: Path, job: str = "job-1") -> pl.DataFrame:
    return pl.read_parquet(tmp_path / "out" / job / "citations.parquet")


def test_every_citation_gets_exactly_one_status(registry_env, tmp_path):
    summary = run(tmp_path, REPORT, BIB)
    table = citations(tmp_path)
    assert table.height == summary.citations > 0
    assert table["citation_id"].n_unique() == table.height
    assert table["status"].null_count() == 0
    assert set(table["status"]) <= {"verified", "mismatch", "not_found", "unmatched", "unverified"}
    assert sum(summary.status_counts.values()) == table.height
    assert table.filter(pl.col("source_file") == str(BIB)).height > 0
    by_key = dict(zip(table["entry_key"], table["status"], strict=True))
    assert by_key["[1]"] == "verified"  # a real DOI with the right metadata
    assert by_key["p4-s3:pmid"] == "not_found"  # a PMID the registry does not hold
    errors = pl.read_parquet(tmp_path / "out" / "job-1" / "input_errors.parquet")
    assert any("[9]" in reason for reason in errors["reason"])


def test_outputs_are_written_and_consistent(registry_env, tmp_path):
    run(tmp_path, REPORT)
    folder = tmp_path / "out" / "job-1"
    names = {p.name for p in folder.iterdir()}
    for expected in (
        "citations.parquet",
        "input_errors.parquet",
        "claims.parquet",
        "metrics.json",
        "references.bib",
        "references.ris",
        "references.json",
        "report.html",
        "report.md",
        "bibliography.apa.txt",
        "bibliography.ieee.html",
    ):
        assert expected in names
    assert not [n for n in names if n.endswith(".tmp")]
    claims = pl.read_parquet(folder / "claims.parquet")
    assert claims.height > 0 and claims["strength"].is_between(0, 1).all()
    # the claim resting only on the PMID the registry does not hold is unsupported
    unsupported = claims.filter(pl.col("unsupported"))["claim_text"].to_list()
    assert any("29424689" in text for text in unsupported)
    table = citations(tmp_path)
    assert table["confidence"].is_between(0, 1).all()
    assert (
        table.filter(pl.col("status") == "not_found")["confidence"].max()
        < table.filter(pl.col("status") == "verified")["confidence"].min()
    )
    apa = (folder / "bibliography.apa.txt").read_text().splitlines()
    assert len(apa) == table.filter(pl.col("status") == "verified").height
    # The report's bibliography is Markdown (italics kept, text escaped), one item per entry.
    section = (folder / "report.md").read_text().split("## Bibliography")[1]
    assert "*" in section and "&amp;" not in section
    unescaped = re.sub(r"\\(.)", r"\1", section).replace("*", "")
    assert all(" ".join(entry.split())[:40] in unescaped for entry in apa)


def test_rerun_is_idempotent(registry_env, tmp_path):
    run(tmp_path, REPORT, BIB)
    first = citations(tmp_path).drop("checked_at")
    run(tmp_path, REPORT, BIB)
    second = citations(tmp_path).drop("checked_at")
    assert first.equals(second)
    with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
        rows = con.execute("SELECT count(*), count(DISTINCT citation_id) FROM citations").fetchone()
        jobs = con.execute("SELECT count(*) FROM jobs").fetchone()
    assert rows == (first.height, first.height)
    assert jobs == (1,)


def registry_env_db(tmp_path: Path) -> str:
    return str(tmp_path / "citeaudit.duckdb")


def test_offline_marks_everything_unverified_and_asks_nobody(registry_env, tmp_path):
    run(tmp_path, REPORT, offline=True)
    table = citations(tmp_path)
    assert set(table["status"]) == {"unverified"}
    assert set(table["reason"]) == {"offline"}
    assert registry_env.count() == 0


def test_registry_down_means_unverified_never_not_found(registry_env, tmp_path, monkeypatch):
    monkeypatch.setenv("CITEAUDIT_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CITEAUDIT_BACKOFF_BASE_S", "0.01")
    registry_env.inject_fault("server_error", rate=1.0)
    run(tmp_path, REPORT)
    table = citations(tmp_path)
    assert set(table["status"]) == {"unverified"}
    assert table["error"].null_count() == 0


def test_works_are_shared_across_jobs_and_stable_on_rerun(registry_env, tmp_path):
    # The same manubot list exported as BibTeX and as CSL-JSON: two jobs, one set of works.
    bib = FIXTURES / "reflists" / "manubot_bibliography.bib"
    csl = FIXTURES / "reflists" / "manubot_bibliography.json"
    run(tmp_path, bib, job="from-bib")
    run(tmp_path, csl, job="from-csl")
    a, b = citations(tmp_path, "from-bib"), citations(tmp_path, "from-csl")
    assert a["work_id"].null_count() == 0 and b["work_id"].null_count() == 0
    shared = set(a["work_id"]) & set(b["work_id"])
    assert len(shared) >= min(a.height, b.height) - 1
    matched = b.filter(pl.col("duplicate_of").is_not_null())
    assert matched["duplicate_of"].str.starts_with("from-bib/").all()
    with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
        works_before = con.execute("SELECT count(*) FROM works").fetchone()
    run(tmp_path, csl, job="from-csl")
    assert citations(tmp_path, "from-csl")["work_id"].equals(b["work_id"])
    with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM works").fetchone() == works_before
        dupes = con.execute(
            "SELECT count(*) - count(DISTINCT citation_id) FROM dedupe_records"
        ).fetchone()
    assert dupes == (0,)
    assert pl.read_parquet(tmp_path / "out" / "from-csl" / "works.parquet").height >= 1


def test_a_conference_paper_and_its_journal_version_are_reported_as_related(registry_env, tmp_path):
    # Real DBLP records (../shared/data/dedupe/dblp_acm_leipzig): VLDB 2000 and VLDB J. 2001.
    bib = tmp_path / "versions.bib"
    bib.write_text(
        "@inproceedings{conf, title = {Approximate Query Processing Using Wavelets},"
        " author = {Kaushik Chakrabarti and Minos N. Garofalakis and Rajeev Rastogi and"
        " Kyuseok Shim}, booktitle = {VLDB}, year = {2000}}\n"
        "@article{journal, title = {Approximate query processing using wavelets},"
        " author = {Kaushik Chakrabarti and Minos N. Garofalakis and Rajeev Rastogi and"
        " Kyuseok Shim}, journal = {VLDB J.}, year = {2001}}\n"
    )
    run(tmp_path, bib)
    works = dict(zip(citations(tmp_path)["entry_key"], citations(tmp_path)["work_id"], strict=True))
    assert works["conf"] != works["journal"]
    with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
        links = con.sql("SELECT work_id_a, work_id_b, kind FROM work_links").fetchall()
    assert (*sorted(works.values()), "version-of") in links
    report = (tmp_path / "out" / "job-1" / "report.md").read_text()
    assert "## Related works cited together (1)" in report
    assert f"- `{bib}: conf` is another version of `{bib}: journal`" in report
    # Re-running the job changes nothing: the same works, the one link.
    run(tmp_path, bib)
    again = dict(zip(citations(tmp_path)["entry_key"], citations(tmp_path)["work_id"], strict=True))
    assert again == works
    with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
        assert con.sql("SELECT work_id_a, work_id_b, kind FROM work_links").fetchall() == links


ATTENTION = (
    "@article{{{key}, title = {{Attention is all you need}}, author = {{Vaswani, Ashish and"
    " Shazeer, Noam}}, journal = {{Advances in Neural Information Processing Systems}},"
    " year = {{2017}}}}\n"
)
RESNET = (
    "@inproceedings{{{key}, title = {{Deep residual learning for image recognition}},"
    " author = {{He, Kaiming and Zhang, Xiangyu}}, booktitle = {{CVPR}}, year = {{2016}}}}\n"
)


def test_duplicates_are_counted_within_the_job_not_across_the_library(registry_env, tmp_path):
    listed_twice = tmp_path / "twice.bib"
    listed_twice.write_text(
        ATTENTION.format(key="vaswani") + ATTENTION.format(key="again") + RESNET.format(key="he")
    )
    once = tmp_path / "once.bib"
    once.write_text(ATTENTION.format(key="transformer") + RESNET.format(key="resnet"))
    first = run(tmp_path, listed_twice, job="first", offline=True)
    later = run(tmp_path, once, job="later", offline=True)
    assert first.metrics["duplicate_rate"] == round(1 / 3, 4)
    assert "## Duplicates found (1)" in (tmp_path / "out" / "first" / "report.md").read_text()
    # The later job cites works the first one holds: shared works, no duplicates in its list.
    assert set(citations(tmp_path, "later")["work_id"]) == set(
        citations(tmp_path, "first")["work_id"]
    )
    assert later.metrics["duplicate_rate"] == 0.0
    assert "Duplicates found" not in (tmp_path / "out" / "later" / "report.md").read_text()


def test_a_rerun_with_other_input_leaves_no_stale_works(registry_env, tmp_path):
    attention, resnet = tmp_path / "attention.bib", tmp_path / "resnet.bib"
    attention.write_text(ATTENTION.format(key="vaswani"))
    resnet.write_text(RESNET.format(key="he"))
    run(tmp_path, attention, job="other", offline=True)
    run(tmp_path, attention, job="changing", offline=True)
    shared = citations(tmp_path, "changing")["work_id"][0]

    def cited() -> dict[str, int]:
        with duckdb.connect(registry_env_db(tmp_path), read_only=True) as con:
            return dict(con.execute("SELECT work_id, citations FROM works").fetchall())

    assert cited() == {shared: 2}
    run(tmp_path, resnet, job="changing", offline=True)  # the job now cites another paper
    resnet_work = citations(tmp_path, "changing")["work_id"][0]
    assert cited() == {shared: 1, resnet_work: 1}
    run(tmp_path, resnet, job="other", offline=True)  # nobody cites the attention paper now
    assert cited() == {resnet_work: 2}
    works_file = pl.read_parquet(tmp_path / "out" / "other" / "works.parquet")
    assert works_file["work_id"].to_list() == [resnet_work]


RALSER_BIB = """@article{{ralser,
  author = {{{authors}}},
  title = {{Triose phosphate isomerase deficiency is caused by altered dimerization--not
    catalytic inactivity--of the mutant enzymes}},
  journal = {{PLoS ONE}}, year = {{2006}}, doi = {{10.1371/journal.pone.0000030}}}}
"""


@pytest.mark.parametrize(
    ("authors", "status"),
    [
        ("Ralser, Markus and Heeren, Gino and others", "verified"),
        # The same two of the record's five authors, presented as the whole list.
        ("Ralser, Markus and Heeren, Gino", "mismatch"),
    ],
)
def test_and_others_declares_a_shortened_author_list(registry_env, tmp_path, authors, status):
    bib = tmp_path / "authors.bib"
    bib.write_text(RALSER_BIB.format(authors=authors), encoding="utf-8")
    run(tmp_path, bib, job="authors")
    row = citations(tmp_path, "authors").row(0, named=True)
    assert row["status"] == status, row["reason"]
    if status == "verified":
        assert row["agreement_authors"] == 1.0
        assert row["claimed_authors"] == "Ralser, Markus; Heeren, Gino; et al."
    else:
        assert row["agreement_authors"] == pytest.approx(0.4)
        assert "disagrees on authors" in row["reason"]


def test_exports_keep_keys_and_bibliographies_set_unconfirmed_apart(registry_env, tmp_path):
    bib = Path(__file__).parents[1] / "examples" / "references.bib"
    run(tmp_path, bib)
    folder = tmp_path / "out" / "job-1"
    table = citations(tmp_path)
    status = dict(zip(table["entry_key"], table["status"], strict=True))
    keys = [e.key for e in bibtexparser.parse_string(bib.read_text()).entries]
    listed = [k for k in keys if status[k] not in ("not_found", "mismatch")]
    exported = bibtexparser.parse_string((folder / "references.bib").read_text())
    assert [e.key for e in exported.entries] == listed  # the user's own keys, in input order
    assert exported.entries[0]["keywords"] == f"citeaudit:{status[listed[0]]}"
    assert status["made2023up"] == "unmatched"
    apa = (folder / "bibliography.apa.md").read_text()
    confirmed, _, apart = apa.partition("## Could not be verified")
    assert "\\[unmatched\\]" in apart and "\\[unmatched\\]" not in confirmed
