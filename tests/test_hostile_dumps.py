"""Hostile dumps given to `snapshot build`: each is refused in one line naming its file (or its
broken records skipped, counted and named), reads no file it was not given, holds bounded
memory whatever it expands to, and leaves the snapshot built before it in place."""

import gzip
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tasks.errors import exit_code, one_line
from tasks.snapshots import arxiv, crossref, dblp, retractions
from tasks.snapshots.index import open_snapshot
from tasks.snapshots.store import Builder, SnapshotFormatError, build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
SECRET = b"the-contents-of-a-local-file-0451"
HEADER = b'<!DOCTYPE dblp SYSTEM "dblp.dtd">'


def _refused(builder: Builder, dump: Path, root: Path) -> str:
    """The one line a build of `dump` is refused with (a usage error, exit 2)."""
    with pytest.raises(SnapshotFormatError) as failure:
        build(builder, [dump], root)
    message = str(failure.value)
    assert exit_code(failure.value) == 2 and one_line(failure.value) == message
    assert "\n" not in message
    return message


def _nowhere(secret: bytes, *folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert secret not in data, path
                if path.suffix == ".gz":
                    assert secret not in gzip.decompress(data), path


def _dblp_dump(folder: Path, xml: bytes | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    dump = folder / "dblp.xml.gz"
    if xml is None:
        shutil.copy(FIXTURES / "dblp.xml.gz", dump)
    else:
        dump.write_bytes(gzip.compress(xml, compresslevel=1))
    return dump


def _old_dblp(root: Path, tmp_path: Path) -> None:
    build(dblp.BUILDER, [_dblp_dump(tmp_path / "good")], root)


def _dblp_still_there(root: Path) -> None:
    snapshot = open_snapshot(root, "dblp")
    assert snapshot is not None
    with snapshot:
        assert snapshot.manifest.records == 543


def _fixture_xml() -> bytes:
    return gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes())


def test_an_external_entity_in_a_dblp_title_refuses_the_dump_and_reads_no_file(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    xml = _fixture_xml()
    declared = f'<!DOCTYPE dblp SYSTEM "dblp.dtd" [<!ENTITY xxe SYSTEM "file://{secret}">]>'
    xml = xml.replace(HEADER, declared.encode(), 1)
    xml = xml.replace(b"<title>", b"<title>&xxe; ", 1)
    dump = _dblp_dump(tmp_path / "hostile", xml)
    message = _refused(dblp.BUILDER, dump, root)
    assert message.startswith(f"{dump}: ") and "external entity" in message
    assert SECRET.decode() not in message
    _nowhere(SECRET, root)
    _dblp_still_there(root)


def test_a_dtd_beside_the_dump_reads_no_other_file_either(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    dump = _dblp_dump(tmp_path / "hostile")
    dtd = dump.parent / "dblp.dtd"
    # The classic: the file's contents read into an entity a title then uses.
    dtd.write_text(
        dtd.read_text()
        + f'\n<!ENTITY % file SYSTEM "file://{secret}">\n'
        + "<!ENTITY % wrap \"<!ENTITY leak '%file;'>\">\n%wrap;\n"
    )
    xml = _fixture_xml().replace(b"<title>", b"<title>&leak; ", 1)
    dump.write_bytes(gzip.compress(xml, compresslevel=1))
    message = _refused(dblp.BUILDER, dump, root)
    assert "external entity" in message and SECRET.decode() not in message
    _nowhere(SECRET, root)
    _dblp_still_there(root)


BOMB = 48 << 20  # what each bomb expands to: past every cap below, streamed, never whole
SMALL = 1 << 20  # the caps, made small so a bomb of tens of MB passes them


def _bomb(path: Path, head: bytes, filler: bytes = b" ", size: int = BOMB) -> Path:
    """A gzip file of `head` and then `size` bytes of `filler`, written a MB at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = filler * (SMALL // len(filler))
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(head)
        for _ in range(size // len(block)):
            out.write(block)
    return path


def _refused_in_bounded_memory(builder: Builder, dump: Path, root: Path) -> str:
    """The one line the bomb is refused with; what the build held at once stayed far under
    what the bomb expands to."""
    tracemalloc.start()
    try:
        message = _refused(builder, dump, root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < BOMB // 4, f"held {peak:,} bytes at once"
    assert message.startswith(f"{dump}: ") and "(a gzip bomb?)" in message
    return message


def test_a_dblp_dump_of_spaces_after_its_root_is_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    monkeypatch.setattr(dblp, "PIECE", SMALL)
    monkeypatch.setattr(dblp, "RECORD", SMALL)
    header = _fixture_xml().split(b"<dblp>")[0] + b"<dblp>"
    dump = _dblp_dump(tmp_path / "hostile")
    _bomb(dump, header)
    message = _refused_in_bounded_memory(dblp.BUILDER, dump, root)
    assert "a record (or what lies between two) is longer than 1 MB" in message
    _dblp_still_there(root)


def test_a_crossref_file_expanding_past_its_cap_is_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crossref, "FILE_LIMIT", SMALL)
    dump = _bomb(tmp_path / "input" / "0.json.gz", b'{"items": [', b'{"DOI": "10.1/x"},')
    message = _refused_in_bounded_memory(crossref.builder(), dump, tmp_path / "snapshots")
    assert "its content is longer than 1 MB" in message


@pytest.mark.parametrize(
    ("module", "head"),
    [
        (arxiv, b'{"id": "2404.05961", "title": "'),
        (retractions, (FIXTURES / "retraction_watch.csv").read_bytes().split(b"\n")[0] + b'\n"'),
    ],
)
def test_a_line_longer_than_its_cap_refuses_the_file_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: Any, head: bytes
) -> None:
    monkeypatch.setattr(module, "LINE_LIMIT", SMALL)
    dump = _bomb(tmp_path / "input" / "dump.gz", head, b"x")
    message = _refused_in_bounded_memory(module.BUILDER, dump, tmp_path / "snapshots")
    assert "line 2 is longer than 1 MB" in message or "line 1 is longer than 1 MB" in message


def test_gzipped_dumps_stream_as_their_plain_files_do(tmp_path: Path) -> None:
    """arXiv's JSON lines and Retraction Watch's CSV, gzipped, build the snapshots their plain
    files build."""
    for module, name in (
        (arxiv, "arxiv-metadata-oai-snapshot.json"),
        (retractions, "retraction_watch.csv"),
    ):
        zipped = tmp_path / f"{name}.gz"
        zipped.write_bytes(gzip.compress((FIXTURES / name).read_bytes()))
        plain = build(module.BUILDER, [FIXTURES / name], tmp_path / "plain")
        packed = build(module.BUILDER, [zipped], tmp_path / "packed")
        assert (packed.records, packed.skipped, packed.date) == (
            plain.records,
            plain.skipped,
            plain.date,
        )
