"""The pubmed snapshot from baseline and update files in PubMed's own format
(tests/fixtures/snapshots/pubmed, built by tests/fake_registry/build_snapshot_fixtures.py)."""

import gzip
import shutil
from pathlib import Path

import pytest

from models.audit import Identifiers, Provenance, Reference, Status
from models.csl import CSLItem
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.snapshots import pubmed
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.store import SnapshotFormatError, build
from tests.fake_registry.build_snapshot_fixtures import PUBMED_DELETED, PUBMED_REVISED

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots" / "pubmed"
BASELINE = ("pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz")
UPDATE = "pubmed26n0003.xml.gz"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pubmed") / "snapshots"
    build(pubmed.BUILDER, [FIXTURES], root)
    return root


def _rows(snap: Snapshot, pmid: str) -> list[dict]:
    return snap.by_ids([("pmid", pmid)])[("pmid", pmid)]


def test_the_baseline_and_its_update_a_record_revised_and_one_deleted(root: Path) -> None:
    snap = open_snapshot(root, "pubmed")
    assert snap is not None
    with snap:
        manifest = snap.manifest
        assert (manifest.records, manifest.skipped) == (39, 1)  # 40, one deleted; one broken
        assert manifest.complete and manifest.date == "2026-11-20"  # the revision's DateRevised
        assert _rows(snap, PUBMED_DELETED) == []
        [revised] = _rows(snap, PUBMED_REVISED)
        assert revised["updates"][0]["type"] == "retraction"
        assert revised["updates"][0]["doi"] == "39999999"  # the notice's PMID
        [first] = _rows(snap, "9997")
        assert first["title"].startswith("Magnetic studies of Chromatium flavocytochrome C552")
        assert first["authors"] and first["year"] == 1976
        assert first["container"] == "Biochimica et biophysica acta"
        assert first["pages"] == "179-191"  # MEDLINE's 179-91, as the live client expands it
        assert manifest.highest_pmid == max(int(r["pmid"]) for r in _all(snap))


def _all(snap: Snapshot) -> list[dict]:
    return list(snap._records(set(range(snap.manifest.records))).values())


def test_update_files_applied_to_the_baseline_give_what_a_full_build_gives(
    root: Path, tmp_path: Path
) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for name in BASELINE:
        shutil.copy(FIXTURES / name, inputs / name)
    build(pubmed.BUILDER, [inputs], tmp_path / "snapshots")
    applied = build(pubmed.BUILDER, [FIXTURES / UPDATE], tmp_path / "snapshots", extend=True)
    full = open_snapshot(root, "pubmed")
    incremental = open_snapshot(tmp_path / "snapshots", "pubmed")
    assert full is not None and incremental is not None
    with full, incremental:
        assert applied.records == full.manifest.records and applied.date == full.manifest.date
        assert sorted(map(str, _all(incremental))) == sorted(map(str, _all(full)))


@pytest.mark.parametrize("broken", ["truncated", "other_root"])
def test_a_file_that_is_not_whole_pubmed_xml_fails_naming_it(broken: str, tmp_path: Path) -> None:
    path = tmp_path / "pubmed26n0009.xml.gz"
    whole = gzip.decompress((FIXTURES / BASELINE[0]).read_bytes())
    body = whole[: len(whole) // 2] if broken == "truncated" else b"<Other><PubmedArticle/></Other>"
    path.write_bytes(gzip.compress(body))
    with pytest.raises(SnapshotFormatError, match="pubmed26n0009.xml.gz"):
        build(pubmed.BUILDER, [path], tmp_path / "snapshots")
    assert not (tmp_path / "snapshots" / "pubmed").exists()


def test_a_pmid_absent_from_the_complete_snapshot_below_its_highest_is_not_found(
    root: Path,
) -> None:
    snapshots = LocalSnapshots.open(root)
    assert snapshots is not None
    highest = snapshots.works["pubmed"].manifest.highest_pmid
    assert highest is not None
    refs = [_ref("gone", PUBMED_DELETED), _ref("later", str(highest + 1))]
    gone, later = lookup_references(refs, None, offline=True, snapshots=snapshots)
    snapshots.close()
    label = snapshots.works["pubmed"].label
    assert (gone.status, gone.registry) == (Status.NOT_FOUND, label)
    assert PUBMED_DELETED in gone.reason and str(highest) in gone.reason
    assert later.status is Status.UNVERIFIED  # above the highest: it may be newer than the dump


def _ref(key: str, pmid: str) -> Reference:
    csl = {"id": key, "type": "article-journal", "title": "A cited article", "issued": {}}
    csl["issued"] = {"date-parts": [[2001]]}
    return Reference(
        citation_id=key,
        provenance=Provenance(source_file="refs.bib", entry_key=key),
        item=CSLItem.from_csl(csl),
        ids=Identifiers(pmid=pmid),
    )


def test_every_record_maps_as_the_live_client_maps_its_efetch_answer(root: Path) -> None:
    """The builder reads the fields itself (lxml lookups): what it keeps must equal what
    pubmed_map gives for the same XML."""
    from lxml import etree

    from tasks.registries.pubmed_map import pubmed_article_to_csl
    from tasks.snapshots.records import as_registry_record

    snap = open_snapshot(root, "pubmed")
    assert snap is not None
    with snap:
        kept = {row["pmid"]: as_registry_record(row, "pubmed").item for row in _all(snap)}
    for name in BASELINE:
        for element in etree.fromstring(gzip.decompress((FIXTURES / name).read_bytes())):
            try:
                live = pubmed_article_to_csl(element).item
            except ValueError:  # the constructed record without a PMID (nor an issue)
                continue
            if live.PMID in (PUBMED_DELETED, PUBMED_REVISED):
                continue
            ours = kept[live.PMID]
            assert (ours.title, ours.DOI, ours.year(), ours.page, ours.volume, ours.issue) == (
                live.title,
                live.DOI,
                live.year(),
                live.page,
                live.volume,
                live.issue,
            )
            assert ours.container_title == live.container_title
            assert [(n.family, n.given, n.literal) for n in ours.author or []] == [
                (n.family, n.given, n.literal) for n in live.author or []
            ]
