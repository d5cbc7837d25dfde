"""`citeaudit` as a user runs it: exit codes, messages, outputs."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.audit import run_pipeline
from flows.cli.main import app
from models.job import JobParams

FIXTURES = Path(__file__).parent / "fixtures"
REPORT = FIXTURES / "reflists" / "crew_report.md"

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("prefect_harness")


def audit(tmp_path: Path, *extra: str) -> "object":
    return runner.invoke(
        app,
        ["audit", str(REPORT), "--job", "cli-job", "--out", str(tmp_path / "out"), *extra],
    )


def test_audit_prints_counts_and_exits_0(registry_env, tmp_path):
    result = audit(tmp_path, "--styles", "apa")
    assert result.exit_code == 0, result.output
    assert "verified" in result.output and "not_found" in result.output
    assert "cites [9]" in result.output  # the malformed entry is reported, the job still ran
    assert (tmp_path / "out" / "cli-job" / "citations.parquet").is_file()
    assert (tmp_path / "out" / "cli-job" / "bibliography.apa.html").is_file()
    assert not (tmp_path / "out" / "cli-job" / "bibliography.mla.html").exists()


def test_fail_on_gates_a_bibliography_and_says_why(registry_env, tmp_path):
    failed = audit(tmp_path, "--styles", "apa", "--fail-on", "not_found,mismatch")
    assert failed.exit_code == 1
    assert "citeaudit: --fail-on mismatch,not_found: 1 not_found" in failed.stderr
    passed = audit(tmp_path, "--styles", "apa", "--fail-on", "unmatched")
    assert passed.exit_code == 0 and "--fail-on" not in passed.stderr
    assert "1 input error:" in passed.stdout  # counted in words, not "error(s)"


def test_jobs_fits_an_80_column_terminal(registry_env, tmp_path):
    db, long_job = str(tmp_path / "library.duckdb"), "crew-run-17-of-the-literature-review"
    summaries = [
        run_pipeline(
            JobParams(
                inputs=[str(REPORT)], job_id=job, out_dir=str(tmp_path / "out"), db=db, styles=[]
            )
        )
        for job in ("crew-run-17", long_job)
    ]
    shown_text = in_terminal([sys.executable, "-m", "flows.cli", "jobs", "--db", db], 80)
    lines = [line for line in shown_text.splitlines() if line.strip()]
    assert max(len(line) for line in lines) <= 80, shown_text
    shown: list[list[list[str]]] = []  # per job, its row's lines, split into cells
    for line in lines:
        if line.startswith("│"):
            cells = [c.strip() for c in line[1:-1].split("│")]
            if cells[1]:  # its date: a job's first line
                shown.append([])
            shown[-1].append(cells)
    rows = {"".join(cells[0] for cells in row): row for row in shown}
    assert set(rows) == {s.job_id for s in summaries}  # a long id folded, not cut short
    for summary in summaries:
        row = rows[summary.job_id]
        assert row[0][2] == str(summary.citations)
        assert row[0][4] == str(len(summary.input_errors))
        counts = {f"{n} {status}" for status, n in summary.status_counts.items() if n}
        assert {cells[3] for cells in row if cells[3]} == counts  # each whole, on its own line
        assert len(counts) > 1


def test_jobs_and_the_summary_piped_keep_long_names_whole(registry_env, tmp_path):
    """Piped (grep, a CI log), no line is broken at a terminal's width: the long job id and
    the outputs' path stay whole on their lines, in `jobs` and in a job's summary."""
    db, job = str(tmp_path / "library.duckdb"), "crew-run-17-of-the-literature-review-" + "x" * 60
    out = tmp_path / ("a-folder-whose-name-is-longer-than-a-terminal-line-" + "y" * 40)
    params = JobParams(inputs=[str(REPORT)], job_id=job, out_dir=str(out), db=db, styles=[])
    run_pipeline(params)
    for args in (["jobs"], ["report", job, "--out", str(out)]):
        piped = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args, "--db", db],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
            timeout=120,
        )
        assert piped.returncode == 0, piped.stderr
        assert any(job in line for line in piped.stdout.splitlines()), piped.stdout
    assert f"outputs: {out / job / 'report.html'}" in piped.stdout.splitlines(), piped.stdout


def in_terminal(args: list[str], columns: int) -> str:
    """What `args` shows on a terminal `columns` wide (a real pseudo-terminal), colours off."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns)}
    process = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the process closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.wait(timeout=120) == 0, shown.decode()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode()).replace("\r", "")


def test_report_fits_an_80_column_terminal_without_breaking_words(registry_env, tmp_path):
    db = str(tmp_path / "library.duckdb")
    inputs = [str(REPORT), str(FIXTURES.parents[1] / "examples" / "references.bib")]
    params = JobParams(
        inputs=inputs, job_id="crew", out_dir=str(tmp_path / "out"), db=db, styles=[]
    )
    summary = run_pipeline(params)
    command = [sys.executable, "-m", "flows.cli", "report", "crew", "--db", db]
    shown = in_terminal([*command, "--out", str(tmp_path / "out")], columns=80)
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80, shown
    # every reason whole: the terminal, not citeaudit, would have broken a long line mid-word
    words = " ".join(shown.split())
    reasons = [f.reason for f in summary.flagged] + [e.reason for e in summary.input_errors]
    assert reasons and any(len(reason) > 60 for reason in reasons)
    for reason in reasons:
        assert " ".join(reason.split()) in words, reason


@pytest.mark.parametrize(
    "args",
    [
        ["audit", str(REPORT), "--job", "../escape"],
        ["audit", str(REPORT), "--job", "/abs/path"],
        ["audit", "no-such-file.bib", "--job", "x"],
        ["audit", str(REPORT), "--job", "x", "--fail-on", "fabricated"],
        ["audit", str(REPORT), "--job", "x", "--styles", "comic-sans"],
        ["audit", str(REPORT), "--job", "x", "--format", "endnote-xml"],
        ["import", str(REPORT), "--job", "x", "--format", "endnote-xml"],
        ["audit", str(FIXTURES), "--job", "x"],  # a folder
        ["audit", str(REPORT), "--job", "x", "--out", str(REPORT)],  # a file as --out
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_TASK_RUNNER=bogus"],
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_WORKERS=abc"],
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_WORKERS=-1"],
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_TRUSTED_DOMAINS=/no/such/file"],
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_MAX_ATTEMPTS=many"],
        ["audit", str(REPORT), "--job", "x", "--env", "CITEAUDIT_REGISTRIES=crossref,pubmd"],
        ["jobs", "--db", "no-such-library.duckdb"],
        ["report", "x", "--db", "no-such-library.duckdb"],
    ],
)
def test_usage_errors_exit_2_with_one_line(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    while "--env" in args:  # a setting from the environment, not an argument
        at = args.index("--env")
        monkeypatch.setenv(*args[at + 1].split("=", 1))
        args = args[:at] + args[at + 2 :]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.output.strip().startswith("citeaudit: error:")
    assert len(result.output.strip().splitlines()) == 1
    assert "Value error" not in result.output  # pydantic's wording stays out of our message
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "escape").exists()
    assert not (tmp_path / "no-such-library.duckdb").exists()
