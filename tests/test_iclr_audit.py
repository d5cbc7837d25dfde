"""The 9 ICLR-2026 bibliographies (609 references, RefChecker's extraction) audited end to end by
the audit_job flow against the fake registry holding RefChecker's recorded Crossref, DBLP,
Semantic Scholar and OpenAlex answers for them (plus arXiv entries derived from those answers).

The fake holds only what RefChecker's queries happened to record, so a real reference may still
come out not_found or unmatched here: the test checks what must hold whatever the coverage, and
the real errors these bibliographies contain."""

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from flows.audit import audit_job
from models.job import JobParams
from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at

FIXTURES = Path(__file__).parent / "fixtures"
BIBLIOGRAPHIES = sorted((FIXTURES / "reflists" / "iclr2026").glob("*.json"))
SERVICES = ("crossref", "pubmed", "doi", "dblp", "arxiv", "s2", "openalex", "europepmc")

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_iclr_bibliographies_are_audited_across_registries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeRegistry(rate_limits=False) as fake:
        fake.set_crossref_limit(10_000, 16)
        fake.set_pubmed_limit(10_000)
        with gzip.open(FIXTURES / "registry" / "iclr_crossref_works.jsonl.gz", "rt") as lines:
            for line in lines:
                fake.add_crossref_work(json.loads(line))
        env = point_env_at(fake, tmp_path)
        env |= {f"CITEAUDIT_{name.upper()}_MAX_RATE": "10000" for name in SERVICES}
        env |= {"S2_API_KEY": "iclr-s2-key", "OPENALEX_API_KEY": "iclr-openalex-key"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        summary = audit_job(
            JobParams(
                inputs=[str(p) for p in BIBLIOGRAPHIES],
                job_id="iclr",
                out_dir=str(tmp_path / "out"),
                styles=["apa"],
            )
        )
    rows = pl.read_parquet(tmp_path / "out" / "iclr" / "citations.parquet")
    assert rows.height == summary.citations == 609
    assert rows["citation_id"].n_unique() == 609

    # Every registry took part, and each row says who decided and who was asked.
    decided = rows.filter(pl.col("registry").is_not_null())
    assert {"crossref", "dblp", "arxiv", "semantic_scholar", "openalex"} <= set(decided["registry"])
    pairs = zip(decided["registry"], decided["registries_asked"], strict=True)
    assert all(registry in asked for registry, asked in pairs)
    assert rows.filter(pl.col("status") == "verified").height >= 0.6 * rows.height

    # not_found only where an identifier was looked up; a reference without one is at worst
    # unmatched, after the registries of its kind were asked.
    ids = ["doi", "pmid", "pmcid", "arxiv"]
    idless = rows.filter(pl.all_horizontal(pl.col(c).is_null() for c in ids))
    assert "not_found" not in set(idless["status"])
    unmatched = idless.filter(pl.col("status") == "unmatched")
    assert unmatched.height and all(r.startswith("asked ") for r in unmatched["reason"])

    # Real errors in these bibliographies: an arXiv id of another paper, a made-up author list.
    by_title = {t: row for t, row in zip(rows["claimed_title"], rows.to_dicts(), strict=True)}
    wrong_id = by_title["Self-rewarding language models"]
    assert wrong_id["status"] == "mismatch" and "different paper" in wrong_id["reason"]
    adam = by_title["Adam: a method for stochastic optimization"]
    assert adam["status"] == "unmatched" and "authors" in adam["reason"]

    metrics = json.loads((tmp_path / "out" / "iclr" / "metrics.json").read_text())
    spent = metrics["requests_per_citation"]
    assert spent["dblp"] > 0 and spent["semantic_scholar"] > 0 and spent["openalex"] > 0
    assert sum(spent.values()) <= 3
