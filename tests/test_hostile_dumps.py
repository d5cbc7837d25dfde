"""Hostile dumps given to `snapshot build`: each is refused in one line naming its file (or its
broken records skipped, counted and named), reads no file it was not given, holds bounded
memory whatever it expands to, and leaves the snapshot built before it in place."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tasks.errors import exit_code, one_line
from tasks.lookup.snapshots import LocalSnapshots
from tasks.snapshots import arxiv, bounded, crossref, dblp, openalex, pubmed, retractions
from tasks.snapshots.index import open_snapshot
from tasks.snapshots.store import (
    Builder,
    SnapshotFormatError,
    build,
    damage,
    damaged,
    status,
)

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


def _refused_holding(builder: Builder, dump: Path, root: Path, most: int) -> str:
    """The one line `dump` is refused with, naming it; the build held less than `most` bytes
    at once (Python's allocations)."""
    tracemalloc.start()
    try:
        message = _refused(builder, dump, root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < most, f"held {peak:,} bytes at once"
    assert message.startswith(f"{dump}: ")
    return message


def _refused_in_bounded_memory(builder: Builder, dump: Path, root: Path) -> str:
    """The one line the bomb is refused with; what the build held at once stayed far under
    what the bomb expands to."""
    message = _refused_holding(builder, dump, root, BOMB // 4)
    assert "(a gzip bomb?)" in message
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


def _crossref_part(path: Path, items: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(b'{"items": [' + items + b"]}", compresslevel=1))
    return path


def test_a_crossref_file_of_millions_of_tiny_items_is_refused_before_they_are_decoded(
    tmp_path: Path,
) -> None:
    # 9 MB of `{},`: decoded whole, hundreds of MB of work objects
    dump = _crossref_part(tmp_path / "input" / "0.json.gz", b",".join([b"{}"] * 3_000_001))
    message = _refused_holding(crossref.builder(), dump, tmp_path / "snapshots", 48 << 20)
    assert "its items array holds more than 3,000,000 JSON values" in message


def test_a_crossref_item_of_a_million_tiny_values_is_refused_naming_it(tmp_path: Path) -> None:
    tiny = b",".join([b"{}"] * 600_000)
    items = b'{"DOI": "10.1/a"}, {"DOI": "10.1/b", "title": [' + tiny + b"]}"
    dump = _crossref_part(tmp_path / "input" / "0.json.gz", items)
    message = _refused_holding(crossref.builder(), dump, tmp_path / "snapshots", 16 << 20)
    assert "item 1 holds more than 500,000 JSON values" in message


def test_a_crossref_item_longer_than_its_cap_is_refused_naming_it(tmp_path: Path) -> None:
    items = b'{"DOI": "10.1/a"}, {"DOI": "10.1/b", "title": ["' + b"x" * (17 << 20) + b'"]}'
    dump = _crossref_part(tmp_path / "input" / "0.json.gz", items)
    message = _refused(crossref.builder(), dump, tmp_path / "snapshots")
    assert message.startswith(f"{dump}: item 1 is longer than 16 MB")


def test_an_openalex_line_of_millions_of_tiny_values_is_refused_naming_it(tmp_path: Path) -> None:
    tiny = b",".join([b"{}"] * 2_000_001)
    line = b'{"id": "https://openalex.org/W1", "authorships": [' + tiny + b"]}\n"
    dump = tmp_path / "works" / "updated_date=2024-01-01" / "part_000.gz"
    dump.parent.mkdir(parents=True)
    dump.write_bytes(gzip.compress(line, compresslevel=1))
    message = _refused_holding(openalex.builder(), dump, tmp_path / "snapshots", 48 << 20)
    assert "line 1 holds more than 2,000,000 JSON values" in message


def test_a_pubmed_record_of_millions_of_tiny_elements_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    # parsed, each `<a/>` is a node tens of times its four bytes
    record = b"<PubmedArticle>" + b"<a/>" * 2_000_000 + b"</PubmedArticle>"
    dump = tmp_path / "input" / "pubmed25n0001.xml.gz"
    dump.parent.mkdir(parents=True)
    dump.write_bytes(gzip.compress(b"<PubmedArticleSet>" + record + b"</PubmedArticleSet>", 1))
    message = _refused(pubmed.BUILDER, dump, tmp_path / "snapshots")
    assert message.startswith(f"{dump}: a record (or what lies between two) is longer than 4 MB")


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


def test_arxiv_lines_of_the_wrong_types_are_skipped_counted_and_named(tmp_path: Path) -> None:
    good = (FIXTURES / "arxiv-metadata-oai-snapshot.json").read_text().splitlines()
    first = json.loads(good[0])
    bad = [
        {**first, "id": "2501.00001", "title": ["a", "list"]},
        {**first, "id": "2501.00002", "versions": ["v1", "v2"]},
        {**first, "id": "2501.00003", "authors_parsed": [5]},
    ]
    dump = tmp_path / "arxiv.json"
    dump.write_text("\n".join([*good[:3], *(json.dumps(b) for b in bad), *good[3:]]) + "\n")
    plain = build(arxiv.BUILDER, [FIXTURES / "arxiv-metadata-oai-snapshot.json"], tmp_path / "a")
    manifest = build(arxiv.BUILDER, [dump], tmp_path / "b")
    assert (manifest.records, manifest.skipped) == (plain.records, plain.skipped + 3)
    named = [w for w in manifest.broken if w.startswith(f"{dump}:4:") or "$." in w]
    assert named == [
        f"{dump}:4: Expected `str | null`, got `array` - at `$.title`",
        f"{dump}:5: Expected `object`, got `str` - at `$.versions[0]`",
        f"{dump}:6: Expected `array`, got `int` - at `$.authors_parsed[0]`",
    ]


def test_a_retraction_watch_field_over_128_kb_is_skipped_and_named(tmp_path: Path) -> None:
    rows = (FIXTURES / "retraction_watch.csv").read_text(encoding="utf-8").split("\n")
    header, first = rows[0], rows[1]
    huge = first.replace("Haiyan Zhang", "Z" * 200_000, 1)
    csv = tmp_path / "rw.csv"
    csv.write_text("\n".join([header, huge, *rows[1:]]), encoding="utf-8")
    plain = build(retractions.BUILDER, [FIXTURES / "retraction_watch.csv"], tmp_path / "a")
    manifest = build(retractions.BUILDER, [csv], tmp_path / "b")
    assert (manifest.records, manifest.skipped) == (plain.records, plain.skipped + 1)
    assert manifest.broken[0] == (
        f"{csv}:2: broken row skipped: field larger than field limit (131072)"
    )


def test_the_cli_summary_names_each_broken_record(tmp_path: Path) -> None:
    dump = tmp_path / "arxiv.json"
    good = (FIXTURES / "arxiv-metadata-oai-snapshot.json").read_text().splitlines()
    title_list = {**json.loads(good[0]), "id": "2501.00001", "title": [":cat: [b]x[/b]"]}
    dump.write_text("\n".join([good[0], json.dumps(title_list)]) + "\n")
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(tmp_path / "snapshots")}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "snapshot", "build", "arxiv", str(dump)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("arxiv@") and "1 broken record skipped" in done.stdout
    said = f"skipped: {dump}:2: Expected `str | null`, got `array` - at `$.title`"
    assert said in done.stderr.splitlines()


def test_a_snapshot_whose_files_changed_is_damaged_and_not_opened(tmp_path: Path) -> None:
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    folder = root.resolve() / root.joinpath("dblp").readlink()
    assert damage(folder) is None and damaged(status(root)) == {}
    records = folder / "records.arrow"
    whole = records.read_bytes()
    records.write_bytes(whole[: len(whole) // 2])
    wrong = f"records.arrow holds {len(whole) // 2:,} bytes, {len(whole):,} when built"
    assert damage(folder) == wrong
    assert damaged(status(root)) == {"dblp": f"dblp ({folder}): {wrong}"}
    assert open_snapshot(root, "dblp") is None
    assert LocalSnapshots.open(root) is None  # lookups go on as without it
    records.write_bytes(whole)
    assert open_snapshot(root, "dblp") is not None
    (folder / "manifest.json").write_text("{")
    assert damage(folder).startswith("manifest.json unreadable")
    assert open_snapshot(root, "dblp") is None


def test_snapshot_status_shows_a_damaged_snapshot_as_damaged_naming_its_file(
    tmp_path: Path,
) -> None:
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    folder = root.resolve() / root.joinpath("dblp").readlink()
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(root), "COLUMNS": "400"}

    def said() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", "snapshot", "status"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "DAMAGED" not in said()
    records = folder / "records.arrow"
    records.write_bytes(records.read_bytes()[:100])
    assert "DAMAGED: records.arrow holds 100 bytes" in said()


def test_an_audit_warns_once_of_a_damaged_snapshot_and_goes_on_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index's identifiers shuffled (its size unchanged): one warning naming the snapshot
    and the file, not the stale one too; lookups ask no snapshot (never its wrong answers)."""
    from flows.cli.snapshot import warn_if_stale

    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    rids = root / "dblp" / "id_rids.u32"
    rids.write_bytes(np.fromfile(rids, "<u4")[::-1].tobytes())
    monkeypatch.setenv("CITEAUDIT_SNAPSHOTS", str(root))
    warn_if_stale()
    [warning] = capsys.readouterr().err.splitlines()
    assert warning.startswith("warning: local snapshot dblp (")
    assert warning.endswith(
        "id_rids.u32 is not the file built (its hash differs): skipped; "
        "run `citeaudit snapshot build` again"
    )
    assert LocalSnapshots.open(root) is None


@pytest.mark.parametrize("workers", [1, 2])
def test_an_entity_dblp_dtd_does_not_declare_refuses_the_dump(tmp_path: Path, workers: int) -> None:
    root = tmp_path / "snapshots"
    _old_dblp(root, tmp_path)
    xml = _fixture_xml()
    at = xml.index(b"<author>") + len(b"<author>")
    dump = _dblp_dump(tmp_path / "hostile", xml[:at] + b"J&foobar;rgen " + xml[at:])
    with pytest.raises(SnapshotFormatError) as failure:
        build(dblp.BUILDER, [dump], root, workers=workers)
    assert str(failure.value) == (
        f"{dump}: Entity 'foobar' not defined: an entity dblp.dtd does not declare; not dblp's "
        "XML; the snapshot was not changed"
    )
    _dblp_still_there(root)


def test_read_whole_holds_little_before_it_knows_a_file_ends_within_its_limit(
    tmp_path: Path,
) -> None:
    """A file past what read_whole holds on trust but within its limit is read whole (twice:
    counted, then held); a bomb past the limit is refused having held only the trusted part."""
    content = bytes(range(256)) * (3 * SMALL // 256)
    fits = tmp_path / "fits.gz"
    fits.write_bytes(gzip.compress(content, compresslevel=1))
    assert bounded.read_whole(fits, limit=8 * SMALL, held=SMALL) == content
    bomb = _bomb(tmp_path / "bomb.gz", b"{")
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotFormatError) as failure:
            bounded.read_whole(bomb, limit=32 * SMALL, held=SMALL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "its content is longer than 32 MB" in str(failure.value)
    assert peak < 8 * SMALL, f"held {peak:,} bytes at once"


@pytest.mark.parametrize("name", ["dblp", "crossref"])
def test_a_build_given_no_file_of_its_dump_is_one_line_and_exit_2(tmp_path, name) -> None:
    """A file that is no part of the dump (a wrong name or folder) is refused in one line, not
    an internal error from the index over no parts."""
    given = tmp_path / "notes.txt"
    given.write_text("not a dump\n")
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(tmp_path / "snapshots")}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "snapshot", "build", name, str(given)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"citeaudit: error: {given}: holds no file of a {name} dump; the snapshot was not changed"
    )
