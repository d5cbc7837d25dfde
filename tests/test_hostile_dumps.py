"""Hostile dumps given to `snapshot build`: each is refused in one line naming its file (or its
broken records skipped, counted and named), reads no file it was not given, holds bounded
memory whatever it expands to, and leaves the snapshot built before it in place."""

import gzip
import shutil
from pathlib import Path

import pytest

from tasks.errors import exit_code, one_line
from tasks.snapshots import dblp
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
