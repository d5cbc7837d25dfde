"""crew_report end to end: crew outputs in every format citeaudit reads, real HTTP to the fake
registry, Parquet, DuckDB and the report read back."""

import html
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from flows.crew import crew_report
from models.job import CrewSummary, JobParams
from tasks.read.inputs import read_inputs
from tasks.score.metrics import MISSING_REASON

FIXTURES = Path(__file__).parent / "fixtures"
CREW_MD = FIXTURES / "reflists" / "crew_report.md"
CREW_NUMBERED = FIXTURES / "reflists" / "crew_numbered_sections.md"
AGENTS = FIXTURES / "agents"
AGENT_FILES = {
    "modelchorus": "modelchorus_claims.json",
    "ivcap": "ivcap_store.json",
    "ice": "ice_answer.json",
    "rag-context": "rag_contexts.json",
    "clinical": "clinical_response.json",
}

pytestmark = pytest.mark.usefixtures("prefect_harness")


def run(tmp_path: Path, path: Path, job: str = "crew-1") -> CrewSummary:
    return crew_report(
        JobParams(inputs=[str(path)], job_id=job, out_dir=str(tmp_path / "out"), styles=["apa"])
    )


def test_unsupported_claims_come_with_their_citations_reasons(registry_env, tmp_path):
    summary = run(tmp_path, CREW_MD)
    folder = Path(summary.out)
    claims = pl.read_parquet(folder / "claims.parquet")
    citations = pl.read_parquet(folder / "citations.parquet")
    unsupported = [c.model_dump() for c in summary.unsupported_claims]
    assert len(unsupported) == claims.filter(pl.col("unsupported")).height > 0
    strengths = [c["strength"] for c in unsupported]
    assert strengths == sorted(strengths)  # weakest first
    # the claim resting on the PMID the registry does not hold, with that citation's reason
    pmid_claim = next(c for c in unsupported if "29424689" in c["claim_text"])
    reasons = dict(zip(citations["entry_key"], citations["reason"], strict=True))
    cited = {c["entry_key"]: c for c in pmid_claim["citations"]}
    assert cited["p4-s3:pmid"]["status"] == "not_found"
    assert cited["p4-s3:pmid"]["reason"] == reasons["p4-s3:pmid"] != ""

    page = html.unescape((folder / "report.html").read_text())  # however the page escapes
    # flagged citations, then claims (unsupported first), each claim listing its citations
    assert page.index("Needs attention") < page.index("<h2>Claims</h2>")
    claims_part = page[page.index("<h2>Claims</h2>") :]
    supported_text = claims.filter(~pl.col("unsupported"))["claim_text"][0]
    assert claims_part.index(pmid_claim["claim_text"]) < claims_part.index(supported_text)
    assert reasons["p4-s3:pmid"] in claims_part
    markdown = (folder / "report.md").read_text()
    assert f"`p4-s3:pmid` not_found: {reasons['p4-s3:pmid']}" in markdown


def test_a_claim_citing_a_source_the_list_lacks_comes_out_unsupported(registry_env, tmp_path):
    summary = run(tmp_path, CREW_NUMBERED, job="crew-missing")
    folder = Path(summary.out)
    claims = {row["claim_id"]: row for row in pl.read_parquet(folder / "claims.parquet").to_dicts()}
    only_missing, half_missing = claims["p8-s1"], claims["p8-s2"]
    assert only_missing["claim_text"].endswith("[12].") and only_missing["unsupported"]
    assert only_missing["missing_citations"] == ["[12]"] and only_missing["citation_ids"] == []
    assert (only_missing["citation_count"], only_missing["failed_count"]) == (1, 1)
    assert half_missing["missing_citations"] == ["[13]"] and len(half_missing["citation_ids"]) == 1
    assert half_missing["citation_count"] == 2 and half_missing["failed_count"] >= 1
    unsupported = {c.claim_id: c.model_dump() for c in summary.unsupported_claims}
    assert unsupported["p8-s1"]["citations"] == [
        {"entry_key": "[12]", "status": "missing", "reason": MISSING_REASON}
    ]
    markdown = (folder / "report.md").read_text()
    assert f"  - `[13]` missing: {MISSING_REASON}" in markdown  # no registry said not_found
    page = html.unescape((folder / "report.html").read_text())
    assert f'[13]</span> <strong>missing</strong> <span class="reason">{MISSING_REASON}' in page
    errors = pl.read_parquet(folder / "input_errors.parquet")
    assert "cites [12], which the reference list does not have" in errors["reason"].to_list()


@pytest.mark.parametrize("fmt", sorted(AGENT_FILES))
def test_each_agent_format_round_trips_to_parquet_library_and_report(registry_env, tmp_path, fmt):
    path = AGENTS / AGENT_FILES[fmt]
    expected = read_inputs([path])
    summary = run(tmp_path, path, job=f"crew-{fmt}")
    folder = Path(summary.out)
    citations = pl.read_parquet(folder / "citations.parquet")
    assert citations.height == len(expected.references) == summary.citations
    assert sorted(citations["entry_key"]) == sorted(
        r.provenance.entry_key for r in expected.references
    )
    assert citations["status"].null_count() == 0
    claims = pl.read_parquet(folder / "claims.parquet")
    assert sorted(claims["claim_text"]) == sorted(c.claim_text for c in expected.claims)
    with duckdb.connect(str(tmp_path / "citeaudit.duckdb"), read_only=True) as con:
        stored = con.execute(
            "SELECT count(*) FROM citations WHERE job_id = ?", [f"crew-{fmt}"]
        ).fetchone()
    assert stored == (citations.height,)
    text = html.unescape((folder / "report.html").read_text())  # however the page escapes
    for claim in expected.claims:
        assert claim.claim_text in text
    needs_attention = citations.filter((pl.col("status") != "verified") | pl.col("retracted"))
    for key in needs_attention["entry_key"]:
        assert key in text
    assert len(summary.unsupported_claims) == claims.filter(pl.col("unsupported")).height
    # the claims as answers, each citation with its scored confidence and status
    answers = json.loads((folder / "answers.json").read_text())
    assert [a["answer"] for a in answers] == claims["claim_text"].to_list()
    statuses = dict(zip(citations["citation_id"], citations["status"], strict=True))
    for answer, cited in zip(answers, claims["citation_ids"], strict=True):
        assert [c["status"] for c in answer["citations"]] == [statuses[c] for c in cited]
    inline = (folder / "answers.inline.txt").read_text()
    footnotes = (folder / "answers.footnotes.txt").read_text()
    assert all(text in inline and text in footnotes for text in claims["claim_text"])
    listed = (folder / "references.cited.md").read_text()
    if fmt == "rag-context":  # a paper's chunks grouped into page ranges, its local PDF linked
        assert "(pp. 1-3, 5)" in listed and "](file://" in listed


@pytest.mark.parametrize("fmt", ["modelchorus", "clinical"])
def test_cli_audit_reads_agent_output_forced_or_detected_alike(registry_env, tmp_path, fmt):
    path = AGENTS / AGENT_FILES[fmt]
    runner = CliRunner()
    tables = {}
    for job, extra in (("forced", ["--format", fmt]), ("detected", [])):
        out = tmp_path / job
        args = ["audit", str(path), "--job", job, "--out", str(out), "--db", str(out / "db")]
        args += ["--styles", "apa", *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        tables[job] = pl.read_parquet(out / job / "citations.parquet")
    forced, detected = (t.drop("job_id", "checked_at") for t in tables.values())
    assert forced.height == len(read_inputs([path]).references)
    assert forced.equals(detected)


def test_claims_of_two_reports_keep_their_own_citations(registry_env, tmp_path):
    # Both reports number their claims from p1-s1: each claim must be judged on its own source.
    supported, fabricated = tmp_path / "a.md", tmp_path / "b.md"
    supported.write_text(
        "Fat mass tracks body weight [1].\n\n## References\n\n1. doi:10.7717/peerj.10734\n"
    )
    fabricated.write_text("Zinc cures colds [1].\n\n## References\n\n1. PMID: 99999999\n")
    summary = crew_report(
        JobParams(
            inputs=[str(supported), str(fabricated)],
            job_id="two-reports",
            out_dir=str(tmp_path / "out"),
            styles=["apa"],
        )
    )
    claims = pl.read_parquet(Path(summary.out) / "claims.parquet")
    verdict = dict(zip(claims["claim_text"], claims["unsupported"], strict=True))
    assert verdict == {"Fat mass tracks body weight [1].": False, "Zinc cures colds [1].": True}
    assert claims["claim_id"].n_unique() == 2


def test_a_repeated_claim_id_in_one_file_is_read_as_two_claims(tmp_path):
    repeated = tmp_path / "claims.json"
    citation = {"source": "https://doi.org/10.7554/eLife.01567", "location": "p. 1",
                "confidence": 0.9, "snippet": "vascular morphodynamics"}  # fmt: skip
    claim = {"claim_text": "Claim", "strength": 0.5, "citations": [citation]}
    repeated.write_text(json.dumps([{**claim, "claim_id": "c1"}, {**claim, "claim_id": "c1"}]))
    read = read_inputs([repeated])
    assert [c.claim_id for c in read.claims] == ["c1", "c1-2"]
    assert [r.claim_ids for r in read.references] == [["c1"], ["c1-2"]]
    assert [e.entry_key for e in read.errors] == ["claims[1]"]
