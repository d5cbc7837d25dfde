"""A complete snapshot decides (tasks/lookup/absence.py): each rule on snapshots built by the real
builders from small dumps, and the same reference against a filtered build, which never does."""

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.audit import Identifiers, Provenance, Reference, Status
from models.csl import CSLItem
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.registries.clients import Registries, RegistryPool
from tasks.registries.settings import RegistrySettings
from tasks.snapshots import arxiv, crossref, dblp
from tasks.snapshots.store import build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
DBLP = "dblp@2026-11-02"  # the fixture dump's newest mdate
ARXIV = "arxiv@2024-05-01"
CROSSREF = "crossref@2024-06-01"
AUTHORS = (("Lovelace", "Ada"), ("Babbage", "Charles"))
UNREACHABLE = "http://127.0.0.1:9"


def _arxiv_line(arxiv_id: str, title: str, updated: str) -> str:
    return json.dumps(
        {
            "id": arxiv_id,
            "title": title,
            "authors_parsed": [[f, g, ""] for f, g in AUTHORS],
            "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
            "update_date": updated,
            "doi": None,
            "comments": None,
        }
    )


def _work(doi: str, title: str, year: int) -> dict[str, Any]:
    return {
        "DOI": doi,
        "type": "journal-article",
        "title": [title],
        "author": [{"family": f, "given": g} for f, g in AUTHORS],
        "container-title": ["Journal of Engines"],
        "issued": {"date-parts": [[year]]},
        "indexed": {"date-parts": [[2024, 6, 1]]},
    }


def _dumps(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True)
    lines = [
        _arxiv_line("2301.00001", "Analytical Engines as Preprints", "2024-05-01"),
        _arxiv_line("2302.00002", "Notes on the Difference Engine", "2023-03-01"),
    ]
    (folder / "arxiv.json").write_text("\n".join(lines) + "\n")
    works = [
        _work("10.1234/real.1", "A Real Crossref Work About Engines", 2018),
        _work("10.1234/real.2", "Another Paper Held Under Its Own DOI", 2019),
    ]
    (folder / "crossref").mkdir()
    with gzip.open(folder / "crossref" / "0.json.gz", "wt") as out:
        json.dump({"items": works}, out)
    for name in ("dblp.xml.gz", "dblp.dtd"):
        (folder / name).write_bytes((FIXTURES / name).read_bytes())
    return {"arxiv": folder / "arxiv.json", "crossref": folder / "crossref"}


@pytest.fixture(scope="module")
def complete(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSnapshots]:
    tmp = tmp_path_factory.mktemp("absence")
    dumps = _dumps(tmp / "dumps")
    root = tmp / "snapshots"
    build(arxiv.BUILDER, [dumps["arxiv"]], root)
    build(crossref.builder(), [dumps["crossref"]], root)
    build(dblp.BUILDER, [tmp / "dumps" / "dblp.xml.gz"], root)
    snapshots = LocalSnapshots.open(root)
    assert snapshots is not None
    assert all(s.complete for s in snapshots.works.values())
    yield snapshots
    snapshots.close()


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSnapshots]:
    """The same Crossref works built with `--since`: nothing is left out, yet it is filtered."""
    tmp = tmp_path_factory.mktemp("filtered")
    dumps = _dumps(tmp / "dumps")
    build(crossref.builder(since=2000), [dumps["crossref"]], tmp / "snapshots")
    snapshots = LocalSnapshots.open(tmp / "snapshots")
    assert snapshots is not None and not snapshots.works["crossref"].complete
    yield snapshots
    snapshots.close()


def _ref(
    key: str,
    title: str,
    year: int,
    venue: str | None = None,
    doi: str | None = None,
    arxiv_id: str | None = None,
) -> Reference:
    csl: dict[str, Any] = {
        "id": key,
        "type": "paper-conference",
        "title": title,
        "author": [{"family": f, "given": g} for f, g in AUTHORS],
        "issued": {"date-parts": [[year]]},
    }
    if venue:
        csl["container-title"] = venue
    return Reference(
        citation_id=key,
        provenance=Provenance(source_file="refs.bib", entry_key=key),
        item=CSLItem.from_csl(csl),
        ids=Identifiers(doi=doi, arxiv=arxiv_id),
    )


def test_an_arxiv_id_absent_from_a_complete_snapshot_dated_after_its_month_is_not_found(
    complete: LocalSnapshots,
) -> None:
    refs = [
        _ref("gone", "A Preprint Nobody Posted", 2023, arxiv_id="2302.09999"),
        _ref("later", "A Preprint From After The Dump", 2024, arxiv_id="2405.00003"),
        _ref("held", "Analytical Engines as Preprints", 2023, arxiv_id="2301.00001"),
    ]
    gone, later, held = lookup_references(refs, None, offline=True, snapshots=complete)
    assert (gone.status, gone.registry) == (Status.NOT_FOUND, ARXIV)
    assert "2302.09999" in gone.reason and ARXIV in gone.reason and "complete" in gone.reason
    assert later.status is Status.UNVERIFIED  # the dump's month: it may not have had it yet
    assert held.status is Status.VERIFIED


def test_a_doi_absent_from_a_complete_crossref_of_its_prefix_is_not_found_or_a_mismatch(
    complete: LocalSnapshots,
) -> None:
    refs = [
        _ref("fabricated", "Engines That Never Were", 2019, doi="10.1234/fake.9"),
        _ref("retitled", "Another Paper Held Under Its Own DOI", 2019, doi="10.1234/fake.10"),
        _ref("recent", "Engines That Never Were", 2023, doi="10.1234/fake.11"),
        _ref("other_prefix", "Engines That Never Were", 2019, doi="10.5281/zenodo.1"),
    ]
    fabricated, retitled, recent, other = lookup_references(
        refs, None, offline=True, snapshots=complete
    )
    assert (fabricated.status, fabricated.registry) == (Status.NOT_FOUND, CROSSREF)
    assert "10.1234/fake.9" in fabricated.reason and CROSSREF in fabricated.reason
    assert retitled.status is Status.MISMATCH and retitled.matched_id == "10.1234/real.2"
    assert "10.1234/fake.10" in retitled.reason
    assert recent.status is Status.UNVERIFIED  # within two years: a late registration
    assert other.status is Status.UNVERIFIED  # a prefix Crossref's file does not hold


def test_a_filtered_snapshot_never_proves_absence(filtered: LocalSnapshots) -> None:
    ref = _ref("fabricated", "Engines That Never Were", 2019, doi="10.1234/fake.9")
    [result] = lookup_references([ref], None, offline=True, snapshots=filtered)
    assert result.status is Status.UNVERIFIED


def test_no_identifier_at_a_venue_of_record_is_unmatched_without_a_live_search(
    complete: LocalSnapshots,
) -> None:
    """dblp is the registry of record for NeurIPS: its complete snapshot dated after the year
    claimed not holding the title, no live registry is asked (every one is unreachable here:
    a search would leave the reference unverified)."""
    ref = _ref("invented", "Quantum Llamas Learn Sparse Attention", 2021, venue="NeurIPS")
    urls = ("crossref", "pubmed", "doi", "dblp", "arxiv", "s2", "openalex", "europepmc")
    settings = RegistrySettings.model_validate(
        {**{f"{name}_url": UNREACHABLE for name in urls}, "max_attempts": 1}
    )
    with Registries.from_settings(settings, RegistryPool()) as registries:
        [result] = lookup_references([ref], registries, snapshots=complete)
    assert result.status is Status.UNMATCHED
    assert DBLP in result.reason and "NeurIPS" in result.reason
    assert result.requests == {}


def test_an_arxiv_id_cited_at_a_venue_its_complete_registry_lacks_is_only_a_preprint(
    complete: LocalSnapshots,
) -> None:
    ref = _ref("venue", "Analytical Engines as Preprints", 2023, "NeurIPS", arxiv_id="2301.00001")
    [result] = lookup_references([ref], None, offline=True, snapshots=complete)
    assert result.status is Status.MISMATCH and result.matched_id == "2301.00001"
    assert "only as a preprint" in result.reason and DBLP in result.reason


@pytest.mark.parametrize("doi", [None, "10.1234/real.1"])
def test_a_year_after_next_year_is_flagged_without_any_registry(doi: str | None) -> None:
    ref = _ref("future", "A Real Crossref Work About Engines", 2031, doi=doi)
    [result] = lookup_references([ref], None, offline=True)
    assert result.status is (Status.MISMATCH if doi else Status.UNMATCHED)
    assert "2031" in result.reason
