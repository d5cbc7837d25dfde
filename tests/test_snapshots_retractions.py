"""The retractions snapshot built from Retraction Watch's CSV in the form Crossref distributes it
(tests/fixtures/snapshots/retraction_watch.csv: real rows' identifiers, dates, natures and
reasons; quoted commas, a note over three lines, a blank line, a row cut short, a row without
its Record ID, a garbled date), read back through the snapshot's index."""

import logging
from pathlib import Path

import duckdb
import pytest

from tasks.snapshots import retractions
from tasks.snapshots.index import Snapshot, open_snapshot
from tasks.snapshots.store import SnapshotFormatError, build

CSV = Path(__file__).parent / "fixtures" / "snapshots" / "retraction_watch.csv"


def _built(tmp_path: Path, csv: Path = CSV) -> Snapshot:
    build(retractions.BUILDER, [csv], tmp_path / "snapshots")
    snapshot = open_snapshot(tmp_path / "snapshots", "retractions")
    assert snapshot is not None
    return snapshot


def test_each_notice_is_found_by_the_original_papers_doi_and_pmid(tmp_path: Path) -> None:
    with _built(tmp_path) as snapshot:
        assert snapshot.label == "retractions@2024-02-14"  # the newest notice
        found = snapshot.by_ids(
            [("doi", "10.1016/j.micpro.2020.103053"), ("pmid", "27013874"), ("doi", "10.1/none")]
        )
    both = {row["nature"]: row for row in found[("doi", "10.1016/j.micpro.2020.103053")]}
    concern, retraction = both["expression_of_concern"], both["retraction"]
    assert (str(concern["date"]), concern["id"]) == ("2021-06-25", "72867")
    assert retraction["notice_doi"] == "10.1016/j.micpro.2024.105024"
    [correction] = found[("pmid", "27013874")]
    assert correction["doi"] == "10.2147/ijn.s97476" and correction["notice_pmid"] == "35959284"
    assert correction["reason"].startswith("Concerns/Issues about Data; Concerns/Issues about Ref")
    assert found[("doi", "10.1/none")] == []


def test_the_older_exports_plus_signs_unavailable_dois_and_encoded_dois(tmp_path: Path) -> None:
    with _built(tmp_path) as snapshot:
        [old] = snapshot.by_ids([("doi", "10.1155/2021/6907871")])[("doi", "10.1155/2021/6907871")]
        sici = "10.1002/1096-9098(200007)74:3<201::aid-jso8>3.0.co;2-5"
        [encoded] = snapshot.by_ids([("doi", sici)])[("doi", sici)]
    assert old["reason"].split("; ")[:2] == [
        "Concerns/Issues About Data",
        "Concerns/Issues About Results",
    ]
    assert old["id"] == "50438"
    assert old["pmid"] is None and old["notice_pmid"] is None  # the CSV's 0
    [no_doi] = [row for row in retractions.read_notices(CSV) if row["id"] == "70548"]
    assert no_doi["doi"] is None and no_doi["notice_doi"] is None  # "unavailable"
    assert no_doi["title"] == 'Placeholder workshop paper, "quoted", with commas'
    assert encoded["id"] == "40040"


def test_broken_rows_are_skipped_with_their_lines_and_the_rest_built(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), _built(tmp_path) as snapshot:
        assert (snapshot.manifest.records, snapshot.manifest.skipped) == (9, 2)
        doi = ("doi", "10.1177/placeholder.paper")
        [garbled] = snapshot.by_ids([doi])[doi]
    assert garbled["date"] is None and garbled["nature"] == "retraction"
    assert snapshot.manifest.broken == [  # named in the build's summary
        f"{CSV}:7: broken row skipped: 5 fields, the header has 20",
        f"{CSV}:13: broken row skipped: no Record ID",
    ]
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"{CSV}:15: RetractionDate '13/45/2021 0:00'") for m in said)


def test_rows_are_read_as_duckdbs_csv_reader_reads_them() -> None:
    """Quoting, doubled quotes and a note over three lines, as another CSV reader sees them."""
    ours = {str(row["id"]): row for row in retractions.read_notices(CSV)}
    theirs = duckdb.sql(
        f"""SELECT "Record ID", Title, RetractionNature FROM read_csv('{CSV}', header = true,
        all_varchar = true, ignore_errors = true) WHERE "Record ID" IS NOT NULL"""
    ).fetchall()
    assert sorted(ours) == sorted(record for record, _, _ in theirs)
    for record, title, nature in theirs:
        assert ours[record]["title"] == title
        assert ours[record]["nature"] == nature.lower().replace(" ", "_")


def test_a_changed_header_fails_naming_the_file_and_columns_and_keeps_the_old(
    tmp_path: Path,
) -> None:
    _built(tmp_path).close()
    header, rest = CSV.read_text(encoding="utf-8").split("\n", 1)
    changed = tmp_path / "retraction_watch.csv"
    header = header.replace("RetractionNature", "NatureOfNotice").rstrip(",\r") + ",Language\r"
    changed.write_text(header + "\n" + rest, encoding="utf-8")
    with pytest.raises(SnapshotFormatError) as failure:
        build(retractions.BUILDER, [changed], tmp_path / "snapshots")
    assert str(failure.value) == (
        f"{changed}: Retraction Watch's columns changed: no RetractionNature; "
        "new NatureOfNotice, Language; the snapshot was not changed"
    )
    with open_snapshot(tmp_path / "snapshots", "retractions") as old:  # type: ignore[union-attr]
        assert old.manifest.records == 9


def test_an_export_in_windows_1252_without_the_trailing_comma(tmp_path: Path) -> None:
    text = CSV.read_text(encoding="utf-8").replace("Notes,\r\n", "Notes\r\n", 1)
    latin = tmp_path / "retraction_watch.csv"
    latin.write_bytes(text.encode("cp1252"))
    with _built(tmp_path, latin) as snapshot:
        [row] = snapshot.by_ids([("pmid", "10951417")])[("pmid", "10951417")]
        assert snapshot.manifest.records == 9
    assert row["title"] == "Placeholder surgical oncology paper from Genève"
    assert [n["id"] for n in retractions.read_notices(latin)][-1] == "34998"
