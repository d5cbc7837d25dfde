"""The snapshot store: a build killed mid-way (a real process, SIGKILL) leaves the old snapshot
usable and resumes at the part it had not finished; a build swaps in whole; status and remove.
Built with the dblp builder from tests/fixtures/snapshots."""

import gzip
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from tasks.snapshots import dblp
from tasks.snapshots.index import open_snapshot
from tasks.snapshots.store import build, remove, snapshots_root, status

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
REPO = Path(__file__).parents[1]


def _input(folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    shutil.copy(FIXTURES / "dblp.xml.gz", folder / "a.xml.gz")
    return folder


def _second_part(folder: Path, title: str) -> bytes:
    """A dump of one record, another part beside the first."""
    return (
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n<dblp>\n'
        '<article mdate="2026-11-20" key="journals/x/Second26"><author>Ada Lovelace</author>'
        f"<title>{title}.</title><journal>X</journal><year>2026</year></article>\n</dblp>\n"
    ).encode("iso-8859-1")


def _build_in_process(inputs: Path, root: Path) -> subprocess.Popen[bytes]:
    code = (
        "import sys; from pathlib import Path; from tasks.snapshots import dblp, store; "
        "store.build(dblp.BUILDER, [Path(sys.argv[1])], Path(sys.argv[2]))"
    )
    return subprocess.Popen([sys.executable, "-c", code, str(inputs), str(root)], cwd=REPO)


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, "the build ended before it was killed"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_killed_build_keeps_the_old_snapshot_and_resumes_where_it_stopped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "snapshots"
    inputs = _input(tmp_path / "input")
    build(dblp.BUILDER, [inputs], root)  # the snapshot in use while the next one is built
    # The next build's second part is a FIFO nobody writes yet: the build blocks reading it,
    # its first part written, and is killed there.
    os.mkfifo(inputs / "b.xml")
    process = _build_in_process(inputs, root)
    first = root / ".dblp.staging" / "parts" / "00000"
    _wait_for(first / "part.json", process)
    time.sleep(0.3)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    snapshot = open_snapshot(root, "dblp")
    assert snapshot is not None
    with snapshot:
        assert snapshot.manifest.records == 543
        assert snapshot.by_title(["A second part's only paper"]) == [[]]
    written = first.stat().st_ino

    (inputs / "b.xml").unlink()
    (inputs / "b.xml").write_bytes(_second_part(inputs, "A Second Part's Only Paper"))
    manifest = build(dblp.BUILDER, [inputs], root)

    assert manifest.records == 544
    assert manifest.date == "2026-11-20"
    assert [Path(str(i["path"])).name for i in manifest.inputs] == ["a.xml.gz", "b.xml"]
    current = root.joinpath("dblp").resolve()
    assert (current / "parts" / "00000").stat().st_ino == written  # not written again
    assert not (root / ".dblp.staging").exists()
    assert sorted(p.name for p in root.iterdir()) == [current.name, ".dblp.lock", "dblp"]
    snapshot = open_snapshot(root, "dblp")
    assert snapshot is not None
    with snapshot:
        [[found]] = snapshot.by_title(["A second part's only paper"])
        assert found["id"] == "journals/x/Second26"


def test_a_part_whose_file_changed_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    inputs = _input(tmp_path / "input")
    (inputs / "b.xml").write_bytes(_second_part(inputs, "The First Title"))
    build(dblp.BUILDER, [inputs], root)
    # A killed build of the same inputs left its parts; then the second file was replaced.
    staging = root / ".dblp.staging"
    shutil.copytree(root.joinpath("dblp").resolve(), staging)
    (staging / "id_keys.arrow").unlink()
    (inputs / "b.xml").write_bytes(_second_part(inputs, "The Second Title Entirely"))
    build(dblp.BUILDER, [inputs], root)
    snapshot = open_snapshot(root, "dblp")
    assert snapshot is not None
    with snapshot:
        [[record]] = snapshot.by_ids([("id", "journals/x/Second26")]).values()
        assert record["title"] == "The Second Title Entirely"


def test_a_reader_of_the_old_snapshot_keeps_reading_through_a_swap(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    inputs = _input(tmp_path / "input")
    build(dblp.BUILDER, [inputs], root)
    old = open_snapshot(root, "dblp")
    assert old is not None
    (inputs / "b.xml").write_bytes(_second_part(inputs, "Something New"))
    build(dblp.BUILDER, [inputs], root)
    with old:
        assert old.manifest.records == 543
        assert old.by_title(["Attention is all you need"])[0][0]["year"] == 2017
    new = open_snapshot(root, "dblp")
    assert new is not None
    with new:
        assert new.manifest.records == 544


def test_status_and_remove(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    assert status(root) == []
    build(dblp.BUILDER, [_input(tmp_path / "input")], root)
    [dblp_status] = status(root)
    assert dblp_status.name == "dblp"
    assert dblp_status.date == "2026-11-02"
    assert dblp_status.records == 543
    files = root.joinpath("dblp").resolve().rglob("*")
    on_disk = sum(p.stat().st_size for p in files if p.is_file())
    assert dblp_status.bytes == on_disk
    assert dblp_status.age_days == (date.today() - date(2026, 11, 2)).days
    assert dblp_status.current
    assert remove(root, "dblp") is True
    assert status(root) == [] and open_snapshot(root, "dblp") is None
    assert sorted(p.name for p in root.iterdir()) == [".dblp.lock"]
    assert remove(root, "dblp") is False


def test_the_root_is_citeaudit_snapshots_or_the_user_data_dir(tmp_path: Path) -> None:
    assert snapshots_root({"CITEAUDIT_SNAPSHOTS": str(tmp_path)}) == tmp_path
    assert snapshots_root({}).parts[-2:] == ("citeaudit", "snapshots")


def test_a_gzipped_and_a_plain_part_read_alike(tmp_path: Path) -> None:
    inputs = tmp_path / "input"
    inputs.mkdir()
    shutil.copy(FIXTURES / "dblp.dtd", inputs / "dblp.dtd")
    (inputs / "dblp.xml").write_bytes(gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes()))
    assert build(dblp.BUILDER, [inputs / "dblp.xml"], tmp_path / "snapshots").records == 543
