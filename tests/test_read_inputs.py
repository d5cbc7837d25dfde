"""read_inputs: format detection from content, grouping of .bib files, forced formats."""

import shutil
from pathlib import Path

import pytest

from tasks.read import FORMATS
from tasks.read.inputs import READERS, detect_reader, read_inputs
from tasks.read.text import read_head

FIXTURES = Path(__file__).parent / "fixtures" / "reflists"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("manubot_bibliography.bib", "bibtex"),
        ("manubot_bibliography.ris", "ris"),
        ("asreview_pubmed_endnote.txt", "ris"),
        ("asreview_web_of_science.txt", "ris"),
        ("manubot_bibliography.nbib", "ris"),
        ("rispy_example_wos.ris", "ris"),
        ("manubot_bibliography.json", "csljson"),
        ("manubot_crossref-deep-review-csl.raw.json", "csljson"),
        ("crew_report.md", "markdown"),
        ("malformed/utf8_bom.txt", "plaintext"),
        ("malformed/utf16.bib", "bibtex"),
    ],
)
def test_detection_by_content_not_name(tmp_path: Path, name: str, expected: str) -> None:
    renamed = tmp_path / "input.dat"  # the extension must not decide
    shutil.copy(FIXTURES / name, renamed)
    assert expected == detect_reader(renamed, read_head(renamed)).FORMAT


def test_a_job_with_mixed_inputs(tmp_path: Path) -> None:
    iridia = sorted((FIXTURES / "iridia").glob("*.bib"))
    inputs = [
        *iridia,
        FIXTURES / "manubot_bibliography.ris",
        FIXTURES / "manubot_bibliography.json",
        FIXTURES / "crew_report.md",
        FIXTURES / "malformed" / "binary.bib",
        FIXTURES / "malformed" / "utf8_bom.txt",
    ]

    result = read_inputs(inputs)

    by_file: dict[str, int] = {}
    for reference in result.references:
        by_file[reference.provenance.source_file] = (
            by_file.get(reference.provenance.source_file, 0) + 1
        )
    # crossref targets in crossref.bib are found although crossref.bib is read in the same group
    assert by_file[str(FIXTURES / "iridia" / "biblio.bib")] > 1000
    assert by_file[str(FIXTURES / "manubot_bibliography.ris")] == 2
    assert by_file[str(FIXTURES / "manubot_bibliography.json")] == 2
    assert by_file[str(FIXTURES / "malformed" / "utf8_bom.txt")] == 1
    assert result.claims and all(c.source_file.endswith("crew_report.md") for c in result.claims)
    unreadable = [e for e in result.errors if "unreadable" in e.reason]
    assert [e.source_file for e in unreadable] == [str(FIXTURES / "malformed" / "binary.bib")]


def test_forced_format_and_unknown_format() -> None:
    report = FIXTURES / "crew_report.md"
    as_text = read_inputs([report], format="plaintext")
    assert as_text.claims == []
    assert len(as_text.references) == len(
        [
            line
            for line in report.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
    )
    with pytest.raises(ValueError, match="unknown input format"):
        read_inputs([report], format="docx")


def test_an_input_that_gives_nothing_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.bib"
    empty.write_text("\n")
    bib = FIXTURES / "manubot_bibliography.bib"
    result = read_inputs([empty, bib])
    assert [(e.source_file, e.reason) for e in result.errors] == [
        (str(empty), "no references found (read as bibtex)")
    ]
    wrong = read_inputs([bib], format="ris")
    assert [e.reason for e in wrong.errors] == ["no references found (read as ris)"]
    # A Markdown file with nothing cited is an error even beside one that cites.
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nNothing cited here.\n")
    beside = read_inputs([notes, FIXTURES / "crew_report.md"])
    assert [e.source_file for e in beside.errors if "no references" in e.reason] == [str(notes)]
    # BibTeX files holding only @string definitions for the others are no error.
    iridia = read_inputs(sorted((FIXTURES / "iridia").glob("*.bib")))
    assert not [e for e in iridia.errors if "no references" in e.reason]


def test_every_reader_follows_the_protocol() -> None:
    formats = [reader.FORMAT for reader in READERS]
    assert formats == list(FORMATS)  # each module under its own name (--format checks FORMATS)
    assert READERS[-1].FORMAT == "plaintext"  # the catch-all comes last
    for reader in READERS:
        assert callable(reader.detect) and callable(reader.read)
