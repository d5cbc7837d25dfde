"""Broken and hostile input files: each bad entry or file is one clear error naming the file (and
entry), everything else is read, and a 50 MB input keeps memory bounded."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.read import read_inputs

MALFORMED = Path(__file__).parent / "fixtures" / "reflists" / "malformed"
LONG = "x" * 100_000
# Peak RSS growth allowed while reading a 50 MB file: a few times its size, not unbounded.
RSS_BOUND_MB = 250
LONG_ENTRY = f"@article{{long1, title={{{LONG}}}, author={{{LONG}}}, year={{2020}}}}\n"
GOOD_BIB = """@article{good1, title={Deep residual learning}, author={He, Kaiming}, year={2016},
  doi={10.1109/cvpr.2016.90}}
"""


def hostile_files(folder: Path) -> dict[str, Path]:
    """The bundled malformed fixtures plus generated ones, by what is wrong with them."""
    for path in MALFORMED.iterdir():
        shutil.copy(path, folder / path.name)
    made = {
        "truncated.json": '[{"id": "a", "title": "T"}, {"id": ',
        "long_fields.bib": LONG_ENTRY + GOOD_BIB,
        "garbage.ris": "TY  - JOUR\nTI  - fine\nER  - \n\n" + "\x01\x02 junk \x03" * 10,
    }
    for name, text in made.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "good.bib").write_text(GOOD_BIB.replace("good1", "good2"), encoding="utf-8")
    return {path.name: path for path in sorted(folder.iterdir())}


def test_every_bad_entry_is_an_error_and_the_rest_is_read(tmp_path: Path) -> None:
    files = hostile_files(tmp_path)
    result = read_inputs(list(files.values()))
    by_file: dict[str, list[str]] = {}
    for error in result.errors:
        assert error.reason.strip() and not error.reason.rstrip().endswith(":"), error
        assert error.source_file in {str(p) for p in files.values()}
        by_file.setdefault(Path(error.source_file).name, []).append(error.entry_key or "")
    assert set(by_file) >= {
        "binary.bib",
        "truncated.json",
        "bad_item.json",
        "broken_brace.bib",
        "record_without_ty.ris",
    }
    assert "Broken2019" in by_file["broken_brace.bib"]
    assert "bad-author" in by_file["bad_item.json"]
    read_from = {Path(r.provenance.source_file).name for r in result.references}
    # Latin-1, UTF-16 and BOM files decode; good entries next to bad ones are kept.
    assert read_from >= {"latin1.ris", "utf16.bib", "utf8_bom.txt", "good.bib", "long_fields.bib"}
    long_ref = next(r for r in result.references if r.provenance.entry_key == "long1")
    assert long_ref.item.title == LONG


MEASURE = """
import json, resource, sys
from pathlib import Path
from tasks.read import read_inputs
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = read_inputs([Path(sys.argv[1])])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_mb": (after - before) / 1024, "refs": len(result.references),
                  "errors": [e.reason for e in result.errors]}))
"""


def peak_rss_growth(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    measured: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return measured


def test_a_50_mb_file_of_100k_character_fields_reads_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.bib"
    with path.open("w", encoding="utf-8") as handle:
        n = 0
        while handle.tell() < 50_000_000:
            handle.write(f"@article{{k{n}, title={{{LONG}}}, author={{Doe, J.}}, year={{2020}}}}\n")
            n += 1
    measured = peak_rss_growth(path)
    assert measured["refs"] == n and measured["errors"] == []
    assert isinstance(measured["growth_mb"], float) and measured["growth_mb"] < RSS_BOUND_MB


def test_a_50_mb_binary_file_is_one_error_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "blob.bib"
    path.write_bytes(b"\x00\xff" * 25_000_000)
    measured = peak_rss_growth(path)
    assert measured["refs"] == 0
    assert measured["errors"] == ["unreadable file: binary content (NUL bytes)"]
    assert isinstance(measured["growth_mb"], float) and measured["growth_mb"] < 60


@pytest.mark.usefixtures("prefect_harness")
def test_the_cli_reports_each_bad_entry_and_audits_the_rest(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    files = hostile_files(tmp_path / "in")
    result = CliRunner().invoke(
        app,
        ["audit", *map(str, files.values()), "--job", "hostile-in", "--out", str(tmp_path / "out")]
        + ["--db", str(tmp_path / "db.duckdb"), "--offline", "--styles", "apa"],
    )
    assert result.exit_code == 0, result.output
    assert "input error" in result.output
    assert "broken_brace.bib:Broken2019: malformed entry" in result.output
    assert "binary.bib: unreadable file" in result.output
