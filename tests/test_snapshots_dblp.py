"""The dblp snapshot built from a dblp.xml.gz in dblp's own format (tests/fixtures/snapshots:
the recorded DBLP hits written as dblp records, and constructed records for the cases no
recorded answer shows), read back through the snapshot's index."""

import gzip
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.errors import exit_code, one_line
from tasks.registries.dblp import dblp_hit_to_csl
from tasks.snapshots import dblp
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.records import as_registry_record
from tasks.snapshots.store import SnapshotFormatError, build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"


def _dump(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    shutil.copy(FIXTURES / "dblp.xml.gz", folder / "dblp.xml.gz")
    return folder / "dblp.xml.gz"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Snapshot]:
    tmp = tmp_path_factory.mktemp("dblp")
    build(dblp.BUILDER, [_dump(tmp / "input")], tmp / "snapshots")
    snapshot = open_snapshot(tmp / "snapshots", "dblp")
    assert snapshot is not None
    return tmp / "snapshots", snapshot


def _one(snapshot: Snapshot, kind: str, value: str) -> dict:
    [record] = snapshot.by_ids([(kind, value)])[(kind, value)]
    return record


def test_the_snapshot_is_dated_by_the_dumps_newest_mdate(built: tuple[Path, Snapshot]) -> None:
    _, snapshot = built
    assert snapshot.label == "dblp@2026-11-02"
    # 539 recorded hits and 4 constructed works; the record without a title is left out and
    # counted, the person page (www) is no work.
    assert snapshot.manifest.records == 543
    assert snapshot.manifest.skipped == 1
    assert (
        snapshot.by_ids([("id", "homepages/v/AshishVaswani")])[("id", "homepages/v/AshishVaswani")]
        == []
    )


def test_crossref_gives_the_proceedings_title_and_authors_keep_their_order(
    built: tuple[Path, Snapshot],
) -> None:
    record = _one(built[1], "id", "conf/nips/VaswaniSPUJGKP17")
    assert record["title"] == "Attention is All you Need"  # dblp's closing period dropped
    assert record["container"] == "NIPS"
    assert record["container_full"].startswith("Advances in Neural Information Processing")
    assert record["type"] == "paper-conference" and record["year"] == 2017
    assert [a["family"] for a in record["authors"]][:3] == ["Vaswani", "Shazeer", "Parmar"]
    assert record["authors"][5] == {"family": "Gomez", "given": "Aidan N.", "literal": None}


def test_markup_entities_homonyms_and_the_corr_volume(built: tuple[Path, Snapshot]) -> None:
    record = _one(built[1], "arxiv", "2404.05961")  # from `volume abs/2404.05961` alone
    assert record["title"] == "Sparse k-Means for H2O Spectra in Rn"
    assert record["authors"] == [
        {"family": "van der Maaten", "given": "Laurens", "literal": None},
        {"family": "Wang", "given": "Wei", "literal": None},  # "Wei Wang 0001"
        {"family": "Müller", "given": "Jörg", "literal": None},  # J&ouml;rg M&uuml;ller 0002
    ]
    assert record["informal"] is True and record["type"] == "article"
    assert _one(built[1], "id", "journals/broken/BadYear24")["authors"][0]["given"] == "François"


def test_ee_links_give_dois_and_arxiv_ids(built: tuple[Path, Snapshot]) -> None:
    chapter = _one(built[1], "doi", "10.1017/9781108637435.016")
    assert chapter["id"] == "books/cu/20/Seshadhri20" and chapter["type"] == "chapter"
    corr = _one(built[1], "arxiv", "2402.17944")  # ee https://doi.org/10.48550/arXiv.2402.17944
    assert corr["doi"] == "10.48550/arxiv.2402.17944"
    assert corr["authors"][3]["family"] == "Zhang"  # "Jiani Zhang 0003"


def test_a_broken_year_is_left_empty_not_the_record(built: tuple[Path, Snapshot]) -> None:
    assert _one(built[1], "id", "journals/broken/BadYear24")["year"] is None


def test_a_title_search_finds_a_misspelt_title_first(built: tuple[Path, Snapshot]) -> None:
    [attention, absent, both] = built[1].by_title(
        [
            "Atention is all you need",
            "A title no record in the dump has anything like",
            "Learning to act: a reinforcement learning approach to recommend the best next "
            "activities",
        ]
    )
    assert attention[0]["id"] == "conf/nips/VaswaniSPUJGKP17" and attention[0]["score"] > 0.9
    assert absent == []
    assert {r["id"] for r in both[:2]} == {
        "conf/bpm/BranchiFGM0R22",
        "journals/corr/abs-2203-15398",
    }


def _failing_build(tmp_path: Path, dump: Path) -> str:
    with pytest.raises(SnapshotFormatError) as failure:
        build(dblp.BUILDER, [dump], tmp_path / "snapshots")
    assert exit_code(failure.value) == 2  # the user's input: a usage error, its one line shown
    assert one_line(failure.value) == str(failure.value)
    return str(failure.value)


def _rebuilt_old(tmp_path: Path) -> Path:
    """A first snapshot built from the fixture, so a failing build has one to leave intact."""
    dump = _dump(tmp_path / "input")
    build(dblp.BUILDER, [dump], tmp_path / "snapshots")
    return dump


def _still_there(tmp_path: Path) -> None:
    snapshot = open_snapshot(tmp_path / "snapshots", "dblp")
    assert snapshot is not None
    with snapshot:
        assert snapshot.manifest.records == 543
        assert _one(snapshot, "arxiv", "2404.05961")["title"].startswith("Sparse")


def test_a_dtd_with_a_new_record_type_fails_the_build_and_keeps_the_old(tmp_path: Path) -> None:
    dump = _rebuilt_old(tmp_path)
    dtd = dump.parent / "dblp.dtd"
    dtd.write_text(dtd.read_text().replace("mastersthesis|www)*>", "mastersthesis|www|podcast)*>"))
    message = _failing_build(tmp_path, dump)
    assert message.startswith(f"{dtd}: new record types podcast")
    assert "\n" not in message
    _still_there(tmp_path)


def test_a_dtd_without_a_field_we_read_fails_the_build(tmp_path: Path) -> None:
    dump = _rebuilt_old(tmp_path)
    dtd = dump.parent / "dblp.dtd"
    dtd.write_text(dtd.read_text().replace("<!ELEMENT ee        (#PCDATA)>", ""))
    assert "no longer declares ee" in _failing_build(tmp_path, dump)
    _still_there(tmp_path)


def test_a_dump_without_its_dtd_or_cut_short_fails_the_build(tmp_path: Path) -> None:
    dump = _rebuilt_old(tmp_path)
    (dump.parent / "dblp.dtd").unlink()
    assert "no dblp.dtd beside it" in _failing_build(tmp_path, dump)
    shutil.copy(FIXTURES / "dblp.dtd", dump.parent / "dblp.dtd")
    whole = gzip.decompress(dump.read_bytes())
    dump.write_bytes(gzip.compress(whole[: len(whole) // 2]))
    assert "a truncated download?" in _failing_build(tmp_path, dump)
    dump.write_bytes(gzip.compress(whole)[:-100])  # the download itself cut short
    assert "the gzip stream ends early; a truncated download?" in _failing_build(tmp_path, dump)
    _still_there(tmp_path)


def test_a_dump_cut_in_pieces_and_read_by_two_workers_writes_the_same_part(
    built: tuple[Path, Snapshot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces cut after whole records (entities, markup, skipped www records and all), parsed
    in two worker processes, give the records of the dump read whole, in its order."""
    monkeypatch.setattr(dblp, "PIECE", 4096)
    dump = _dump(tmp_path / "input")
    assert len(list(dblp.pieces(dump))) > 20
    manifest = build(dblp.BUILDER, [dump], tmp_path / "snapshots", workers=2)
    whole = built[1]
    assert (manifest.records, manifest.skipped) == (whole.manifest.records, 1)
    part = Path("parts") / "00000" / "part.parquet"
    pieces = pq.read_table(tmp_path / "snapshots" / "dblp" / part)
    assert pieces.num_rows == whole.manifest.records
    assert pieces.equals(pq.read_table(whole.folder / part))


def test_every_title_finds_its_record_in_one_chunk(built: tuple[Path, Snapshot]) -> None:
    """All the dump's titles asked at once (a chunk past the IN-list size: joins, not probes),
    and every identifier: each comes back as its own record."""
    _, snapshot = built
    records = [
        found[0]
        for found in snapshot.by_ids([("id", f"conf/x/{n}") for n in range(3)]).values()
        if found
    ]
    assert records == []
    keys = [("id", key) for key in _keys(snapshot)]
    found = snapshot.by_ids(keys)
    assert all(len(found[key]) == 1 and found[key][0]["id"] == key[1] for key in keys)
    titles = [found[key][0]["title"] for key in keys]
    best = snapshot.by_title(titles, limit=5)
    # A work dblp holds twice (the CoRR preprint and the paper) may come second, equally alike.
    missed = [
        (key, title, [(r["id"], r["score"]) for r in found])
        for (_, key), title, found in zip(keys, titles, best, strict=True)
        if key not in {r["id"] for r in found if r["score"] == found[0]["score"]}
    ]
    assert missed == []


def test_records_read_back_as_their_parts_hold_them(built: tuple[Path, Snapshot]) -> None:
    """The record store (compressed JSON blocks) gives back each column as written: dates,
    authors' structs, missing values, Latin-1 letters."""
    _, snapshot = built
    written = pq.read_table(snapshot.folder / "parts" / "00000" / "part.parquet").to_pylist()
    found = snapshot.by_ids([("id", row["id"]) for row in written])
    for row in written:
        [record] = found[("id", row["id"])]
        assert record.pop("container_full") is None or row["parent"]  # the index's own column
        row.pop("container_full"), row.pop("title_key")
        assert record == row


def _keys(snapshot: Snapshot) -> list[str]:
    written = pq.read_table(snapshot.folder / "parts" / "00000" / "part.parquet")
    return sorted(written["id"].to_pylist())


def test_threads_share_a_snapshot(built: tuple[Path, Snapshot]) -> None:
    _, snapshot = built
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(lambda _: snapshot.by_title(["Attention is all you need"]), range(8))
        )
    assert {found[0][0]["id"] for found in answers} == {"conf/nips/VaswaniSPUJGKP17"}


def test_a_record_maps_to_csl_as_the_live_dblp_client_maps_a_hit(
    built: tuple[Path, Snapshot],
) -> None:
    found = as_registry_record(_one(built[1], "id", "books/cu/20/Seshadhri20"), "dblp")
    live = dblp_hit_to_csl(
        next(h["info"] for h in _hits() if h["info"]["key"] == "books/cu/20/Seshadhri20")
    )
    assert found.identifier == live.identifier
    for field in ("type", "title", "author", "container_title", "page", "DOI", "issued"):
        assert getattr(found.item, field) == getattr(live.item, field), field


def _hits() -> list[dict]:
    source = Path(__file__).parent / "fixtures" / "registry" / "dblp_hits.jsonl.gz"
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]
