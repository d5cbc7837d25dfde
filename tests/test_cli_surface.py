"""What `citeaudit` prints and writes, through real processes: user data verbatim (Rich neither
parses markup in it nor turns `:cat:` into an emoji), `--sarif` written whole in place, a
missing extra one line naming the command that installs it (exit 2), `snapshot remove` in a
folder it may not change (exit 2), and the MCP server on an IPv6 address in brackets."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "tests" / "fixtures" / "reflists" / "crew_report.md"
# Its sitecustomize hides the packages $CITEAUDIT_TEST_WITHOUT names (an extra not installed).
WITHOUT = REPO / "tests" / "without_extras"
EMOJI_BIB = """\
@article{cat, title={Cats [and] dogs}, year={2001}}
@article{cat, title={Again}, year={2002}}
@article{a, title={A}, year={2003}}
@article{a, title={B}, year={2004}}
@article{star, title={S}, year={2005}}
@article{star, title={T}, year={2006}}
"""


def citeaudit(
    *args: str, cwd: Path, without: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "COLUMNS": "1000", **(env or {})}  # no wrapping to assert on
    if without:
        environment |= {"PYTHONPATH": str(WITHOUT), "CITEAUDIT_TEST_WITHOUT": without}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def audited(
    tmp_path_factory: pytest.TempPathFactory, prefect_server: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """An offline audit of keys that are emoji codes and a manuscript with claims, the support
    extra not installed, into a folder with brackets in its name, its SARIF to a file that has
    a second name (a hard link)."""
    work = tmp_path_factory.mktemp("surface")
    (work / "emoji.bib").write_text(EMOJI_BIB)
    shutil.copy(REPORT, work / "report.md")
    (work / "results.sarif").write_text("the old results\n")
    os.link(work / "results.sarif", work / "kept.sarif")
    done = citeaudit(
        "audit", "emoji.bib", "report.md", "--job", "j", "--out", "out [v2]", "--offline",
        "--styles", "apa", "--sarif", "results.sarif",
        cwd=work,
        without="onnxruntime",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done, work


def test_user_data_and_brackets_print_verbatim(audited) -> None:
    done, _ = audited
    for key in ("cat", "a", "star"):
        assert f"  emoji.bib:{key}: duplicate key '{key}': the first entry is kept\n" in done.stdout
    assert "outputs: out [v2]/j\n" in done.stdout
    assert (
        "claim support: off: needs the support extra: uv sync --extra support in citeaudit's "
        "checkout, or pip install 'dist/citeaudit-" in done.stdout
    )
    assert "-py3-none-any.whl[support]'" in done.stdout
    assert not any(ord(c) > 0x2FFF for c in done.stdout + done.stderr), done.stdout  # no emoji


def test_sarif_replaces_the_file_and_leaves_its_other_name(audited) -> None:
    _, work = audited
    log = json.loads((work / "results.sarif").read_text())
    assert log == json.loads((work / "out [v2]" / "j" / "citeaudit.sarif").read_text())
    assert (work / "kept.sarif").read_text() == "the old results\n"  # the hard link's other name
    assert not list(work.glob(".results.sarif.*"))  # no temporary file left


@pytest.mark.parametrize(
    ("extra", "hidden", "args", "env"),
    [
        ("zotero", "pyzotero", ["zotero", "audit", "--library-id", "1", "--job", "z"], {}),
        ("mcp", "mcp", ["mcp"], {}),
        ("dask", "prefect_dask", ["audit", "refs.txt", "--job", "j", "--offline"],
         {"CITEAUDIT_TASK_RUNNER": "dask"}),
        ("ducklake", "duckdb_extension_ducklake,duckdb_extension_postgres_scanner",
         ["jobs", "--db", "postgresql://nobody@127.0.0.1:1/none"], {}),
    ],
)  # fmt: skip
def test_a_missing_extra_is_one_line_naming_its_install_and_exit_2(
    tmp_path: Path, extra: str, hidden: str, args: list[str], env: dict[str, str]
) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    done = citeaudit(*args, cwd=tmp_path, without=hidden, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert (
        f"needs the {extra} extra: uv sync --extra {extra} in citeaudit's checkout" in done.stderr
    )
    assert f"-py3-none-any.whl[{extra}]'" in done.stderr


def test_the_crewai_tool_without_its_extra_names_its_install(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import flows.agents.crewai"],
        env={**os.environ, "PYTHONPATH": str(WITHOUT), "CITEAUDIT_TEST_WITHOUT": "crewai"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "the CrewAI tool needs the crewai extra: uv sync --extra crewai" in done.stderr


@pytest.fixture
def read_only_snapshots(tmp_path: Path) -> Iterator[Path]:
    """A snapshot folder holding a dblp snapshot, read-only. Root writes there all the same: as
    root, the name of the snapshot's lock file is taken by a folder, which root cannot open for
    writing either."""
    version = tmp_path / ".dblp.20260101T000000"
    version.mkdir()
    (version / "manifest.json").write_text("{}")
    (tmp_path / "dblp").symlink_to(version.name)
    if os.geteuid() == 0:
        (tmp_path / ".dblp.lock").mkdir()
    tmp_path.chmod(0o555)
    try:
        yield tmp_path
    finally:
        tmp_path.chmod(0o755)


def test_snapshot_remove_where_it_may_not_write_is_one_line_and_exit_2(read_only_snapshots):
    root = read_only_snapshots
    done = citeaudit("snapshot", "remove", "dblp", cwd=root, env={"CITEAUDIT_SNAPSHOTS": str(root)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("citeaudit: error: snapshot remove dblp: [Errno ")
    assert done.stderr.count("\n") == 1
    assert (root / "dblp").is_symlink()  # nothing removed


def test_mcp_serves_on_an_ipv6_address_in_brackets(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "mcp", "--http", "--host", "[::1]"]
        + ["--port", str(port), "--db", str(tmp_path / "library.duckdb")],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.poll() is None:
            try:
                answer = httpx.get(f"http://[::1]:{port}/mcp", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert server.poll() is None, server.communicate()[1]
        assert answer.status_code < 500  # the MCP endpoint answers (it wants an MCP request)
    finally:
        server.terminate()
        server.wait(timeout=30)
