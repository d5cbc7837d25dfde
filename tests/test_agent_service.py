"""The agent service (add, validate, format, export, list) against the fake registry over real
HTTP, with a real DuckDB library; and a job built by `add` calls audited by `citeaudit audit`."""

import json
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.agents.service import AgentError, AgentService
from flows.cli.main import app
from tasks.dedupe.job import DEDUPE_COLUMNS, dedupe_added
from tasks.store.library import Library, write_lock
from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at

FRET = "10.1038/srep16696"
TPI = "10.1371/journal.pone.0000030"
GLASER = (
    "Glaser SJ, Schulte-Herbrüggen T, Sieveking M, et al. Unitary control in quantum ensembles: "
    "maximizing signal intensity in coherent spectroscopy. Science (1998) 280:421-424."
)
WRONG_DOI = f"Smith J. A made up paper on things. Journal of Nothing (2020) doi:{TPI}"
ABSENT_PMID = "29424689"


@dataclass
class Built:
    """One job built by add calls (the tests read it; few add to it, none remove)."""

    service: AgentService
    db: Path
    registry: FakeRegistry
    answers: list


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    folder = tmp_path_factory.mktemp("agent")
    with FakeRegistry() as registry, pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(registry, folder).items():
            env.setenv(name, value)
        service = AgentService(db=str(folder / "citeaudit.duckdb"))
        answers = [
            service.add("crew-1", doi=FRET, claim="FRET shows oligomers form", page="45"),
            service.add("crew-1", pmid=ABSENT_PMID),
            service.add("crew-1", reference=WRONG_DOI),
            service.add("crew-1", reference=GLASER),
            service.add("crew-1", doi=TPI),
        ]
        yield Built(service, folder / "citeaudit.duckdb", registry, answers)


def test_an_added_doi_is_accepted_numbered_and_citable_in_text(built):
    answer = built.answers[0]
    cited = answer.data["citation"]
    assert (cited["status"], cited["number"], cited["accepted"]) == ("verified", 1, True)
    assert cited["in_text"] == "(Tosatto et al., 2015, p. 45) [1]"
    assert cited["reference"].startswith("Tosatto, L., Horrocks, M. H.")
    assert cited["completeness"] == 1.0 and cited["claims"] == ["FRET shows oligomers form"]
    assert answer.text.startswith("ACCEPTED [1] verified")
    assert "Use in text as: (Tosatto et al., 2015, p. 45) [1]" in answer.text
    json.dumps(answer.data)  # the structured answer is JSON as it is

    # stored as `citeaudit audit` stores a job: the report command reads it back
    with Library(built.db) as library:
        rows = library.table("citations", "crew-1").sort(pl.col("entry_key").cast(pl.Int64))
        claims = library.table("claims", "crew-1")
    assert rows.select("source_file", "entry_key", "status", "location").row(0) == (
        "agent", "1", "verified", "p. 45"
    )  # fmt: skip
    assert rows["work_id"].null_count() == 0
    assert claims["citation_ids"].to_list() == [[cited["id"]]]
    result = CliRunner().invoke(app, ["report", "crew-1", "--db", str(built.db)])
    assert result.exit_code == 0, result.output
    assert "job crew-1: 5 citations" in result.output


def test_fabricated_and_mismatched_sources_are_rejected_with_the_reason(built):
    absent = built.answers[1].data["citation"]
    assert (absent["status"], absent["accepted"], absent["number"]) == ("not_found", False, None)
    assert absent["reason"] == f"PubMed does not hold PMID {ABSENT_PMID}"
    wrong = built.answers[2]
    assert wrong.data["citation"]["status"] == "mismatch"
    assert wrong.text.startswith("REJECTED mismatch: DOI resolves to a different paper")
    # the work the DOI really names, so the agent sees what it pointed at
    assert wrong.data["citation"]["found_record"].startswith("Ralser, M., Heeren, G.")
    assert "Do not cite this source." in wrong.text
    # a free-text reference matched by search takes the next number
    glaser = built.answers[3].data["citation"]
    assert (glaser["status"], glaser["number"], glaser["in_text"]) == (
        "verified", 2, "(Glaser, 1998) [2]"
    )  # fmt: skip
    # the DOI the mismatched reference misused, given alone, is its own (verified) citation
    assert built.answers[4].data["citation"]["number"] == 3

    listed = built.service.list_citations("crew-1")
    assert [(c["number"], c["status"]) for c in listed.data["citations"]] == [
        (1, "verified"), (None, "not_found"), (None, "mismatch"), (2, "verified"), (3, "verified")
    ]  # fmt: skip
    assert listed.data["counts"]["not_found"] == 1
    assert "rejected (2), do not cite:" in listed.text


def test_adding_a_source_again_answers_with_the_citation_already_there(built):
    again = built.service.add("crew-1", doi=f"https://doi.org/{FRET}", claim="another claim")
    cited = again.data["citation"]
    assert cited["id"] == built.answers[0].data["citation"]["id"] and cited["already_in_job"]
    assert cited["claims"] == ["FRET shows oligomers form", "another claim"]
    assert "(already in the job)" in again.text
    assert len(built.service.list_citations("crew-1").data["citations"]) == 5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "give exactly one of doi, pmid, arxiv, url or reference"),
        ({"doi": FRET, "pmid": "123"}, "give exactly one of doi, pmid, arxiv, url or reference"),
        ({"doi": "nonsense"}, "doi: 'nonsense' is not a DOI"),
        ({"pmid": "abc"}, "pmid: 'abc' is not a PMID"),
        ({"arxiv": "1234"}, "arxiv: '1234' is not an arXiv id"),
        ({"url": "ftp://example.org/x"}, "url: 'ftp://example.org/x' is not an http(s) URL"),
    ],
)
def test_bad_add_arguments_are_one_line_errors(arguments, message):
    with pytest.raises(AgentError) as raised:
        AgentService(offline=True).add("crew-1", **arguments)
    assert str(raised.value) == message


def test_bad_job_style_and_ids_are_one_line_errors(built):
    service = built.service
    with pytest.raises(AgentError, match="invalid job id '../x'"):
        service.add("../x", doi=FRET)
    with pytest.raises(AgentError, match="job crew-9 has no citations yet"):
        service.export("crew-9", format="bibtex")
    for call, message in [
        (lambda: service.format("crew-1", style="nature"), "unknown style 'nature'"),
        (lambda: service.format("crew-1", ids=["7"]), "job crew-1 has no citation '7'"),
        (lambda: service.format("crew-1"), "give the ids"),
        (lambda: service.format("crew-1", ids=["1"], kind="x"), "kind must be"),
        (lambda: service.export("crew-1", format="docx"), "format must be one of"),
    ]:
        with pytest.raises(AgentError, match=message) as raised:
            call()
        assert "\n" not in str(raised.value)


def test_format_and_export_list_accepted_citations_only(built):
    service = built.service
    cited = service.format("crew-1", ids=["[3]", "1", built.answers[1].data["citation"]["id"]],
                           page="12-14", style="ieee")  # fmt: skip
    assert cited.text.splitlines() == [
        "[3, pp. 12–14]",
        "[1, pp. 12–14]",
        f"{built.answers[1].data['citation']['id']}: not citable (not_found: PubMed does not "
        f"hold PMID {ABSENT_PMID})",
    ]
    bibliography = service.format("crew-1", kind="bibliography", style="apa")
    # in the style's order (APA: by author), each with its number
    assert [e["number"] for e in bibliography.data["entries"]] == [2, 3, 1]
    assert bibliography.data["entries"][1]["text"].startswith("Ralser, M.")
    bibtex = service.export("crew-1", format="bibtex")
    assert bibtex.text.count("@article") == 3 and FRET in bibtex.text
    assert [c["status"] for c in bibtex.data["citations"]] == [
        "verified", "not_found", "mismatch", "verified", "verified"
    ]  # fmt: skip
    items = json.loads(service.export("crew-1", format="csljson").text)
    assert len(items) == 3 and FRET in {i.get("DOI", "").lower() for i in items}
    assert service.export("crew-1", format="ris").text.count("TY  - JOUR") == 3


def test_validate_rechecks_every_citation_and_says_what_changed(built, tmp_path):
    db = str(tmp_path / "citeaudit.duckdb")
    AgentService(db=db, out_dir=str(tmp_path / "out"), offline=True).add("crew-2", doi=FRET)
    # with an output folder, each change rewrites the job's folder too
    assert (tmp_path / "out" / "crew-2" / "report.html").is_file()
    assert pl.read_parquet(tmp_path / "out" / "crew-2" / "citations.parquet").height == 1
    offline = AgentService(db=db, offline=True).list_citations("crew-2").data["citations"][0]
    assert (offline["status"], offline["accepted"]) == ("unverified", True)
    assert offline["in_text"] == "[1]"  # nothing to name it by until it is checked
    listed = AgentService(db=db, offline=True).list_citations("crew-2").text
    assert listed.startswith("job crew-2: 1 citation, 0 accepted, 1 held (not validated)")
    # a page number of 100,000 digits names no page: the citation without one
    long_page = AgentService(db=db, offline=True).format("crew-2", ids=["1"], page="9" * 100_000)
    assert long_page.text == "[1]"
    with pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(built.registry, tmp_path).items():
            env.setenv(name, value)
        checked = AgentService(db=db).validate("crew-2")
    assert checked.data["changed"] == [
        {"id": offline["id"], "number": 1, "was": "unverified", "now": "verified"}
    ]
    assert checked.text.startswith("validated 1 citations of job crew-2: 1 verified")


def test_agents_adding_at_once_keep_the_library_and_the_rate_limits(built):
    sources = [{"doi": FRET}, {"doi": "10.1016/j.neurobiolaging.2010.03.024"}]
    sources += [{"pmid": ABSENT_PMID}, {"pmid": "11618220"}]
    with ThreadPoolExecutor(max_workers=len(sources)) as pool:
        answers = list(pool.map(lambda kw: built.service.add("crew-3", **kw), sources))
    stored = built.service.list_citations("crew-3").data["citations"]
    assert sorted(c["id"] for c in stored) == sorted(a.data["citation"]["id"] for a in answers)
    assert sorted(c["number"] for c in stored if c["number"]) == [1, 2, 3]
    assert built.registry.rate_limited() == 0


# What names a row of each library table (the job's row is compared without its timestamps).
ROW_KEYS = {
    "citations": ["job_id", "citation_id"],
    "claims": ["job_id", "claim_id"],
    "dedupe_records": ["job_id", "citation_id"],
    "input_errors": ["job_id", "source_file", "line"],
    "works": ["work_id"],
    "work_links": ["work_id_a", "work_id_b", "kind"],
    "jobs": ["job_id"],
}


def library_rows(db: Path) -> dict[str, pl.DataFrame]:
    with Library(db, read_only=True) as library:
        tables = {name: library.table(name).sort(keys) for name, keys in ROW_KEYS.items()}
    tables["jobs"] = tables["jobs"].drop("created_at", "updated_at")
    return tables


def test_adds_store_only_their_rows_and_leave_what_storing_the_whole_job_leaves(built, tmp_path):
    """Each add writes its own rows (deduped alone when nothing of the job can change); the
    library then holds what re-storing the whole job at once (dedupe, scores, counts) holds."""
    db = tmp_path / "adds.duckdb"
    with pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(built.registry, tmp_path).items():
            env.setenv(name, value)
        service = AgentService(db=str(db))
        service.add("crew-4", doi=FRET, claim="FRET shows oligomers form", page="45")
        service.add("crew-4", doi=TPI)
        service.add("crew-4", reference=GLASER, claim="FRET shows oligomers form")
        service.add("crew-4", pmid=ABSENT_PMID)
        service.add("crew-4", doi=FRET, claim="a second claim")  # again: its claims change
        # the same work again in another form: the job's dedupe may come out otherwise
        tosatto = service.add("crew-4", reference=f"Tosatto L et al. Sci Rep 2015. doi:{FRET}")
        last = service.add("crew-4", doi="10.1016/j.neurobiolaging.2010.03.024")
    listed = {c["id"]: c for c in service.list_citations("crew-4").data["citations"]}
    cited = last.data["citation"]
    assert {k: cited[k] for k in ("reference", "in_text")} == {
        k: listed[cited["id"]][k] for k in ("reference", "in_text")
    }

    whole = tmp_path / "whole.duckdb"
    shutil.copy(db, whole)
    restorer = AgentService(db=str(whole), offline=True)
    with write_lock(whole):
        restorer._store(restorer._load("crew-4"))  # the whole job, as every add did before
    added, stored = library_rows(db), library_rows(whole)
    for name in ROW_KEYS:
        differ = [c for c in added[name].columns if not added[name][c].equals(stored[name][c])]
        assert added[name].equals(stored[name]), (name, differ)
    assert added["citations"].height == 6 and added["claims"].height == 2

    # which adds dedupe alone: a work new to the job does; its work in another form does not
    state = service._load("crew-4")
    by_id = {c.citation_id: c for c in state.checked()}
    with Library(db, read_only=True) as library:
        records = library.dedupe_library()
    for answer, alone in ((last, True), (tosatto, False)):
        cid = answer.data["citation"]["id"]
        others = records.filter(pl.col("citation_id") != f"crew-4/{cid}")
        found = dedupe_added("crew-4", by_id[cid], others)
        assert (found is not None) == alone
        if found is not None:
            row = added["citations"].filter(pl.col("citation_id") == cid)
            assert found.columns.equals(row.select(DEDUPE_COLUMNS))


def test_a_service_keeps_its_registry_clients_for_its_life(registry_env):
    """Agents of one crew call one service: every call uses its one client set, so they share
    one limiter per registry; services given one pool share them too, other services do not."""
    service = AgentService()
    clients = service.registries()
    assert service.registries() is clients
    assert AgentService(pool=service.pool).registries() is clients
    other = AgentService()
    assert other.registries().http["crossref"].limiter is not clients.http["crossref"].limiter
    service.pool.close()
    other.pool.close()


@pytest.mark.usefixtures("prefect_harness")
def test_a_job_built_by_add_audits_alike_with_citeaudit_audit(built, tmp_path):
    """The same sources audited as a list, as the same job in a library of its own, are stored
    alike: verdicts, scores and works (the same work ids) agree row by row."""
    with Library(built.db) as library:
        live = library.table("citations", "crew-1").sort(pl.col("entry_key").cast(pl.Int64))
    listing = tmp_path / "crew.txt"
    listing.write_text("\n".join(live["raw"]) + "\n")  # what the agents gave, one per line
    db = tmp_path / "audit.duckdb"
    args = ["audit", str(listing), "--job", "crew-1", "--out", str(tmp_path / "out")]
    with pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(built.registry, tmp_path).items():
            env.setenv(name, value)
        result = CliRunner().invoke(app, [*args, "--db", str(db), "--styles", "apa"])
    assert result.exit_code == 0, result.output
    with Library(db) as library:
        audited = library.table("citations", "crew-1").sort(pl.col("line"))
    # where each row came from differs, and what the agents added with it (claims, a page)
    whence = {"citation_id", "source_file", "line", "entry_key", "checked_at", "duplicate_of"}
    paged = {"location", "location_score", "confidence", "engine_confidence"}
    same = [c for c in live.columns if c not in whence | paged | {"claim_ids"}]
    differ = [c for c in same if not live[c].equals(audited[c])]
    assert not differ, [(c, live[c].to_list(), audited[c].to_list()) for c in differ]
    unpaged = live["location"].is_null()
    assert (
        live.filter(unpaged)
        .select(paged - {"location"})
        .equals(audited.filter(unpaged).select(paged - {"location"}))
    )
    assert live["status"].to_list() == [
        "verified", "not_found", "mismatch", "verified", "verified"
    ]  # fmt: skip


@pytest.mark.usefixtures("prefect_harness")
def test_a_crew_report_citing_the_added_sources_audits_alike(built, tmp_path):
    """The report the crew writes from what its agents added (a Markdown report with a numbered
    reference list), audited by `citeaudit audit` on the same library: the same statuses."""
    with Library(built.db) as library:
        live = library.table("citations", "crew-1").sort(pl.col("entry_key").cast(pl.Int64))
    cited = [f"PMID: {raw}" if raw.isdigit() else raw for raw in live["raw"]]
    report = tmp_path / "report.md"
    report.write_text(
        "# What the crew found\n\n"
        + " ".join(f"Finding {n} rests on a source [{n}]." for n in range(1, len(cited) + 1))
        + "\n\n## References\n\n"
        + "".join(f"{n}. {raw}\n" for n, raw in enumerate(cited, start=1))
    )
    args = ["audit", str(report), "--job", "crew-report", "--out", str(tmp_path / "out")]
    with pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(built.registry, tmp_path).items():
            env.setenv(name, value)
        result = CliRunner().invoke(app, [*args, "--db", str(built.db), "--styles", "apa"])
    assert result.exit_code == 0, result.output
    with Library(built.db) as library:
        audited = library.table("citations", "crew-report")
        claims = library.table("claims", "crew-report")
    audited = audited.sort(pl.col("entry_key").str.strip_chars("[]").cast(pl.Int64))
    assert audited.height == live.height and claims.height == live.height
    same = ["status", "reason", "matched_id"]
    assert audited.select(same).equals(live.select(same))
