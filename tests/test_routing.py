"""Routing across registries (tasks/lookup/) over real HTTP to
the fake registry: identifiers to their registry, titles to the registries of their kind, the
first that verifies decides, preprints cited as published, registries that cannot be asked."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from models.audit import Checked, Identifiers, Provenance, Reference, Status
from models.csl import CSLDate, CSLItem, CSLName
from tasks.frames import citations_frame, result_from_row
from tasks.lookup import lookup_references
from tasks.registries.clients import Registries, RegistryPool
from tests.fake_registry import FakeRegistry

TITLE = "Attention Is All You Need"
AUTHORS = [("Ashish", "Vaswani"), ("Noam", "Shazeer"), ("Niki", "Parmar")]
FAST = {f"{name}_max_rate": 1000.0 for name in ("dblp", "arxiv", "s2", "europepmc")}
UNRELATED_WORK = {
    "DOI": "10.5555/unrelated",
    "type": "journal-article",
    "title": ["Soil moisture in alpine meadows"],
    "author": [{"given": "A", "family": "Gardener"}],
    "issued": {"date-parts": [[2001]]},
}


@pytest.fixture
def fake() -> Iterator[FakeRegistry]:
    with FakeRegistry.empty(rate_limits=False) as registry:
        # Crossref's search always ranks something: an empty answer would be unusable.
        registry.add_crossref_work(UNRELATED_WORK)
        yield registry


def registries_for(fake: FakeRegistry, **options: Any) -> Registries:
    settings = {"max_attempts": 2, "backoff_base_s": 0.01, "s2_api_key": None, **FAST, **options}
    return Registries.from_settings(fake.settings(**settings), RegistryPool())


def dblp_hit(venue: str, key: str = "conf/nips/VaswaniSPUJGKP17") -> dict[str, Any]:
    people = [{"@pid": str(n), "text": f"{g} {f} 0001"} for n, (g, f) in enumerate(AUTHORS)]
    info = {"authors": {"author": people}, "title": f"{TITLE}.", "venue": venue, "year": "2017"}
    return {"info": {**info, "type": "Conference and Workshop Papers", "key": key}}


def arxiv_entry(arxiv_id: str = "1706.03762") -> str:
    names = "".join(f"<author><name>{g} {f}</name></author>" for g, f in AUTHORS)
    return (
        f"<entry><id>http://arxiv.org/abs/{arxiv_id}v7</id><title>{TITLE}</title>"
        f"<published>2017-06-12T17:57:34Z</published>{names}</entry>"
    )


def s2_paper(paper_id: str, venue: str, **external: str) -> dict[str, Any]:
    return {
        "paperId": paper_id,
        "title": TITLE,
        "authors": [{"name": f"{g} {f}"} for g, f in AUTHORS],
        "year": 2017,
        "venue": venue,
        "externalIds": external,
    }


def cited(key: str = "vaswani", ids: Identifiers | None = None, **fields: Any) -> Reference:
    item = {
        "id": key,
        "type": "paper-conference",
        "title": TITLE,
        "author": [CSLName(given=g, family=f) for g, f in AUTHORS],
        "issued": CSLDate.from_year(2017),
        "container-title": "Advances in Neural Information Processing Systems",
        **fields,
    }
    return Reference(
        citation_id=key,
        item=CSLItem.model_validate(item),
        provenance=Provenance(source_file="refs.bib", entry_key=key),
        ids=ids or Identifiers(),
    )


def test_a_cs_paper_is_verified_by_dblp_alone(fake: FakeRegistry) -> None:
    fake.scholarly.add_dblp_hit(dblp_hit("NeurIPS"))
    with registries_for(fake) as registries:
        [result] = lookup_references([cited()], registries)
    assert result.status is Status.VERIFIED, result.reason
    assert (result.registry, result.matched_id) == ("dblp", "conf/nips/VaswaniSPUJGKP17")
    assert result.asked == ["dblp"] and result.requests == {"dblp": 1.0}
    assert fake.counts() == {"dblp_search": 1}


def test_the_next_registry_is_asked_only_while_nothing_decided(fake: FakeRegistry) -> None:
    fake.scholarly.add_arxiv_entry(arxiv_entry())
    fake.scholarly.add_s2_paper(
        s2_paper("204e3073870f", "Neural Information Processing Systems", ArXiv="1706.03762")
    )
    with registries_for(fake) as registries:
        [result] = lookup_references([cited()], registries)
    assert result.status is Status.VERIFIED and result.registry == "semantic_scholar"
    assert result.asked == ["dblp", "semantic_scholar"]
    assert fake.count("arxiv_search") == 0 and fake.count("works_query") == 0


def test_a_doi_naming_another_paper_comes_with_the_work_its_title_names(
    fake: FakeRegistry, tmp_path: Path
) -> None:
    fake.scholarly.add_dblp_hit(dblp_hit("NeurIPS"))
    wrong_doi = cited(ids=Identifiers(doi=UNRELATED_WORK["DOI"]))
    with registries_for(fake) as registries:
        [result] = lookup_references([wrong_doi], registries)
    assert result.status is Status.MISMATCH  # the identifier still names another paper
    assert result.matched_id == "10.5555/unrelated"
    assert result.suggested is not None
    assert (result.suggested.registry, result.suggested.identifier) == (
        "dblp",
        "conf/nips/VaswaniSPUJGKP17",
    )
    assert "the title cited is dblp record conf/nips/VaswaniSPUJGKP17" in result.reason
    assert result.requests["dblp"] == 1.0  # the search counts against the citation
    path = tmp_path / "citations.parquet"
    citations_frame("job", [Checked(reference=wrong_doi, result=result)]).write_parquet(path)
    (row,) = pl.read_parquet(path).iter_rows(named=True)
    assert (row["suggested_registry"], row["suggested_title"]) == ("dblp", TITLE)
    assert result_from_row(row).suggested == result.suggested


def test_no_work_is_suggested_when_the_cited_title_matches_nothing(fake: FakeRegistry) -> None:
    wrong_doi = cited(ids=Identifiers(doi=UNRELATED_WORK["DOI"]))
    with registries_for(fake, registries="crossref,dblp") as registries:
        [result] = lookup_references([wrong_doi], registries)
    assert result.status is Status.MISMATCH and result.suggested is None
    # One search, in the registry first in line for a CS paper; Crossref is not searched.
    assert fake.count("dblp_search") == 1 and fake.count("works_query") == 0


def test_a_preprint_cited_as_published_is_a_venue_mismatch(fake: FakeRegistry) -> None:
    fake.scholarly.add_arxiv_entry(arxiv_entry())
    claimed_cvpr = cited(ids=Identifiers(arxiv="1706.03762"), **{"container-title": "CVPR"})
    without_id = cited("no-id", **{"container-title": "CVPR"})
    with registries_for(fake) as registries:
        result, searched = lookup_references([claimed_cvpr, without_id], registries)
    assert result.status is Status.MISMATCH, result.reason
    assert result.registry == "arxiv" and result.matched_id == "1706.03762"
    assert "only as a preprint" in result.reason and "'CVPR'" in result.reason
    assert result.asked == ["arxiv", "dblp", "semantic_scholar", "crossref"]
    # Without the id, arXiv is not searched for a CS venue's paper: a preprint proves no venue.
    assert searched.status is Status.UNMATCHED and "arxiv" not in searched.asked


def test_the_same_preprint_cited_as_a_preprint_is_verified(fake: FakeRegistry) -> None:
    fake.scholarly.add_arxiv_entry(arxiv_entry())
    as_preprint = cited(**{"container-title": "arXiv preprint arXiv:1706.03762"})
    with registries_for(fake) as registries:
        [result] = lookup_references([as_preprint], registries)
    assert result.status is Status.VERIFIED and result.registry == "arxiv"


def test_arxiv_ids_are_asked_in_one_batch(fake: FakeRegistry) -> None:
    fake.scholarly.add_arxiv_entry(arxiv_entry())
    refs = [
        cited("held", Identifiers(arxiv="1706.03762"), **{"container-title": "arXiv"}),
        cited("made-up", Identifiers(arxiv="1706.99999"), **{"container-title": "arXiv"}),
    ]
    with registries_for(fake) as registries:
        held, made_up = lookup_references(refs, registries)
    assert fake.count("arxiv_ids") == 1
    assert held.status is Status.VERIFIED and held.requests == {"arxiv": 0.5}
    assert made_up.status is Status.NOT_FOUND
    assert made_up.reason == "arXiv does not hold arXiv:1706.99999"


def test_a_pmcid_is_checked_at_europe_pmc(fake: FakeRegistry) -> None:
    fake.scholarly.add_europepmc_result(
        {
            "id": "PMC3301002",
            "source": "PMC",
            "pmcid": "PMC3301002",
            "title": "Fluoride varnish for caries prevention in children.",
            "authorString": "Marinho VC, Worthington HV.",
            "pubYear": "2012",
            "journalInfo": {"journal": {"title": "BMJ"}},
        }
    )
    ref = cited(
        "pmc",
        Identifiers(pmcid="PMC3301002"),
        title="Fluoride varnish for caries prevention in children",
        author=[CSLName(given="V", family="Marinho"), CSLName(given="H", family="Worthington")],
        issued=CSLDate.from_year(2012),
        **{"container-title": "BMJ"},
    )
    with registries_for(fake) as registries:
        [result] = lookup_references([ref], registries)
    assert result.status is Status.VERIFIED, result.reason
    assert (result.registry, result.asked) == ("europepmc", ["europepmc"])


def test_a_registry_down_leaves_the_decision_to_the_others(fake: FakeRegistry) -> None:
    fake.inject_fault("server_error", service="dblp", rate=1.0)
    fake.scholarly.add_arxiv_entry(arxiv_entry())
    as_preprint = cited(**{"container-title": "arXiv"})
    with registries_for(fake) as registries:
        verified, nobody_holds = lookup_references(
            [as_preprint, cited("x", title="A made-up study of things")], registries
        )
    assert verified.status is Status.VERIFIED and verified.registry == "arxiv"
    # DBLP could have held the second: it cannot be called unmatched while DBLP is down.
    assert nobody_holds.status is Status.UNVERIFIED
    assert "dblp" in nobody_holds.reason and nobody_holds.error


def test_an_unanswered_doi_is_answered_by_semantic_scholar(fake: FakeRegistry) -> None:
    fake.inject_fault("unavailable", service="crossref", rate=1.0)
    fake.scholarly.add_s2_paper(s2_paper("abc123", "NeurIPS", DOI="10.5555/attention"))
    with registries_for(fake, backoff_cap_s=0.05) as registries:
        [result] = lookup_references([cited(ids=Identifiers(doi="10.5555/attention"))], registries)
    assert result.status is Status.VERIFIED and result.registry == "semantic_scholar"
    assert result.asked == ["crossref", "semantic_scholar"]


def test_an_unanswered_doi_is_answered_by_openalex_before_semantic_scholar(
    fake: FakeRegistry,
) -> None:
    fake.inject_fault("unavailable", service="crossref", rate=1.0)
    fake.scholarly.add_openalex_work(
        {
            "id": "https://openalex.org/W2963403868",
            "doi": "https://doi.org/10.5555/attention",
            "display_name": TITLE,
            "type": "article",
            "publication_year": 2017,
            "authorships": [{"author": {"display_name": f"{g} {f}"}} for g, f in AUTHORS],
            "primary_location": {
                "source": {"display_name": "Neural Information Processing Systems"}
            },
        }
    )
    fake.scholarly.add_s2_paper(s2_paper("abc123", "NeurIPS", DOI="10.5555/attention"))
    with registries_for(fake, backoff_cap_s=0.05, openalex_api_key="oa-key") as registries:
        [result] = lookup_references([cited(ids=Identifiers(doi="10.5555/attention"))], registries)
    assert result.status is Status.VERIFIED and result.registry == "openalex", result.reason
    assert result.asked == ["crossref", "openalex"]  # decided: Semantic Scholar not asked
    assert fake.count("openalex_dois") == 1 and fake.count(service="s2") == 0


def test_only_the_selected_registries_are_asked(fake: FakeRegistry) -> None:
    fake.scholarly.add_dblp_hit(dblp_hit("NeurIPS"))
    with registries_for(fake, registries="crossref") as registries:
        [result] = lookup_references([cited()], registries)
    assert result.status is Status.UNMATCHED and result.asked == ["crossref"]
    assert fake.count("dblp_search") == 0


def test_citeaudit_registries_says_what_is_asked_and_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    from flows.cli.main import app

    monkeypatch.setenv("S2_API_KEY", "s2-secret-value-123")
    monkeypatch.delenv("OPENALEX_API_KEY", raising=False)
    monkeypatch.setenv("CITEAUDIT_REGISTRIES", "crossref,s2,openalex")
    shown = CliRunner().invoke(app, ["registries"])
    assert shown.exit_code == 0, shown.output
    rows = registry_blocks(shown.output)
    assert rows["semantic_scholar"].split()[1] == "asked"
    assert "S2_API_KEY set" in rows["semantic_scholar"]
    assert "not asked: no OPENALEX_API_KEY" in rows["openalex"]
    assert "not asked: not in CITEAUDIT_REGISTRIES" in rows["dblp"]
    assert "s2-secret-value-123" not in shown.output
    monkeypatch.setenv("CITEAUDIT_REGISTRIES", "crossref,dlbp")
    refused = CliRunner().invoke(app, ["registries"])
    assert refused.exit_code == 2 and "unknown registry dlbp" in refused.output


def registry_blocks(output: str) -> dict[str, str]:
    """`citeaudit registries` per registry: the line naming it and the indented lines under it."""
    blocks: dict[str, str] = {}
    for line in output.splitlines():
        if line[:1].strip():
            name = line.split()[0]
            blocks[name] = line
        elif line.strip():
            blocks[name] += "\n" + line
    return blocks


def test_citeaudit_registries_fits_an_80_column_terminal() -> None:
    from tasks.registries.settings import REGISTRY_NAMES, RegistrySettings

    env = {k: v for k, v in os.environ.items() if k not in ("OPENALEX_API_KEY", "S2_API_KEY")}
    env.update(COLUMNS="80", CITEAUDIT_REGISTRIES="")
    shown = subprocess.run(
        [sys.executable, "-m", "flows.cli", "registries"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80, shown.stdout
    rows = registry_blocks(shown.stdout)
    settings = RegistrySettings()
    for name, url in [("pubmed", settings.pubmed_url), ("europepmc", settings.europepmc_url)]:
        assert url in rows[name].split(), rows[name]  # a URL whole, never folded
    lines = [line.strip() for line in rows["openalex"].splitlines()]
    assert "not asked: no OPENALEX_API_KEY (OpenAlex requires a key)" in lines[0]
    assert "S2_API_KEY not set" in rows["semantic_scholar"]
    assert all(f"{name}," in shown.stdout for name in REGISTRY_NAMES[:-1])
    assert f"{REGISTRY_NAMES[-1]}." in shown.stdout  # the names to choose from, whole


@pytest.mark.parametrize(
    ("fields", "url", "kind"),
    [
        ({"container-title": "ICLR"}, None, "cs"),
        ({"container-title": "J. Mach. Learn. Res."}, None, "cs"),
        ({"container-title": None}, "https://openreview.net/forum?id=abc", "cs"),
        ({"container-title": None}, "https://aclanthology.org/2023.acl-long.1", "cs"),
        ({"container-title": None}, "https://example.org/paper", "other"),
        ({"container-title": "arXiv preprint arXiv:2401.00001"}, None, "preprint"),
        ({"container-title": "bioRxiv"}, None, "biomedical"),
        ({"container-title": "The Lancet"}, None, "biomedical"),
        ({"container-title": "Journal of Economic Theory"}, None, "other"),
    ],
)
def test_kind_of_work_decides_the_registries_searched(
    fields: dict[str, str | None], url: str | None, kind: str
) -> None:
    from tasks.lookup.routing import kind_of

    ref = cited(title="A study of things", **fields)
    ref.ids = Identifiers(url=url)
    assert kind_of(ref) == kind
