"""`snapshot update` (tasks/snapshots/update.py) over real HTTP: only what changed since the
snapshot's date is fetched, and the snapshot ends as a full rebuild from everything would."""

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.registries.settings import RegistrySettings
from tasks.snapshots import crossref, dblp
from tasks.snapshots.index import open_snapshot
from tasks.snapshots.sources import FetchSettings, fetch
from tasks.snapshots.store import build
from tasks.snapshots.update import NoSnapshot, update
from tests.fake_registry import FakeRegistry
from tests.fake_registry.dumps import DumpServer, dblp_release, pubmed_file

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
ANNUAL = sorted((FIXTURES / "crossref").glob("*.json.gz"))


def _records(root: Path, name: str) -> dict[str, dict[str, Any]]:
    """Every record of the snapshot, by id, as lookups read them."""
    folder = root.joinpath(name).resolve()
    ids = {
        i
        for part in folder.glob("parts/*/part.parquet")
        for i in pq.read_table(part)["id"].to_pylist()
    }
    snapshot = open_snapshot(root, name)
    assert snapshot is not None
    with snapshot:
        found = snapshot.by_ids([("id", i) for i in sorted(ids)])
    return {key[1]: records[0] for key, records in found.items() if records}


def _fetch_settings(server: DumpServer, downloads: Path) -> FetchSettings:
    return FetchSettings(  # type: ignore[call-arg]
        downloads=downloads,
        dblp_dump_url=f"{server.url}/xml",
        fetch_pace_s=0.0,
        fetch_reserve_bytes=0,
    )


def test_dblp_update_fetches_a_new_release_only_and_rebuilds(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    dtd = (FIXTURES / "dblp.dtd").read_bytes()
    with DumpServer(tmp_path / "www") as server:
        dblp_release(server.root / "xml", (FIXTURES / "dblp.xml.gz").read_bytes(), dtd)
        settings = _fetch_settings(server, tmp_path / "downloads")
        first = update("dblp", root, settings, RegistrySettings())
        again = update("dblp", root, settings, RegistrySettings())
        newer = gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes()) + b"\n"  # next day's
        dblp_release(server.root / "xml", gzip.compress(newer), dtd)
        server_gets_before = len(server.gets("dblp.xml.gz"))
        latest = update("dblp", root, settings, RegistrySettings())
        gets = len(server.gets("dblp.xml.gz")) - server_gets_before

    assert (first.how, again.how, latest.how) == ("rebuilt", "unchanged", "rebuilt")
    assert again.fetched == [] and latest.fetched == ["dblp.xml.gz"] and gets == 1
    assert first.manifest.records == latest.manifest.records
    full = tmp_path / "full"
    build(dblp.BUILDER, [tmp_path / "downloads" / "dblp" / "dblp.xml.gz"], full)
    assert _records(root, "dblp") == _records(full, "dblp")


def _work(item: dict[str, Any], indexed: str, **changes: Any) -> dict[str, Any]:
    stamp = f"{indexed}T10:00:00Z"
    parts = [int(x) for x in indexed.split("-")]
    return {**item, **changes, "indexed": {"date-parts": [parts], "date-time": stamp}}


def test_crossref_update_adds_what_the_rest_api_indexed_since_and_equals_a_rebuild(
    tmp_path: Path,
) -> None:
    root = tmp_path / "snapshots"
    before = build(crossref.builder(), ANNUAL, root)
    items = [
        i
        for i in json.loads(gzip.decompress(ANNUAL[0].read_bytes()))["items"]
        if isinstance(i, dict) and i.get("DOI")
    ]
    revised = _work(items[0], "2031-02-01", title=["A Title Revised After the File"])
    added = _work(items[1], "2031-02-02", DOI="10.5555/citeaudit.new-work")
    older = _work(items[2], "2001-01-01")  # indexed before the snapshot's date: not asked
    with FakeRegistry.empty(rate_limits=False) as registry:
        for work in (revised, added, older):
            registry.add_crossref_work(work)
        settings = registry.settings(crossref_max_rate=100.0)
        result = update("crossref", root, FetchSettings(), settings)  # type: ignore[call-arg]
        asked = [r.path for r in registry.log if r.service == "crossref"]

    assert result.how == "extended" and result.manifest.records == before.records + 1
    assert len(asked) == 1
    assert f"from-index-date%3A{before.date}" in asked[0] and "cursor=%2A" in asked[0]
    page = tmp_path / "page.json.gz"
    page.write_bytes(gzip.compress(json.dumps({"items": [revised, added]}).encode()))
    full = tmp_path / "full"
    build(crossref.builder(), [*ANNUAL, page], full)
    updated = _records(root, "crossref")
    assert updated == _records(full, "crossref")
    assert updated[revised["DOI"].lower()]["title"] == "A Title Revised After the File"


def test_crossref_update_with_nothing_new_keeps_the_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    before = build(crossref.builder(since=2000), ANNUAL, root)
    with FakeRegistry.empty(rate_limits=False) as registry:
        result = update("crossref", root, FetchSettings(), registry.settings())  # type: ignore[call-arg]
    assert result.how == "unchanged" and result.manifest == before
    assert result.manifest.options == {"since": 2000, "types": None}


def test_an_incremental_update_needs_the_snapshot(tmp_path: Path) -> None:
    with pytest.raises(NoSnapshot, match="no crossref snapshot"):
        update("crossref", tmp_path, FetchSettings(), RegistrySettings())  # type: ignore[call-arg]


PUBMED = sorted((FIXTURES / "pubmed").glob("pubmed*.xml.gz"))


def test_pubmed_update_fetches_only_the_new_update_file_and_equals_a_rebuild(
    tmp_path: Path,
) -> None:
    from tasks.snapshots import pubmed

    root = tmp_path / "snapshots"
    with DumpServer(tmp_path / "www") as server:
        www = server.root / "pubmed"
        pubmed_file(www / "baseline", PUBMED[0].name, PUBMED[0].read_bytes())
        pubmed_file(www / "updatefiles", PUBMED[1].name, PUBMED[1].read_bytes())
        settings = FetchSettings(  # type: ignore[call-arg]
            downloads=tmp_path / "downloads",
            pubmed_dump_url=f"{server.url}/pubmed",
            fetch_pace_s=0.0,
            fetch_reserve_bytes=0,
        )
        first = fetch("pubmed", settings)
        build(pubmed.BUILDER, [first.folder / f for f in first.fetched], root)
        pubmed_file(www / "updatefiles", PUBMED[2].name, PUBMED[2].read_bytes())
        server_log = len(server.log)
        result = update("pubmed", root, settings, RegistrySettings())
        files = [r.path for r in server.log[server_log:] if r.path.endswith(".xml.gz")]

    assert result.how == "extended"
    assert result.fetched == [f"updatefiles/{PUBMED[2].name}"]
    assert all(PUBMED[2].name in f for f in files)  # HEAD and GET of the new file only
    full = tmp_path / "full"
    build(pubmed.BUILDER, PUBMED, full)
    assert _records(root, "pubmed") == _records(full, "pubmed")


OPENALEX = FIXTURES / "openalex"


def test_openalex_update_fetches_only_the_newer_partition_and_equals_a_rebuild(
    tmp_path: Path,
) -> None:
    from tasks.snapshots import openalex

    root = tmp_path / "snapshots"
    with DumpServer(tmp_path / "www") as server:
        works = server.root / "data" / "works"
        shutil.copytree(OPENALEX / "data" / "works", works)
        newer = works / "updated_date=2026-11-01"
        held = tmp_path / "held"
        newer.rename(held)
        whole = (works / "manifest").read_text()
        manifest = json.loads(whole)
        manifest["entries"] = [e for e in manifest["entries"] if "2026-11-01" not in e["url"]]
        (works / "manifest").write_text(json.dumps(manifest))
        settings = FetchSettings(  # type: ignore[call-arg]
            downloads=tmp_path / "downloads",
            openalex_bucket_url=server.url,
            fetch_pace_s=0.0,
            fetch_reserve_bytes=0,
        )
        first = fetch("openalex", settings)
        build(openalex.builder(), [first.folder], root)
        held.rename(newer)
        (works / "manifest").write_text(whole)
        result = update("openalex", root, settings, RegistrySettings())
        parts = [r.path for r in server.log if r.method == "GET" and r.path.endswith(".gz")]

    assert result.how == "extended"
    new = "data/works/updated_date=2026-11-01/part_000.gz"
    assert [f for f in result.fetched if f.endswith(".gz")] == [new]
    assert parts[-1] == f"/{new}" and len(parts) == 3  # two at the fetch, one at the update
    full = tmp_path / "full"
    build(openalex.builder(), [OPENALEX], full)
    assert _records(root, "openalex") == _records(full, "openalex")
