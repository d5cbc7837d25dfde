"""The openalex snapshot from OpenAlex's works snapshot as published (tests/fixtures/snapshots/
openalex, built by tests/fake_registry/build_snapshot_fixtures.py from recorded API works)."""

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.registries.openalex import openalex_work_to_csl
from tasks.snapshots import openalex
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.records import as_registry_record
from tasks.snapshots.store import SnapshotFormatError, build
from tests.fake_registry.build_snapshot_fixtures import OPENALEX_DATES

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots" / "openalex"
WORKS = FIXTURES / "data" / "works"
RECORDED = Path(__file__).parent / "fixtures" / "registry" / "openalex_works.jsonl.gz"


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    root = tmp_path_factory.mktemp("openalex") / "snapshots"
    build(openalex.builder(), [FIXTURES], root)
    opened = open_snapshot(root, "openalex")
    assert opened is not None
    return opened


def _recorded() -> list[dict]:
    with gzip.open(RECORDED, "rt") as lines:
        return [json.loads(line) for line in lines]


def _all(snap: Snapshot) -> list[dict]:
    return list(snap._records(set(range(snap.manifest.records))).values())


def test_every_part_the_manifest_lists_a_later_partition_replacing_a_work(snap: Snapshot) -> None:
    manifest = snap.manifest
    assert (manifest.records, manifest.skipped) == (122, 1)  # 120 recorded + 2; one line cut
    assert manifest.complete and manifest.date == OPENALEX_DATES[1]
    key = ("id", _recorded()[0]["id"].rsplit("/", 1)[-1])
    [revised] = snap.by_ids([key])[key]
    assert revised["title"].endswith("(Revised)")


def test_ids_kept_arxiv_by_location_pmid_doi_and_a_retraction(snap: Snapshot) -> None:
    [preprint] = snap.by_ids([("arxiv", "2404.05961")])[("arxiv", "2404.05961")]
    assert preprint["id"] == "W4000000001" and preprint["informal"]
    assert preprint["container"] == "arXiv (Cornell University)"  # a preprint server's copy
    [retracted] = snap.by_ids([("pmid", "31000001")])[("pmid", "31000001")]
    assert retracted["doi"] == "10.1234/retracted.1"
    assert retracted["updates"][0]["type"] == "retraction"
    assert (retracted["volume"], retracted["issue"], retracted["pages"]) == ("7", "2", "10-19")
    found = as_registry_record(retracted, "openalex")
    assert found.retracted


def test_every_recorded_work_maps_as_the_live_client_maps_it(snap: Snapshot) -> None:
    kept = {row["id"]: as_registry_record(row, "openalex").item for row in _all(snap)}
    for work in _recorded()[1:120]:
        live = openalex_work_to_csl(work).item
        ours = kept[work["id"].rsplit("/", 1)[-1]]
        assert (ours.title, ours.DOI, ours.year(), ours.type) == (
            live.title,
            live.DOI,
            live.year(),
            live.type,
        )
        if live.container_title:  # a repository (the live client's `archive`) is no venue here
            assert ours.container_title == live.container_title
        assert len(ours.author or []) == len(live.author or [])


def test_a_filter_keeps_part_of_the_dump_and_the_snapshot_is_not_complete(tmp_path: Path) -> None:
    manifest = build(openalex.builder(since=2020, types={"article"}), [FIXTURES], tmp_path)
    snap = open_snapshot(tmp_path, "openalex")
    assert snap is not None and not manifest.complete
    rows = _all(snap)
    assert rows and all(r["year"] >= 2020 and r["type"] == "article-journal" for r in rows)
    only = build(openalex.builder(sources={"S1"}), [FIXTURES], tmp_path / "by-source")
    assert only.records == 1 and not only.complete


def test_newer_partitions_applied_give_what_a_full_build_gives(
    snap: Snapshot, tmp_path: Path
) -> None:
    older = tmp_path / "older" / "data" / "works" / f"updated_date={OPENALEX_DATES[0]}"
    shutil.copytree(WORKS / f"updated_date={OPENALEX_DATES[0]}", older)
    build(openalex.builder(), [tmp_path / "older"], tmp_path / "snapshots")
    newer = WORKS / f"updated_date={OPENALEX_DATES[1]}"
    applied = build(openalex.builder(), [newer], tmp_path / "snapshots", extend=True)
    assert (applied.records, applied.date) == (snap.manifest.records, snap.manifest.date)
    incremental = open_snapshot(tmp_path / "snapshots", "openalex")
    assert incremental is not None
    assert sorted(map(str, _all(incremental))) == sorted(map(str, _all(snap)))


def test_a_part_the_manifest_lists_but_is_missing_fails_naming_it(tmp_path: Path) -> None:
    copy = tmp_path / "openalex"
    shutil.copytree(FIXTURES, copy)
    missing = copy / "data" / "works" / f"updated_date={OPENALEX_DATES[0]}" / "part_001.gz"
    missing.unlink()
    with pytest.raises(SnapshotFormatError, match="part_001.gz"):
        build(openalex.builder(), [copy], tmp_path / "snapshots")


def test_a_file_of_other_json_lines_fails_naming_it(tmp_path: Path) -> None:
    part = tmp_path / "updated_date=2026-01-01" / "part_000.gz"
    part.parent.mkdir()
    part.write_bytes(gzip.compress(b'{"DOI": "10.1/x", "title": ["A Crossref work"]}\n'))
    with pytest.raises(SnapshotFormatError, match="part_000.gz"):
        build(openalex.builder(), [tmp_path], tmp_path / "snapshots")


def test_the_command_builds_it_filtered_and_refuses_sources_elsewhere(tmp_path: Path) -> None:
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(tmp_path / "snapshots")}
    command = [sys.executable, "-m", "flows.cli", "snapshot", "build"]
    built = subprocess.run(
        [*command, "openalex", str(FIXTURES), "--sources", "S1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith(f"openalex@{OPENALEX_DATES[1]}: 1 record")
    refused = subprocess.run(
        [*command, "pubmed", str(FIXTURES), "--sources", "S1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and "--sources" in refused.stderr
