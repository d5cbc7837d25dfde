"""Broken and hostile input files: each bad entry or file is one clear error naming the file (and
entry), everything else is read, and a 50 MB input keeps memory bounded."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from tasks.read.inputs import read_inputs

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
from tasks.read.inputs import read_inputs
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
    # binary.bib is a PNG: a file that is no bibliography at all is a usage error (exit 2,
    # tests/test_exit_codes.py); bad entries and damaged text files are not.
    files = dict(hostile_files(tmp_path / "in"))
    files.pop("binary.bib")
    result = CliRunner().invoke(
        app,
        ["audit", *map(str, files.values()), "--job", "hostile-in", "--out", str(tmp_path / "out")]
        + ["--db", str(tmp_path / "db.duckdb"), "--offline", "--styles", "apa"],
    )
    assert result.exit_code == 0, result.output
    assert "input error" in result.output
    assert "broken_brace.bib:Broken2019: malformed entry" in result.output
    assert "truncated.json" in result.output


ACCENTED_BIB = (
    "@article{muller2001, author={M\u00fcller, J\u00fcrgen and \u00d1and\u00fa, Jos\u00e9},"
    " title={\u00c9tude l\u00e9g\u00e8re}, year={2001}}\n"
    "@article{godel1931, author={G\u00f6del, Kurt},"
    " title={\u00dcber formal unentscheidbare S\u00e4tze}, year={1931}}\n"
)


def test_one_stray_byte_changes_nothing_else_and_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "stray.bib"
    path.write_bytes(ACCENTED_BIB.encode().replace(b"year={1931}", b"year={1931}\xff"))
    result = read_inputs([path])
    authors = {r.provenance.entry_key: r.item.author for r in result.references}
    assert [a.family for a in authors["muller2001"] or []] == ["M\u00fcller", "\u00d1and\u00fa"]
    assert [a.family for a in authors["godel1931"] or []] == ["G\u00f6del"]
    [warning] = result.errors
    assert warning.source_file == str(path) and warning.reason.startswith("warning:")
    assert "line 2" in warning.reason


def test_a_legacy_encoding_is_detected_for_the_whole_file_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "legacy.bib"
    path.write_bytes(ACCENTED_BIB.encode("cp1252", errors="replace"))
    result = read_inputs([path])
    titles = {r.item.title for r in result.references}
    assert titles == {"\u00c9tude l\u00e9g\u00e8re", "\u00dcber formal unentscheidbare S\u00e4tze"}
    [warning] = result.errors
    assert warning.source_file == str(path) and "cp1252" in warning.reason


def test_a_latin1_list_of_mostly_english_titles_is_read_as_latin1(tmp_path: Path) -> None:
    # A few accented names among English titles: too little for a language guess, which read
    # this file as the DOS Baltic code page (ü as ³) before a near-tie went to Windows-1252.
    english = (Path(__file__).resolve().parents[1] / "examples" / "references.bib").read_text()
    german = (
        "@article{muller1999, author = {M\u00fcller, J\u00fcrgen and Gonz\u00e1lez, Jos\u00e9},\n"
        "  title = {\u00dcber die Stabilit\u00e4t von Tr\u00e4gern}, year = {1999}}\n"
    )
    path = tmp_path / "latin1.bib"
    path.write_bytes((german + english).encode("latin-1"))
    result = read_inputs([path])
    [muller] = [r.item for r in result.references if r.provenance.entry_key == "muller1999"]
    assert [a.family for a in muller.author or []] == ["M\u00fcller", "Gonz\u00e1lez"]
    assert muller.title == "\u00dcber die Stabilit\u00e4t von Tr\u00e4gern"
    assert len(result.references) == 6
    [warning] = result.errors
    assert "read as cp1252" in warning.reason


def test_a_line_that_is_a_sici_doi_is_a_doi(tmp_path: Path) -> None:
    sici = "10.1175/1520-0493(1974)102<0736:wacoj>2.0.co;2"
    path = tmp_path / "dois.txt"
    path.write_text(f"{sici}\n", encoding="utf-8")
    [ref] = read_inputs([path]).references
    assert ref.ids.doi == sici
    assert ref.item.issued is None  # the (1974) inside the DOI is not a claimed year


def test_json_nested_a_thousand_levels_is_an_input_error_for_that_file(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 1000 + "]" * 1000, encoding="utf-8")
    deep_object = tmp_path / "deep_object.json"
    deep_object.write_text('{"a":' * 500 + "1" + "}" * 500, encoding="utf-8")
    good = tmp_path / "good.bib"
    good.write_text(GOOD_BIB, encoding="utf-8")
    result = read_inputs([deep, deep_object, good])
    assert [r.provenance.entry_key for r in result.references] == ["good1"]
    failed = {Path(e.source_file).name: e.reason for e in result.errors}
    assert set(failed) == {"deep.json", "deep_object.json"}
    assert all("nested deeper" in reason for reason in failed.values())


BOUNDED_READ = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
from tasks.read.inputs import read_inputs
result = read_inputs([Path(p) for p in sys.argv[1:]])
print(json.dumps({"refs": [r.provenance.entry_key for r in result.references],
                  "errors": [[e.source_file, e.entry_key, e.reason] for e in result.errors]}))
"""


def test_doubling_string_macros_are_an_input_error_not_gigabytes(tmp_path: Path) -> None:
    macros = ['@string{m0 = "xx"}'] + [
        f"@string{{m{n} = m{n - 1} # m{n - 1}}}" for n in range(1, 36)
    ]
    bomb = tmp_path / "bomb.bib"
    bomb.write_text("\n".join(macros) + "\n@article{boom, title = m35, year = 2020}\n")
    assert bomb.stat().st_size < 1000  # expands to 2**36 characters
    good = tmp_path / "good.bib"
    good.write_text(GOOD_BIB, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", BOUNDED_READ, str(bomb), str(good)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout.splitlines()[-1])
    assert read["refs"] == ["good1"]
    [[source, entry, reason]] = read["errors"]
    assert (source, entry) == (str(bomb), "boom") and "@string" in reason


def test_reading_a_big_bibtex_list_peaks_in_bounded_memory_per_entry(tmp_path: Path) -> None:
    from bench.bulk_memory import write_bib

    path = tmp_path / "bulk.bib"
    write_bib(path, 5_000)
    measured = peak_rss_growth(path)
    assert measured["refs"] == 5_000
    growth_mb = measured["growth_mb"]
    assert isinstance(growth_mb, float) and growth_mb * 1024 / 5_000 < 25  # KB per entry
