"""The crossref snapshot built from files in the public data file's format
(tests/fixtures/snapshots/crossref: real REST API work items from ../shared/data/crossref, three
files of `{"items": [...]}`; the first also holds an item that is null and one without a DOI,
the last a real work given an `updated-by` retraction in Crossref's documented shape), read back
through the snapshot's index; a build killed mid-way (the whole process group, SIGKILL)
resumes with the files it had not written."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tasks.snapshots import crossref
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.store import SnapshotFormatError, build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots" / "crossref"
REPO = Path(__file__).parents[1]


def _one(snapshot: Snapshot, doi: str) -> dict:
    [record] = snapshot.by_ids([("doi", doi)])[("doi", doi)]
    return record


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    root = tmp_path_factory.mktemp("crossref")
    build(crossref.builder(), [FIXTURES], root, workers=2)
    snapshot = open_snapshot(root, "crossref")
    assert snapshot is not None
    return snapshot


def test_every_work_with_a_doi_is_kept_and_the_broken_items_counted(built: Snapshot) -> None:
    assert (built.manifest.records, built.manifest.skipped) == (14, 2)
    assert built.label == "crossref@2023-02-17"  # the newest `indexed`
    assert [Path(str(i["path"])).name for i in built.manifest.inputs] == [
        "0.json.gz",
        "1.json.gz",
        "2.json.gz",
    ]


def test_titles_subtitles_authors_and_types_by_crossref_maps_rules(built: Snapshot) -> None:
    hfo2 = _one(built, "10.1039/d1tc03502a")
    assert hfo2["title"] == "Chlorine-mediated atomic layer deposition of HfO2 on graphene"
    assert (hfo2["year"], hfo2["type"], hfo2["informal"]) == (2021, "article-journal", False)
    crisp = _one(built, "10.1145/2983323.2983779")
    assert (crisp["title"], crisp["subtitle"]) == (
        "CRISP",
        "Consensus Regularized Selection based Prediction",
    )
    assert crisp["type"] == "paper-conference"
    assert _one(built, "10.1002/essoar.10508594.1")["informal"] is True  # posted-content
    biochem = _one(built, "10.1021/acs.biochem.6b01273")
    assert biochem["container"] == "Biochemistry" and biochem["volume"] == "56"
    assert biochem["authors"][0]["family"] and biochem["authors"][0]["literal"] is None
    # `issued` without a year, no `published-*`: `created` (2017, the deposit) is no year of a
    # pamphlet of the 1600s.
    assert _one(built, "10.1163/2214-8264_dutchpamphlets-kb1-kb13538")["year"] is None


def test_updates_from_updated_by_and_an_update_to_on_the_work_itself(built: Snapshot) -> None:
    [retraction] = _one(built, "10.1186/s13059-021-02571-0")["updates"]
    assert retraction == {
        "type": "retraction",
        "doi": "10.9999/retraction-notice.1",
        "date": retraction["date"],
    }
    assert str(retraction["date"]) == "2023-05-02"
    [correction] = _one(built, "10.1103/physrevb.98.104436")["updates"]
    assert (correction["type"], correction["doi"]) == ("correction", None)
    assert _one(built, "10.1039/d1tc03502a")["updates"] is None


def test_since_and_types_build_a_smaller_snapshot(tmp_path: Path) -> None:
    builder = crossref.builder(since=2016, types=["journal-article"])
    manifest = build(builder, [FIXTURES], tmp_path)
    snapshot = open_snapshot(tmp_path, "crossref")
    assert snapshot is not None
    with snapshot:
        kept = snapshot.by_ids([("doi", d) for d in ("10.1039/d1tc03502a", "10.4095/110861")])
    assert manifest.records == 4  # the journal articles of 2016 and later
    assert kept[("doi", "10.1039/d1tc03502a")][0]["year"] == 2021
    assert kept[("doi", "10.4095/110861")] == []  # a report of 1964


def test_a_file_that_is_no_items_json_fails_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "input" / "7.json.gz"
    broken.parent.mkdir()
    broken.write_bytes((FIXTURES / "0.json.gz").read_bytes()[:2000])  # a truncated download
    with pytest.raises(SnapshotFormatError) as failure:
        build(crossref.builder(), [broken.parent], tmp_path / "snapshots", workers=2)
    assert str(failure.value) == (
        f"{broken}: the gzip stream ends early; a truncated download?; the snapshot was not changed"
    )
    assert open_snapshot(tmp_path / "snapshots", "crossref") is None


def test_a_killed_build_resumes_with_the_files_it_had_not_written(tmp_path: Path) -> None:
    inputs, root = tmp_path / "input", tmp_path / "snapshots"
    inputs.mkdir()
    for name in ("0.json.gz", "2.json.gz"):
        shutil.copy(FIXTURES / name, inputs / name)
    # The second file is a FIFO nobody writes yet: its worker blocks reading it while the
    # others are written; then the build and its workers are killed.
    os.mkfifo(inputs / "1.json.gz")
    code = (
        "import sys; from pathlib import Path; from tasks.snapshots import crossref, store; "
        "store.build(crossref.builder(), [Path(sys.argv[1])], Path(sys.argv[2]), workers=2)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(inputs), str(root)], cwd=REPO, start_new_session=True
    )
    parts = root / ".crossref.staging" / "parts"
    deadline = time.monotonic() + 120
    while not all((parts / n / "part.json").exists() for n in ("00000", "00002")):
        assert process.poll() is None, "the build ended before it was killed"
        assert time.monotonic() < deadline, "the first and last files were never written"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert open_snapshot(root, "crossref") is None  # nothing swapped in
    assert not (parts / "00001").exists()
    written = {n: (parts / n / "part.parquet").stat().st_ino for n in ("00000", "00002")}

    (inputs / "1.json.gz").unlink()
    shutil.copy(FIXTURES / "1.json.gz", inputs / "1.json.gz")
    manifest = build(crossref.builder(), [inputs], root, workers=2)

    assert (manifest.records, manifest.skipped) == (14, 2)
    current = root.joinpath("crossref").resolve() / "parts"
    for name, inode in written.items():
        assert (current / name / "part.parquet").stat().st_ino == inode  # not written again
    snapshot = open_snapshot(root, "crossref")
    assert snapshot is not None
    with snapshot:
        assert _one(snapshot, "10.1111/insr.12087")["year"] == 2014  # from the file resumed


def test_a_null_issued_takes_its_year_from_published_never_created(tmp_path: Path) -> None:
    """ICDCS 2003, deposited in 2004: `issued` [[null]]; the year is the first of
    published-print, published-online, published; a work with only `created` has none."""
    created = {"date-parts": [[2004, 3, 1]]}
    works = [
        {
            "DOI": "10.1/print",
            "issued": {"date-parts": [[None]]},
            "created": created,
            "published-print": {"date-parts": [[2003, 5]]},
        },
        {
            "DOI": "10.1/online",
            "issued": {"date-parts": [[None]]},
            "created": created,
            "published-online": {"date-parts": [[2003]]},
        },
        {
            "DOI": "10.1/published",
            "issued": {"date-parts": [[None]]},
            "created": created,
            "published": {"date-parts": [[2003, 5, 19]]},
        },
        {"DOI": "10.1/created", "issued": {"date-parts": [[None]]}, "created": created},
    ]
    for typed in (True, False):  # the documented shape, and an odd item beside them
        folder = tmp_path / f"input-{typed}"
        folder.mkdir()
        items: list[Any] = [*works] if typed else [*works, None]
        (folder / "0.json.gz").write_bytes(gzip.compress(json.dumps({"items": items}).encode()))
        root = tmp_path / f"snapshots-{typed}"
        build(crossref.builder(), [folder], root)
        snapshot = open_snapshot(root, "crossref")
        assert snapshot is not None
        with snapshot:
            years = {doi: _one(snapshot, doi)["year"] for doi in (w["DOI"] for w in works)}
        assert years == {
            "10.1/print": 2003,
            "10.1/online": 2003,
            "10.1/published": 2003,
            "10.1/created": None,
        }
