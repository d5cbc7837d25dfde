"""Readers of agent-system outputs: ModelChorus, IVCAP tracker, ICE, RAG contexts, clinical agents.

Fixtures in tests/fixtures/agents/ follow each system's documented shape and carry real records
(Crossref/PubMed titles, DOIs, PMIDs, authors); expectations are read from the fixture files.
"""

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from models.audit import ReadResult, Reference
from tasks.identifiers import normalize_doi, normalize_url
from tasks.pages import group_pages
from tasks.read import clinical, ice, ivcap, modelchorus, rag_context
from tasks.read.agent_json import csl_names
from tasks.read.inputs import detect_reader, read_inputs
from tasks.read.text import read_head

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
READERS: tuple[ModuleType, ...] = (modelchorus, ivcap, ice, rag_context, clinical)
GOOD = {
    modelchorus: "modelchorus_claims.json",
    ivcap: "ivcap_store.json",
    ice: "ice_answer.json",
    rag_context: "rag_contexts.json",
    clinical: "clinical_response.json",
}
MALFORMED = {
    modelchorus: "modelchorus_malformed.json",
    ivcap: "ivcap_malformed.json",
    ice: "ice_malformed.json",
    rag_context: "rag_malformed.json",
    clinical: "clinical_malformed.json",
}


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def read(reader: ModuleType, path: Path) -> ReadResult:
    result = reader.read([path])
    assert isinstance(result, ReadResult)
    return result


def by_key(result: ReadResult) -> dict[str, Reference]:
    return {ref.provenance.entry_key: ref for ref in result.references}


def error_keys(result: ReadResult) -> set[str | None]:
    return {error.entry_key for error in result.errors}


# -- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fixtures", [GOOD, MALFORMED], ids=["valid", "malformed"])
def test_each_format_is_detected_by_its_reader_only(fixtures: dict[ModuleType, str]) -> None:
    for owner, name in fixtures.items():
        path = FIXTURES / name
        detected = [r.FORMAT for r in READERS if r.detect(path, read_head(path))]
        assert detected == [owner.FORMAT], name


def test_detection_reads_past_a_head_cut_inside_the_json(tmp_path: Path) -> None:
    claims = load("modelchorus_claims.json") * 20
    path = tmp_path / "crew_report.json"
    path.write_text(json.dumps(claims, indent=2), encoding="utf-8")
    head = read_head(path, 4096)
    assert len(head) < path.stat().st_size  # the sniffed head alone is not valid JSON
    assert modelchorus.detect(path, head)
    assert len(read(modelchorus, path).claims) == len(claims)


def test_plain_csl_json_and_other_json_are_left_to_other_readers(tmp_path: Path) -> None:
    tracked = load("ivcap_store.json")["citations"][0]
    plain = {k: v for k, v in tracked.items() if k not in ivcap.TrackerFields.model_fields}
    csl = tmp_path / "references.json"
    csl.write_text(json.dumps([plain]), encoding="utf-8")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"response": "hi", "citations": []}), encoding="utf-8")
    text = tmp_path / "notes.txt"
    text.write_text("Lin CW et al. Pediatric Neurology 2015.", encoding="utf-8")
    for path in (csl, chat, text):
        assert [r.FORMAT for r in READERS if r.detect(path, read_head(path))] == [], path.name


def test_the_dispatcher_sends_each_agent_file_to_its_reader_and_plain_csl_json_past_them(
    tmp_path: Path,
) -> None:
    for fixtures in (GOOD, MALFORMED):
        for owner, name in fixtures.items():
            path = FIXTURES / name
            assert detect_reader(path, read_head(path)) is owner, name
    tracked = load("ivcap_store.json")["citations"][0]
    plain = {k: v for k, v in tracked.items() if k not in ivcap.TrackerFields.model_fields}
    csl = tmp_path / "references.json"
    csl.write_text(json.dumps([plain]), encoding="utf-8")
    assert detect_reader(csl, read_head(csl)).FORMAT == "csljson"


def test_read_inputs_reads_all_agent_files_as_each_reader_does() -> None:
    paths = [FIXTURES / name for fixtures in (GOOD, MALFORMED) for name in fixtures.values()]
    together = read_inputs(paths)
    for fixtures in (GOOD, MALFORMED):
        for reader, name in fixtures.items():
            alone = read(reader, FIXTURES / name)
            source = str(FIXTURES / name)
            mine = [r for r in together.references if r.provenance.source_file == source]
            assert mine == alone.references, name
            assert [e for e in together.errors if e.source_file == source] == alone.errors


def test_read_inputs_format_forces_a_reader_by_its_name(tmp_path: Path) -> None:
    # A tracker store whose items lost their tracking fields looks like plain CSL-JSON;
    # forcing `ivcap` still reads it as the tracker's store.
    store = load(GOOD[ivcap])
    for item in store["citations"]:
        for key in ivcap.TrackerFields.model_fields:
            item.pop(key, None)
    path = tmp_path / "store.json"
    path.write_text(json.dumps(store), encoding="utf-8")
    assert detect_reader(path, read_head(path)).FORMAT == "csljson"
    forced = read_inputs([path], format=ivcap.FORMAT)
    assert forced.errors == []
    assert [r.provenance.entry_key for r in forced.references] == [
        item["id"] for item in store["citations"]
    ]
    assert all(r.item.model_extra == {"tracker": {}} for r in forced.references)
    for reader in READERS:
        assert read_inputs([FIXTURES / GOOD[reader]], format=reader.FORMAT) == read(
            reader, FIXTURES / GOOD[reader]
        )


# -- forced formats and broken files --------------------------------------------------------------


def test_a_reader_forced_on_another_format_reports_the_file_and_reads_nothing() -> None:
    # A clinical response's citations are CSL-like items (id, title, URL): forced to read them
    # as a tracker store, the IVCAP reader does, which is what forcing a format asks for.
    readable = {(ivcap, clinical)}
    for reader in READERS:
        for owner, name in GOOD.items():
            if owner is reader or (reader, owner) in readable:
                continue
            result = read(reader, FIXTURES / name)
            assert result.references == [] and result.claims == [], (reader.FORMAT, name)
            assert len(result.errors) == 1 and result.errors[0].reason.startswith("not ")


def test_invalid_json_is_one_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n {"claim_id": "c1",\n  "claim_text": }\n]', encoding="utf-8")
    for reader in READERS:
        result = read(reader, path)
        assert not result.references
        [error] = result.errors
        assert error.source_file == str(path) and error.line == 3
        assert error.reason.startswith("not valid JSON")


def test_several_files_are_read_into_one_result() -> None:
    paths = [FIXTURES / GOOD[modelchorus], FIXTURES / MALFORMED[modelchorus]]
    together = modelchorus.read(paths)
    apart = [read(modelchorus, p) for p in paths]
    assert len(together.references) == sum(len(r.references) for r in apart)
    assert {r.provenance.source_file for r in together.references} == {str(p) for p in paths}


# -- ModelChorus ----------------------------------------------------------------------------------


def test_modelchorus_keeps_every_citation_field_and_links_claims() -> None:
    path = FIXTURES / GOOD[modelchorus]
    data = load(GOOD[modelchorus])
    result = read(modelchorus, path)
    assert result.errors == []
    assert [(c.claim_id, c.claim_text, c.stated_strength) for c in result.claims] == [
        (c["claim_id"], c["claim_text"], c["strength"]) for c in data
    ]
    refs = by_key(result)
    for i, claim in enumerate(data):
        for j, citation in enumerate(claim["citations"]):
            ref = refs[f"claims[{i}].citations[{j}]"]
            assert ref.provenance.source_file == str(path)
            assert ref.claim_ids == [claim["claim_id"]]
            assert ref.raw == citation["source"]
            assert ref.location == citation.get("location")
            assert ref.snippet == citation.get("snippet")
            assert ref.stated_confidence == citation["confidence"]
            meta = citation["metadata"]
            assert ref.item.title == meta["title"]
            assert ref.item.year() == int(meta["year"])
            names = meta.get("author") or meta.get("authors")
            family = names[0] if isinstance(names, list) else names
            assert ref.item.first_author_family() == family.split(",")[0].split(" ")[0]


def test_modelchorus_reads_identifiers_from_whatever_source_was_cited() -> None:
    refs = by_key(read(modelchorus, FIXTURES / GOOD[modelchorus]))
    doi_url = refs["claims[0].citations[0]"]
    assert doi_url.ids.doi == "10.7554/elife.01567"
    assert doi_url.item.model_extra == {"modelchorus": {"retrieved_by": "researcher-agent"}}
    file_with_doi = refs["claims[0].citations[1]"]
    assert file_with_doi.ids.doi == "10.1038/srep16696" and file_with_doi.ids.url is None
    article_page = refs["claims[1].citations[0]"]
    assert article_page.ids.doi == "10.1371/journal.pone.0020476"
    assert article_page.item.page == "e20476" and article_page.item.container_title == "PLoS ONE"
    pubmed = refs["claims[1].citations[1]"]
    assert pubmed.ids.pmid == "31789841"
    assert [n.family for n in pubmed.item.author or []] == ["Park", "Konge", "Artino"]
    book = refs["claims[2].citations[0]"]
    assert book.ids.isbn == "9783319539218" and book.item.type == "book"


def test_modelchorus_malformed_entries_are_reported_and_the_rest_read() -> None:
    result = read(modelchorus, FIXTURES / MALFORMED[modelchorus])
    assert list(by_key(result)) == ["claims[0].citations[0]"]
    assert [c.claim_id for c in result.claims] == ["ok-1"]
    assert error_keys(result) == {
        "claims[0].citations[1]",
        "claims[0].citations[2]",
        "claims[0].citations[3]",
        "claims[1]",
        "claims[2]",
        "claims[3]",
    }
    reasons = {e.entry_key: e.reason for e in result.errors}
    assert "confidence" in reasons["claims[0].citations[1]"]
    assert "claim_text" in reasons["claims[1]"]
    assert "strength" in reasons["claims[2]"]


# -- IVCAP tracker --------------------------------------------------------------------------------


def test_ivcap_keeps_csl_and_the_trackers_verdicts_as_claims() -> None:
    data = load(GOOD[ivcap])["citations"]
    result = read(ivcap, FIXTURES / GOOD[ivcap])
    assert result.errors == [] and result.claims == []
    refs = by_key(result)
    assert list(refs) == [item["id"] for item in data]
    for item in data:
        ref = refs[item["id"]]
        tracker = ref.item.model_extra["tracker"]  # type: ignore[index]
        for key in ivcap.TrackerFields.model_fields:
            if key in item and key != "added_at":
                assert tracker[key] == item[key], key
        assert ref.stated_confidence is None  # the tracker's credibility is not our confidence
        assert ref.item.title == item.get("title")
        assert ref.item.container_title == item.get("container_title")
    first = refs[data[0]["id"]]
    assert first.item.year() == data[0]["issued"]["date_parts"][0][0]
    assert first.item.first_author_family() == data[0]["author"][0]["family"]
    assert first.ids.doi == normalize_doi(data[0]["DOI"])
    assert refs[data[1]["id"]].ids.pmid == data[1]["PMID"]
    csl = first.item.to_csl()
    assert csl["container-title"] == data[0]["container_title"] and "citation_number" not in csl


def test_ivcap_malformed_items_are_reported_by_key() -> None:
    result = read(ivcap, FIXTURES / MALFORMED[ivcap])
    assert list(by_key(result)) == ["good"]
    assert error_keys(result) == {"bad-score", "bad-validated", "bad-author", "citations[4]"}


# -- ICE ------------------------------------------------------------------------------------------


def test_ice_sources_are_kept_and_non_scholarly_ones_marked() -> None:
    data = load(GOOD[ice])
    sources = data["source_metadata"]["enriched_sources"]
    result = read(ice, FIXTURES / GOOD[ice])
    assert result.errors == []
    [claim] = result.claims
    assert claim.claim_text == data["answer"] and claim.stated_strength == data["confidence"]
    refs = by_key(result)
    for i, source in enumerate(sources):
        ref = refs[f"enriched_sources[{i}]"]
        assert ref.claim_ids == [claim.claim_id]
        assert ref.stated_confidence == source["confidence"]
        assert ref.item.title == source["label"]
        kept = ref.item.model_extra["ice"]  # type: ignore[index]
        assert kept == {k: v for k, v in source.items() if v is not None}
        scholarly = source["source"] == "research"
        assert ref.scholarly is scholarly, source["source"]
    mail = refs["enriched_sources[0]"]
    assert mail.item.URL is None and mail.ids.any() is False  # mailto is never a link we render
    assert refs["enriched_sources[1]"].item.issued.date_parts == [[2025, 10, 29]]  # type: ignore[union-attr]
    assert refs["enriched_sources[3]"].ids.doi == normalize_doi(sources[3]["link"])


def test_ice_malformed_sources_are_reported_and_the_kind_inferred_from_the_label() -> None:
    result = read(ice, FIXTURES / MALFORMED[ice])
    [mail] = result.references
    assert mail.item.type == "personal_communication" and mail.scholarly is False
    assert mail.item.title == "BABA Q1 2026 June Qtr Earnings.eml"
    assert error_keys(result) == {
        "enriched_sources[1]",
        "enriched_sources[2]",
        "enriched_sources[3]",
    }


# -- RAG contexts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pages", "grouped"),
    [([7, 1, 2, 3, 5, 9, 8], "1-3, 5, 7-9"), ([4], "4"), ([2, 2, 0, 3], "2-3"), ([], "")],
)
def test_group_pages(pages: list[int], grouped: str) -> None:
    assert group_pages(pages) == grouped


def test_rag_contexts_merge_into_one_reference_per_paper() -> None:
    path = FIXTURES / GOOD[rag_context]
    contexts = load(GOOD[rag_context])
    result = read(rag_context, path)
    assert result.errors == []
    papers = {r.item.id: r for r in result.references}
    names = {s.split(" - ")[0] for c in contexts for s in c["sources"]}
    assert set(papers) == names
    for name, ref in papers.items():
        at = [(c, i) for c in contexts for i, s in enumerate(c["sources"]) if s.startswith(name)]
        pages = [c["pages"][i] for c, i in at]
        scores = [c["scores"][i] for c, i in at]
        best = max(at, key=lambda ci: ci[0]["scores"][ci[1]])
        assert ref.raw == name
        assert ref.snippet == best[0]["chunks"][best[1]]
        assert ref.stated_confidence == max(scores)
        assert ref.location is not None and group_pages(pages) in ref.location
        assert ("whole paper" in ref.location) is (0 in pages)
        kept = ref.item.model_extra["rag"]  # type: ignore[index]
        assert kept["scores"] == scores and kept["chunks"] == len(at)
        full = Path(at[0][0]["full_paths"][at[0][1]])
        link = ref.item.URL
        assert link == (full if full.is_absolute() else path.parent / full).resolve().as_uri()
    assert papers["sankar2014_histology.pdf"].location == "pp. 1-3, 5"
    assert papers["sankar2014_histology.pdf"].provenance.entry_key == "contexts[0].sources[0]"


def test_rag_doi_comes_from_file_name_or_first_page_else_none() -> None:
    papers = {r.item.id: r for r in read(rag_context, FIXTURES / GOOD[rag_context]).references}
    from_name = papers["10.1038_srep16696.pdf"]
    assert from_name.ids.doi == "10.1038/srep16696"
    assert from_name.item.model_extra["rag"]["doi_found_in"] == "file name"  # type: ignore[index]
    from_pdf = papers["sankar2014_histology.pdf"]  # the committed PDF prints its DOI on page 1
    assert from_pdf.ids.doi == "10.7554/elife.01567"
    assert from_pdf.item.model_extra["rag"]["doi_found_in"] == "first page"  # type: ignore[index]
    assert not papers["lee2012_ucb_msc.pdf"].ids.any()


def test_rag_paper_without_its_pdf_stays_without_identifiers(tmp_path: Path) -> None:
    moved = tmp_path / "context.json"
    shutil.copy(FIXTURES / GOOD[rag_context], moved)  # the papers/ folder stays behind
    papers = {r.item.id: r for r in read(rag_context, moved).references}
    assert not papers["sankar2014_histology.pdf"].ids.any()
    link = papers["sankar2014_histology.pdf"].item.URL
    assert link == (tmp_path / "papers" / "sankar2014_histology.pdf").as_uri()


def test_rag_broken_pdf_is_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "sankar2014_histology.pdf").write_bytes(b"%PDF-1.4\nnot really")
    shutil.copy(FIXTURES / GOOD[rag_context], tmp_path / "context.json")
    result = read(rag_context, tmp_path / "context.json")
    assert result.errors == [] and len(result.references) == 3


def test_rag_malformed_contexts_and_chunks_are_reported() -> None:
    result = read(rag_context, FIXTURES / MALFORMED[rag_context])
    [paper] = result.references
    assert paper.item.id == "arya2003_losses.pdf" and paper.location == "pp. 9"
    assert error_keys(result) == {
        "contexts[0]",
        "contexts[1].sources[0]",
        "contexts[1].sources[1]",
        "contexts[2]",
    }


# -- clinical AgentResponse -----------------------------------------------------------------------


def test_clinical_citations_are_deduplicated_by_url_then_title_and_domain() -> None:
    data = load(GOOD[clinical])
    result = read(clinical, FIXTURES / GOOD[clinical])
    assert result.errors == []
    refs = {r.item.id: r for r in result.references}
    cited = [c for c in data["citations"]] + [
        c for h in data["highlights"] for c in h["citations"] if isinstance(c, dict)
    ]
    distinct_urls = {normalize_url(c["url"]) for c in cited if c["url"]}
    assert len(refs) == len(distinct_urls)  # the one URL-less citation merged by title + domain
    prime = refs["prime_2020_family"]
    merged = prime.item.model_extra["clinical"]["merged"]  # type: ignore[index]
    assert [m["id"] for m in merged] == ["prime_2020_family_dup"]
    who = refs["who_dementia"]
    assert [m["id"] for m in who.item.model_extra["clinical"]["merged"]] == [  # type: ignore[index]
        "who_dementia_mirror"
    ]


def test_clinical_keeps_every_field_and_is_trusted_only_as_a_claim() -> None:
    data = load(GOOD[clinical])
    refs = {r.item.id: r for r in read(clinical, FIXTURES / GOOD[clinical]).references}
    for citation in data["citations"][:2] + data["citations"][3:4]:
        ref = refs[citation["id"]]
        kept = ref.item.model_extra["clinical"]  # type: ignore[index]
        for key in ("source", "source_type", "url", "domain", "is_trusted", "access_date"):
            assert kept[key] == citation[key], key
        assert ref.item.title == citation["title"]
        link = ref.item.URL
        assert link == citation["url"]
        assert ref.snippet == citation.get("snippet")
        assert ref.stated_confidence == citation["relevance_score"]
        assert ref.item.accessed is not None and ref.item.accessed.year() == 2024
    assert refs["prime_2020_family"].ids.pmid == "32437181"
    assert refs["prime_2020_family"].item.container_title == "The American Psychologist"
    assert refs["delphi_review"].ids.doi == "10.1371/journal.pone.0020476"
    assert refs["who_dementia"].scholarly is False and refs["who_dementia"].item.type == "webpage"
    assert refs["who_dementia"].item.publisher == "World Health Organization"


def test_clinical_highlights_become_claims_linked_to_their_citations() -> None:
    data = load(GOOD[clinical])
    result = read(clinical, FIXTURES / GOOD[clinical])
    assert [(c.claim_text, c.stated_strength) for c in result.claims] == [
        (h["point"], h["confidence"]) for h in data["highlights"]
    ]
    refs = {r.item.id: r for r in result.references}
    for claim, highlight in zip(result.claims, data["highlights"], strict=True):
        for cited in highlight["citations"]:
            cited_id = cited["id"] if isinstance(cited, dict) else cited
            ref = refs.get(cited_id) or next(
                r
                for r in result.references
                if cited_id in [m["id"] for m in r.item.model_extra["clinical"].get("merged", [])]  # type: ignore[index]
            )
            assert ref.claim_ids.count(claim.claim_id) == 1
    inline = refs["park_2020_positivism"]
    assert inline.provenance.entry_key == "highlights[2].citations[0]"
    assert inline.ids.pmid == "31789841"


def test_clinical_malformed_entries_are_reported_and_the_rest_read() -> None:
    result = read(clinical, FIXTURES / MALFORMED[clinical])
    [ref] = result.references
    assert ref.item.id == "iwasa_2020" and ref.claim_ids == ["highlight-1"]
    assert error_keys(result) == {
        "citations[1]",
        "citations[2]",
        "highlights[0].citations[1]",
        "highlights[1]",
    }
    assert (
        "ghost_citation"
        in {e.entry_key: e.reason for e in result.errors}["highlights[0].citations[1]"]
    )


@pytest.mark.parametrize(
    "written",
    [
        "Ralser M; Heeren G; et al.",
        "Ralser M and Heeren G et al",
        "Ralser, Markus and Heeren, Gino and others",
        ["Ralser M", "Heeren G", "et al."],
        [{"family": "Ralser"}, {"family": "Heeren"}, {"literal": "et al."}],
        "Ralser M, Heeren G, et al.",  # PubMed style: commas between names
    ],
)
def test_agent_authors_keep_et_al_as_the_lists_last_name(written: Any) -> None:
    names = csl_names(written) or []
    assert [n.family for n in names[:-1]] == ["Ralser", "Heeren"]
    assert names[-1].literal == "others" and names[-1].is_et_al()
    assert csl_names("et al.") is None
    assert not any(n.is_et_al() for n in csl_names("Ralser M; Heeren G") or [])


def test_pubmed_style_author_strings_are_split_into_names() -> None:
    names = csl_names("Alkutbe RB, Alruban A, Alturki H") or []
    assert [(n.family, n.given) for n in names] == [
        ("Alkutbe", "RB"), ("Alruban", "A"), ("Alturki", "H"),
    ]  # fmt: skip
    assert [(n.family, n.given) for n in csl_names("Alkutbe, Rabab B.") or []] == [
        ("Alkutbe", "Rabab B.")
    ]
