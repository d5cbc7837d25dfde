"""The arxiv snapshot: built from arXiv's metadata snapshot in its own format (JSON lines made
from the recorded arXiv answers, tests/fixtures/snapshots), then updated over real HTTP from the
fake registry's OAI-PMH endpoint, read back through the snapshot's index."""

import gzip
import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET  # our own recorded entries

import pytest

from tasks.registries.arxiv import arxiv_entry_to_csl
from tasks.registries.clients import Registries, RegistryPool
from tasks.registries.http import RegistryHttp
from tasks.registries.oai import OaiError, pages
from tasks.snapshots import arxiv
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.records import as_registry_record
from tasks.snapshots.store import SnapshotFormatError, build
from tests.fake_registry import FakeRegistry

DUMP = Path(__file__).parent / "fixtures" / "snapshots" / "arxiv-metadata-oai-snapshot.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    root = tmp_path_factory.mktemp("arxiv")
    build(arxiv.BUILDER, [DUMP], root)
    snapshot = open_snapshot(root, "arxiv")
    assert snapshot is not None
    return snapshot


def _one(snapshot: Snapshot, arxiv_id: str) -> dict:
    [record] = snapshot.by_ids([("arxiv", arxiv_id)])[("arxiv", arxiv_id)]
    return record


def test_the_snapshot_is_dated_by_its_newest_update(built: Snapshot) -> None:
    assert built.label == "arxiv@2026-04-03"
    assert built.manifest.records == 745  # 744 recorded entries and one constructed
    assert built.manifest.skipped == 2  # a line cut short, a record without an id


def test_an_old_style_withdrawn_paper_with_latex(built: Snapshot) -> None:
    record = _one(built, "hep-th/9901001")
    assert record["withdrawn"] is True
    assert record["version"] == 2 and record["year"] == 1999  # the first version's year
    assert record["authors"] == [
        {"family": "García", "given": "José", "literal": None},
        {"family": "Müller", "given": "M.", "literal": None},
    ]
    # The title stays as arXiv writes it; the title index reads it as text.
    assert record["title"] == "On the $\\mathcal{N}=4$ Super Yang--Mills Theory at Strong Coupling"
    [[found]] = built.by_title(["On the N=4 super Yang-Mills theory at strong coupling"])
    assert found["id"] == "hep-th/9901001"


def test_versions_dois_and_recorded_old_ids(built: Snapshot) -> None:
    assert _one(built, "quant-ph/0201082")["container"] == "arXiv"
    splatter = _one(built, "2412.06250")
    assert splatter["withdrawn"] is False and splatter["informal"] is True
    # The published version's DOI, as the dump gives it (the arXiv id's own DOI is not it).
    [[group]] = built.by_ids([("doi", "10.1109/tit.2011.2148691")]).values()
    assert group["id"] == "1009.3186" and group["version"] == 2 and group["year"] == 2010
    [[latex]] = built.by_title(
        ["Splatter-360: Generalizable 360° Gaussian Splatting for Wide-baseline Panoramic Images"]
    )
    assert latex["id"] == "2412.06250" and latex["score"] > 0.9


def test_records_without_the_fields_of_arxivs_format_fail_the_build(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    build(arxiv.BUILDER, [DUMP], root)
    changed = tmp_path / "changed.json"
    changed.write_text(DUMP.read_text().replace('"authors_parsed"', '"authors_list"'))
    with pytest.raises(SnapshotFormatError) as failure:
        build(arxiv.BUILDER, [changed], root)
    assert str(failure.value).startswith(f"{changed}: line 1 has no authors_parsed")
    snapshot = open_snapshot(root, "arxiv")
    assert snapshot is not None
    with snapshot:
        assert snapshot.manifest.records == 745


NEW_ENTRY = """<entry>
    <id>http://arxiv.org/abs/2611.00001v1</id>
    <title>A Paper Posted After the Snapshot</title>
    <updated>2026-11-25T08:00:00Z</updated>
    <published>2026-11-25T08:00:00Z</published>
    <author>
      <name>Ada Lovelace</name>
    </author>
  </entry>"""


def _arxiv_http(registry: FakeRegistry) -> RegistryHttp:
    settings = registry.settings(arxiv_max_rate=100.0, backoff_base_s=0.01)
    registries = Registries.from_settings(settings, RegistryPool())
    return registries.http["arxiv"]


def _revised(registry: FakeRegistry, arxiv_id: str, title: str, updated: str) -> None:
    entry = registry.scholarly.arxiv[arxiv_id]
    entry = re.sub(r"<title>.*?</title>", f"<title>{title}</title>", entry, flags=re.DOTALL)
    entry = re.sub(r"<updated>.*?</updated>", f"<updated>{updated}</updated>", entry)
    registry.scholarly.add_arxiv_entry(entry.replace(f"/abs/{arxiv_id}v", f"/abs/{arxiv_id}v9"))


def test_an_update_adds_what_oai_pmh_lists_since_the_snapshots_date(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    build(arxiv.BUILDER, [DUMP], root)
    with FakeRegistry(rate_limits=False) as registry:
        registry.oai_page_size = 2
        _revised(registry, "2405.11454", "Gradient Testing by Comparisons", "2026-11-20T10:00:00Z")
        registry.scholarly.add_arxiv_entry(NEW_ENTRY)
        registry.inject_fault("unavailable", count=1, endpoint="arxiv_oai")  # 503, Retry-After
        manifest = arxiv.update(_arxiv_http(registry), root)
        requests = [r for r in registry.log if r.endpoint == "arxiv_oai"]

    # 2604.03438 (dated the snapshot's day), the revised paper and the new one: two pages,
    # the first asked twice (503 with Retry-After, then its answer).
    assert [r.status for r in requests] == [503, 200, 200]
    assert "from=2026-04-03" in requests[0].path and "resumptionToken" in requests[2].path
    assert manifest.date == "2026-11-25" and manifest.records == 746
    snapshot = open_snapshot(root, "arxiv")
    assert snapshot is not None
    with snapshot:
        revised = _one(snapshot, "2405.11454")
        assert revised["title"] == "Gradient Testing by Comparisons"
        assert revised["updated"].isoformat() == "2026-11-20"
        assert _one(snapshot, "2611.00001")["authors"][0]["family"] == "Lovelace"
        assert _one(snapshot, "hep-th/9901001")["withdrawn"] is True  # the dump's records stay
    left = {p.name for p in root.iterdir() if p.name.startswith(".arxiv.")}
    assert left == {".arxiv.lock", root.joinpath("arxiv").resolve().name}


def test_an_update_with_nothing_new_leaves_the_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    before = build(arxiv.BUILDER, [DUMP], root)
    folder = root.joinpath("arxiv").resolve()
    with FakeRegistry(rate_limits=False) as registry:
        registry.scholarly.arxiv.clear()
        assert arxiv.update(_arxiv_http(registry), root) == before
    assert root.joinpath("arxiv").resolve() == folder


def test_an_update_needs_a_snapshot(tmp_path: Path) -> None:
    with FakeRegistry(rate_limits=False) as registry, pytest.raises(arxiv.NoSnapshotToUpdate):
        arxiv.update(_arxiv_http(registry), tmp_path)


def test_a_format_the_repository_cannot_give_is_an_oai_error() -> None:
    with FakeRegistry(rate_limits=False) as registry:
        with pytest.raises(OaiError) as failure:
            list(pages(_arxiv_http(registry), "/oai2", "oai_dc"))
        assert failure.value.code == "cannotDisseminateFormat"


def test_a_harvested_page_reads_as_a_part(tmp_path: Path) -> None:
    """The harvest's pages are the builder's input too: a page saved by hand builds alone."""
    with FakeRegistry(rate_limits=False) as registry:
        page = next(pages(_arxiv_http(registry), "/oai2", "arXiv")).body
    (tmp_path / "page.xml").write_bytes(page)
    manifest = build(arxiv.BUILDER, [tmp_path / "page.xml"], tmp_path / "snapshots")
    assert manifest.records == 100


def test_a_record_maps_to_csl_as_the_live_arxiv_client_maps_an_entry(built: Snapshot) -> None:
    found = as_registry_record(_one(built, "1009.3186"), "arxiv")
    with gzip.open(ENTRIES, "rt", encoding="utf-8") as lines:
        entries = {row["id"]: row["xml"] for row in map(json.loads, lines)}
    recorded = entries["1009.3186"]
    live = arxiv_entry_to_csl(ET.fromstring(recorded.replace("<entry>", ATOM_ENTRY, 1)))
    assert found.identifier == live.identifier == "1009.3186"
    assert found.relations == live.relations == {"is-preprint-of": ["10.1109/tit.2011.2148691"]}
    for field in ("type", "title", "author", "container_title", "DOI", "URL", "issued"):
        assert getattr(found.item, field) == getattr(live.item, field), field


ENTRIES = Path(__file__).parent / "fixtures" / "registry" / "arxiv_entries.jsonl.gz"
ATOM_ENTRY = (
    '<entry xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">'
)


def test_a_withdrawn_paper_reaches_the_row_as_a_retraction(built: Snapshot) -> None:
    """arXiv's `withdrawn` flags the row (retracted, with its notice) as Crossref's withdrawal
    does: the report's advice and `--fail-on retracted` read that flag."""
    from models.audit import Provenance, Reference, Status
    from models.csl import CSLItem
    from tasks.lookup import lookup_references
    from tasks.lookup.snapshots import LocalSnapshots

    csl = {
        "id": "garcia99",
        "type": "article",
        "title": "On the N=4 Super Yang-Mills Theory at Strong Coupling",
        "author": [{"family": "García", "given": "José"}, {"family": "Müller", "given": "M."}],
        "issued": {"date-parts": [[1999]]},
    }
    cited = Reference(
        citation_id="garcia99",
        provenance=Provenance(source_file="refs.bib", entry_key="garcia99"),
        item=CSLItem.from_csl(csl),
    )
    cited = cited.model_copy(
        update={"ids": cited.ids.model_copy(update={"arxiv": "hep-th/9901001"})}
    )
    snapshots = LocalSnapshots({"arxiv": built}, None)
    [row] = lookup_references([cited], None, offline=True, snapshots=snapshots)
    assert (row.status, row.registry) == (Status.VERIFIED, built.label)
    assert row.retracted
    [notice] = row.notices
    assert (notice.kind, notice.source, notice.reason) == (
        "retraction",
        "arxiv",
        "withdrawn by its authors on arXiv",
    )
    assert notice.url == "https://arxiv.org/abs/hep-th/9901001"
    kept = as_registry_record(_one(built, "0804.0970"), "arxiv")  # not withdrawn
    assert not kept.retracted and kept.notices == []


def test_the_live_client_flags_a_withdrawn_paper_as_the_snapshot_does() -> None:
    entry = ET.fromstring(
        """<entry xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
        <id>http://arxiv.org/abs/hep-th/9901001v2</id><updated>2001-02-03T00:00:00Z</updated>
        <published>1999-01-04T00:00:00Z</published><title>On the N=4 theory</title>
        <author><name>José García</name></author>
        <arxiv:comment>This paper has been withdrawn by the authors</arxiv:comment></entry>"""
    )
    record = arxiv_entry_to_csl(entry)
    [notice] = record.notices
    assert record.retracted and (notice.reason, notice.date) == (
        "withdrawn by its authors on arXiv",
        "2001-02-03",
    )
    entry.remove(entry.find("{http://arxiv.org/schemas/atom}comment"))
    assert not arxiv_entry_to_csl(entry).retracted
