"""A manuscript beside its .bib: only what the paper cites is audited, and what does not line up
(a key cited but missing, an entry never cited) is reported with file, key and line."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from tasks.read.inputs import read_inputs
from tasks.read.manuscript import is_manuscript, read_manuscript

BIB = Path(__file__).resolve().parents[1] / "examples" / "references.bib"
LATEX = r"""\documentclass{article}
\begin{document}
Accelerators are surveyed by \citet{chen2020survey}, and FRET was used
\citep[see][p.~3]{tosatto2015, ralser2006}. % \cite{made2023up} is commented out
Other work \parencite{missing2021} and \autocite*{tosatto2015}; \cite{ chen2020survey }.
A 50\% rise \cite{ralser2006}.
\end{document}
"""
MARKDOWN = """# Results

Accelerators are surveyed by @chen2020survey, and FRET was used [see @tosatto2015, p. 3;
-@ralser2006]. Write to me@example.org. Other work [@missing2021; @{ralser2006}].
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text"), [("paper.tex", LATEX), ("paper.md", MARKDOWN)], ids=["latex", "pandoc"]
)
def test_cited_keys_and_lines(tmp_path: Path, name: str, text: str) -> None:
    paper = write(tmp_path, name, text)
    assert is_manuscript(paper)
    cited = [(c.key, c.line) for c in read_manuscript(paper).citations]
    assert ("made2023up", 4) not in cited  # a LaTeX comment, not a citation
    assert ("me", 4) not in cited and "example.org" not in {k for k, _ in cited}
    assert {k for k, _ in cited} == {
        "chen2020survey",
        "tosatto2015",
        "ralser2006",
        "missing2021",
    }
    assert ("missing2021", 5 if name.endswith(".tex") else 4) in cited


def test_a_crew_report_is_no_manuscript(tmp_path: Path) -> None:
    report = write(tmp_path, "report.md", "Claims [1].\n\n## References\n1. Smith J. X. 2020.\n")
    assert not is_manuscript(report)


def test_only_cited_entries_are_audited(tmp_path: Path) -> None:
    paper = write(tmp_path, "paper.tex", LATEX)
    read = read_inputs([paper, BIB])
    assert [r.provenance.entry_key for r in read.references] == [
        "chen2020survey",
        "tosatto2015",
        "ralser2006",
    ]
    problems = {(e.source_file, e.entry_key, e.line): e.reason for e in read.errors}
    assert problems == {
        (str(paper), "missing2021", 5): "cites 'missing2021', which no reference file given has",
        (str(BIB), "wrongdoi2019", 34): "never cited in paper.tex: not audited",
        (str(BIB), "made2023up", 43): "never cited in paper.tex: not audited",
    }
    everything = write(tmp_path, "all.tex", r"\nocite{*}")
    assert len(read_inputs([everything, BIB]).references) == 5
    alone = read_inputs([write(tmp_path / "elsewhere", "paper.tex", LATEX)])
    assert alone.references == [] and "no .bib or CSL-JSON file" in alone.errors[0].reason


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "paper.tex",
            LATEX.replace(r"\end{document}", "\\bibliography{refs,other}\n\\end{document}"),
        ),
        ("paper.md", "---\ntitle: A paper\nbibliography: refs.bib\n---\n" + MARKDOWN),
        ("list.md", "---\nbibliography:\n  - refs.bib\n---\n" + MARKDOWN),
    ],
    ids=["latex", "pandoc", "pandoc-list"],
)
def test_a_manuscript_alone_brings_the_bibliography_it_names(
    tmp_path: Path, name: str, text: str
) -> None:
    write(tmp_path, "refs.bib", BIB.read_text(encoding="utf-8"))
    read = read_inputs([write(tmp_path, name, text)])
    assert {r.provenance.entry_key for r in read.references} == {
        "chen2020survey",
        "tosatto2015",
        "ralser2006",
    }


@pytest.mark.usefixtures("prefect_harness")
def test_audit_a_manuscript_with_its_bib(tmp_path: Path) -> None:
    paper = write(tmp_path, "paper.md", MARKDOWN)
    result = CliRunner().invoke(
        app,
        [
            "audit",
            str(paper),
            str(BIB),
            "--job",
            "paper",
            "--out",
            str(tmp_path / "out"),
            "--db",
            str(tmp_path / "lib.duckdb"),
            "--offline",
            "--styles",
            "apa",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "unverified │     3" in result.output
    assert "paper.md:missing2021: cites 'missing2021'" in result.output
    assert "references.bib:made2023up: never cited in paper.md" in result.output
