"""Claim support: the MiniLM encoder, pair scoring on real SciFact claims, abstracts from
the registries' own records."""

import gzip
import html
import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from defusedxml import ElementTree

from flows.audit import run_pipeline
from flows.steps import PLAIN
from models.job import JobParams
from tasks.registries.arxiv import arxiv_entry_to_csl
from tasks.registries.crossref_map import crossref_work_to_csl
from tasks.registries.europepmc import europepmc_result_to_csl
from tasks.registries.openalex import abstract_from_inverted_index
from tasks.registries.pubmed_map import pubmed_article_to_csl
from tasks.support import encoder as encoder_module
from tasks.support.relevance import Pair, score_pairs, sentences, shortlist

FIXTURES = Path(__file__).parent / "fixtures"
ATOM_NS = "http://www.w3.org/2005/Atom"
JUDGE_KEY = "sk-judge-secret-4711"
needs_model = pytest.mark.skipif(
    not encoder_module.available(), reason="the support extra is not installed (CI installs it)"
)


def _sample() -> list[dict]:
    lines = (FIXTURES / "support" / "scifact_sample.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def _pair(claim: str, doc: dict) -> Pair:
    return Pair(claim, doc["title"], " ".join(doc["abstract"]))


@needs_model
def test_encoder_reproduces_sentence_transformers() -> None:
    """int8 matrix products move a vector a little (measured: cosine 0.988 at worst); a wrong
    pooling, tokenizer or input falls far below."""
    reference = json.loads((FIXTURES / "support" / "minilm_reference.json").read_text())
    ours = encoder_module.encoder().embed(reference["texts"])
    assert (ours * np.array(reference["embeddings"])).sum(1).min() > 0.98


@needs_model
def test_a_job_without_claims_on_verified_works_loads_no_model() -> None:
    from tasks.support.claims import support_claims

    encoder_module.encoder.cache_clear()
    assert support_claims([], []) == []
    assert encoder_module.encoder.cache_info().currsize == 0


@needs_model
def test_a_model_file_other_than_the_measured_one_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(encoder_module, "ONNX_SHA256", "0" * 64)
    with pytest.raises(encoder_module.SupportUnavailable, match="not the model"):
        encoder_module._model_file()


@needs_model
def test_embedding_does_not_depend_on_the_batch_it_is_in() -> None:
    texts = ["short one here", "a much longer sentence " * 12, "middle length sentence here now"]
    together = encoder_module.encoder().embed(texts)
    alone = np.vstack([encoder_module.encoder().embed([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5


@needs_model
def test_cited_abstracts_are_related_and_random_ones_mostly_not() -> None:
    sample = _sample()
    pairs = [_pair(s["claim"], s["cited"]) for s in sample]
    pairs += [_pair(s["claim"], s["uncited"]) for s in sample]
    scored = score_pairs(pairs, encoder_module.encoder())
    cited, uncited = scored[: len(sample)], scored[len(sample) :]
    assert sum(s.label == "related" for s in cited) >= len(sample) - 1
    assert sum(s.label == "unrelated" for s in uncited) >= 0.8 * len(sample)
    for support, pair in zip(cited, pairs, strict=False):
        assert support.evidence is not None
        assert support.evidence == pair.title or support.evidence in (pair.abstract or "")


@needs_model
def test_a_work_without_abstract_is_undecided_never_unrelated() -> None:
    [support] = score_pairs(
        [Pair("Aspirin lowers fever.", "Aspirin", None)], encoder_module.encoder()
    )
    assert (support.support, support.label, support.evidence) == (None, "no abstract", None)


def test_shortlist_keeps_the_sentences_sharing_the_claims_rare_words_in_order() -> None:
    claim = "ZEB1 represses E-cadherin in the tumour cells."
    candidates = [
        "The study was done in the spring of the year.",  # only common words
        "Tumour cells were grown in culture.",
        "Knocking down ZEB1 restored E-cadherin.",  # ZEB1 is in no English word list: rarest
        "In the cell, the protein is in the nucleus.",
    ]
    assert shortlist(claim, candidates, 2) == [candidates[1], candidates[2]]
    assert shortlist(claim, candidates, 9) == candidates


def test_sentences_split_on_sentence_ends_and_drop_fragments() -> None:
    text = "<jats:p>Methods.</jats:p> We measured 12 mice daily. Results (n = 12) were clear."
    assert sentences(text) == [
        "We measured 12 mice daily.",
        "Results (n = 12) were clear.",
    ]


def test_crossref_abstract_is_plain_text_without_its_heading() -> None:
    works = _jsonl(FIXTURES / "registry" / "crossref_works.jsonl.gz")
    with_abstract = [w for w in works if "<jats:title>" in str(w.get("abstract", ""))]
    assert with_abstract
    for work in with_abstract[:20]:
        abstract = crossref_work_to_csl(work).item.abstract
        assert abstract and "<jats:" not in abstract
        assert not abstract.lower().startswith("abstract")


def test_pubmed_abstract_joins_its_sections() -> None:
    rows = _jsonl(FIXTURES / "registry" / "pubmed_articles.jsonl.gz")
    labelled = next(r for r in rows if "<AbstractText Label=" in r["xml"])
    element = ElementTree.fromstring(labelled["xml"])
    abstract = pubmed_article_to_csl(element).item.abstract
    sections = element.findall(".//AbstractText")
    assert len(sections) > 1 and abstract
    for section in sections:
        assert "".join(section.itertext()).split()[0] in abstract


def test_arxiv_summary_is_the_abstract() -> None:
    rows = _jsonl(FIXTURES / "registry" / "arxiv_entries.jsonl.gz")
    row = next(r for r in rows if "<summary>" in r["xml"])
    feed = ElementTree.fromstring(
        f'<feed xmlns="{ATOM_NS}" xmlns:arxiv="http://arxiv.org/schemas/atom">{row["xml"]}</feed>'
    )
    abstract = arxiv_entry_to_csl(feed[0]).item.abstract
    summary = row["xml"].split("<summary>")[1].split("</summary>")[0]
    assert abstract == " ".join(summary.split())


def test_europepmc_abstract_loses_its_html() -> None:
    result = json.loads((FIXTURES / "support" / "europepmc_core_result.json").read_text())
    abstract = europepmc_result_to_csl(result).item.abstract
    assert abstract and "<" not in abstract and len(abstract) > 200


def test_openalex_inverted_index_is_read_back_in_order() -> None:
    index = {"Despite": [0], "growing": [1], "interest": [2, 6], "in": [3], "Open": [4], "the": [5]}
    assert abstract_from_inverted_index(index) == "Despite growing interest in Open the interest"
    assert abstract_from_inverted_index(None) is None


@needs_model
def test_a_crew_report_shows_which_cited_works_fit_their_claims(
    registry_env, monkeypatch, tmp_path
) -> None:
    """Through the whole pipeline (plain stages, real HTTP to the fake registry): claims.parquet,
    metrics.json and the library carry each pair's support; with the optional judge configured
    (the fake chat endpoint, keyed), its verdicts too, and the strengths stay the same."""
    monkeypatch.setenv("CITEAUDIT_LLM_URL", registry_env.llm_url)
    monkeypatch.setenv("CITEAUDIT_LLM_MODEL", "fake-judge")
    monkeypatch.setenv("CITEAUDIT_LLM_KEY", JUDGE_KEY)
    registry_env.llm_key = JUDGE_KEY
    summary = run_pipeline(
        JobParams(
            inputs=[str(FIXTURES / "support" / "crew_support.md")],
            job_id="support-1",
            out_dir=str(tmp_path / "out"),
        ),
        PLAIN,
    )
    folder = Path(summary.out)
    claims = pl.read_parquet(folder / "claims.parquet")
    by_text = {row["claim_text"]: row for row in claims.iter_rows(named=True)}

    def labels(start: str, field: str = "label") -> list[str]:
        row = next(r for text, r in by_text.items() if text.startswith(start))
        return [pair[field] for pair in row["citation_support"]]

    assert labels("Genetically identical fish") == ["related"]
    assert labels("Carriers of the fragile X") == ["related"]
    assert labels("A growth hormone") == ["related"]
    assert labels("The transformer architecture") == ["unrelated"]
    assert labels("Triose phosphate") == ["no abstract"]
    assert labels("A growth hormone", "verdict") == ["SUPPORT"]
    assert labels("The transformer architecture", "verdict") == ["NOT ENOUGH INFO"]
    assert labels("Triose phosphate", "verdict") == [None]  # no abstract: not asked

    transformer = next(r for t, r in by_text.items() if t.startswith("The transformer"))
    muscle = next(r for t, r in by_text.items() if t.startswith("A growth hormone"))
    assert transformer["unsupported"] and transformer["strength"] == 0.0
    assert transformer["unrelated_count"] == 1
    assert not muscle["unsupported"] and muscle["strength"] > 0.5
    evidence = muscle["citation_support"][0]["evidence"]
    assert "growth hormone secretagogue" in evidence.lower()
    triose = next(r for t, r in by_text.items() if t.startswith("Triose"))
    assert not triose["unsupported"]  # no abstract: undecided, never counted against the claim

    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["claim_support"] == {
        "pairs": 5,
        "related": 3,
        "unrelated": 1,
        "no_abstract": 1,
        "stances": {"supports": 0, "contradicts": 0, "undetermined": 0},
        "verdicts": {"support": 3, "contradict": 0, "not_enough_info": 1, "no_verdict": 0},
    }
    with duckdb.connect(str(tmp_path / "citeaudit.duckdb"), read_only=True) as library:
        stored = library.sql(
            "select sum(unrelated_count) from claims where job_id = 'support-1'"
        ).fetchone()
    assert stored == (1,)
    report = (folder / "report.html").read_text()
    assert "support: unrelated" in report and "judge: NOT ENOUGH INFO" in report
    assert not any(JUDGE_KEY in p.read_text(errors="replace") for p in folder.iterdir())
    assert html.escape(evidence) in report
    assert "cited for something it does not discuss" in (folder / "report.md").read_text()
