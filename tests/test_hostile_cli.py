"""Hostile input through the `citeaudit` command line: markup and script links in every field,
SQL metacharacters in every field, and job ids that try to leave the output folder."""

import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from flows.cli.main import app

SCRIPT = '<script>alert("pwned")</script>'
SQL = "'); DROP TABLE citations; SELECT ('"  # no '--': BibTeX makes it a dash
HOSTILE_BIB = f"""
@article{{evil-script,
  title = {{{SCRIPT} Deep residual learning {SQL}}},
  author = {{O'Brien{SQL}, Bobby and <img src=x onerror=alert(1)>, Eve}},
  journal = {{Journal of {SCRIPT}{SQL}}},
  year = {{2020}},
  volume = {{1{SQL}}},
  pages = {{1--10}},
  url = {{javascript:alert(document.cookie)}},
  note = {{{SCRIPT}}}
}}

@article{{evil-links,
  title = {{A paper with links {SQL}}},
  author = {{Smith, Jane}},
  journal = {{Nature}},
  year = {{2019}},
  url = {{JaVaScRiPt:alert(1)}},
  howpublished = {{data:text/html,<script>alert(2)</script>}}
}}

@misc{{evil-data,
  title = {{Data link {SCRIPT}}},
  author = {{Doe, John}},
  year = {{2018}},
  url = {{data:text/html;base64,PHNjcmlwdD5hbGVydCgzKTwvc2NyaXB0Pg==}}
}}
"""
# A link whose target uses a scheme that runs code, in HTML or Markdown.
UNSAFE_HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']?\s*(?:javascript|data|vbscript):""", re.I)
UNSAFE_MD_LINK = re.compile(r"\]\(\s*<?\s*(?:javascript|data|vbscript):", re.I)
RAW_SCRIPT = re.compile(r"<\s*script", re.I)
# In Markdown, `\<script\>` is escaped (pandoc's way): shown as text, never run.
MD_RAW_MARKUP = re.compile(r"(?<!\\)<\s*(?:script|img)", re.I)


@pytest.fixture
def hostile_job(tmp_path: Path, prefect_harness: None) -> Path:
    source = tmp_path / "hostile.bib"
    source.write_text(HOSTILE_BIB, encoding="utf-8")
    db = tmp_path / "library.duckdb"
    result = CliRunner().invoke(
        app,
        ["audit", str(source), "--job", "hostile", "--out", str(tmp_path / "out")]
        + ["--db", str(db), "--offline"],
    )
    assert result.exit_code == 0, result.output
    return tmp_path


def test_markup_is_escaped_and_links_sanitised_in_every_output(hostile_job: Path) -> None:
    folder = hostile_job / "out" / "hostile"
    html = [folder / "report.html", *sorted(folder.glob("bibliography.*.html"))]
    markdown = [folder / "report.md", *sorted(folder.glob("bibliography.*.md"))]
    assert len(html) > 1 and len(markdown) > 1
    for path in html:
        text = path.read_text(encoding="utf-8")
        assert not RAW_SCRIPT.search(text.replace('<script type="application/json"', "")), path
        assert not re.search(r"<img[^>]*onerror", text, re.I), path
        assert not UNSAFE_HTML_LINK.search(text), path
    assert "&lt;script&gt;" in (folder / "report.html").read_text(encoding="utf-8")
    for path in markdown:
        text = path.read_text(encoding="utf-8")
        assert not MD_RAW_MARKUP.search(text), path
        assert not UNSAFE_MD_LINK.search(text), path
        assert not UNSAFE_HTML_LINK.search(text), path


def test_sql_metacharacters_are_stored_as_data(hostile_job: Path) -> None:
    with duckdb.connect(str(hostile_job / "library.duckdb"), read_only=True) as con:
        tables = {row[0] for row in con.execute("SHOW TABLES").fetchall()}
        assert {"jobs", "citations", "input_errors", "claims"} <= tables
        rows = con.execute(
            "SELECT entry_key, claimed_title, claimed_container FROM citations WHERE job_id = ?",
            ["hostile"],
        ).fetchall()
    by_key = {key: (title, container) for key, title, container in rows}
    assert set(by_key) == {"evil-script", "evil-links", "evil-data"}
    title, container = by_key["evil-script"]
    assert SQL in title and SCRIPT in title
    assert SQL in container


@pytest.mark.parametrize(
    "job_id",
    [
        "../escape",
        "..",
        "/tmp/abs",
        "a/b",
        "a\\b",
        "job\x00nul",
        "-rf",
        "",
        "a" * 200,
        "ünï",
        "a b",
    ],
)
def test_unsafe_job_ids_are_refused_and_nothing_is_written(tmp_path: Path, job_id: str) -> None:
    source = tmp_path / "in" / "refs.txt"
    source.parent.mkdir()
    source.write_text("doi:10.1371/journal.pone.0033693\n", encoding="utf-8")
    out = tmp_path / "work" / "out"
    result = CliRunner().invoke(
        app,
        ["audit", str(source), "--job", job_id, "--out", str(out)]
        + ["--db", str(tmp_path / "work" / "db.duckdb"), "--offline"],
    )
    assert result.exit_code == 2
    message = result.output.strip()
    assert message.startswith("citeaudit: error:") and "\n" not in message
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in", "refs.txt"]
