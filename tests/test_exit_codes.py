"""Exit codes (0 clean, 1 gate, 2 usage/input, 3 internal), inputs that are not bibliographies,
and output files that follow the user's umask: through real `citeaudit` processes."""

import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest

from flows.cli.summary import gate_failed, parse_gate
from models.audit import InputError
from models.job import JobSummary
from tasks.read.inputs import read_inputs
from tests.prefect_server import free_port

REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )


def pdf_with_text(*lines: str) -> bytes:
    """A one-page PDF showing `lines` in Helvetica, one under the other."""
    shown = " T* ".join(
        "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj"
        for line in lines
    )
    stream = f"BT /F1 12 Tf 14 TL 72 720 Td {shown} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def docx(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("word/document.xml", "<w:document/>")


@pytest.mark.parametrize(
    ("name", "make", "what"),
    [
        ("refs.docx", docx, "a Word document"),
        ("scan.png", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64)), "a PNG image"),
        ("photo.jpg", lambda p: p.write_bytes(b"\xff\xd8\xff\xe0" + bytes(64)), "a JPEG image"),
        ("empty.bib", lambda p: p.write_text("  \n"), "empty"),
        ("refs.bib", lambda p: p.write_bytes(b"@article{a,\x00\x01" + bytes(64)), "binary"),
        ("paper.pdf", lambda p: p.write_bytes(pdf_with_text("No list here")), "no reference list"),
    ],
)
def test_a_file_that_is_no_bibliography_exits_2_naming_it(tmp_path, name, make, what) -> None:
    make(tmp_path / name)
    done = run_cli("audit", name, "--job", "x", "--offline", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"citeaudit: error: {name}: ") and what in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_html_is_read_as_text_without_markup(tmp_path) -> None:
    (tmp_path / "refs.html").write_text(
        "<!DOCTYPE html><html><head><title>10.9999/not-a-ref</title></head><body><ol>"
        "<li>10.1038/srep16696</li><li>Smith &amp; Jones. <i>A title</i>. 2019.</li>"
        "</ol><script>var doi = '10.1/x';</script></body></html>"
    )
    read = read_inputs([tmp_path / "refs.html"])
    assert [r.ids.doi for r in read.references] == ["10.1038/srep16696", None]
    assert read.references[1].raw == "Smith & Jones. A title. 2019."


def test_fail_on_names_statuses_retracted_and_any() -> None:
    summary = JobSummary(
        job_id="j",
        out="out/j",
        citations=3,
        status_counts={"verified": 3, "unmatched": 0},
        metrics={"retracted": 1},
    )
    assert gate_failed(summary, parse_gate("retracted"))
    assert gate_failed(summary, parse_gate("any"))
    assert not gate_failed(summary, parse_gate("unmatched,unverified"))
    unretracted = summary.model_copy(update={"metrics": {"retracted": 0}})
    assert not gate_failed(unretracted, parse_gate("any"))
    uncited = InputError(source_file="refs.bib", entry_key="a", reason="never", kind="uncited")
    harmless = unretracted.model_copy(update={"input_errors": [uncited]})
    assert not gate_failed(harmless, parse_gate("any"))
    missing = uncited.model_copy(update={"kind": "missing"})
    cited_missing = unretracted.model_copy(update={"input_errors": [uncited, missing]})
    assert gate_failed(cited_missing, parse_gate("any"))
    assert gate_failed(cited_missing, parse_gate("missing"))
    assert not gate_failed(cited_missing, parse_gate("not_found"))


def test_a_cited_key_no_bib_holds_fails_the_gate(tmp_path, prefect_server) -> None:
    (tmp_path / "refs.bib").write_text(
        "@article{kept, title={A title}, doi={10.1038/srep16696}}\n"
        "@article{spare, title={Never cited}, year={2001}}\n"
    )
    (tmp_path / "paper.tex").write_text("As shown \\cite{kept, gone2021}.\n")
    args = ("audit", "paper.tex", "refs.bib", "--offline", "--styles", "apa", "--fail-on")
    gated = run_cli(*args, "missing", "--job", "j", cwd=tmp_path)
    assert gated.returncode == 1, gated.stderr
    assert "--fail-on missing: 1 missing" in gated.stderr
    assert "paper.tex:gone2021: cites 'gone2021'" in gated.stdout
    (tmp_path / "paper.tex").write_text("As shown \\cite{kept}.\n")  # `spare` stays uncited
    clean = run_cli(*args, "missing", "--job", "k", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    assert "refs.bib:spare: never cited in paper.tex" in clean.stdout


def test_offline_gate_exit_1_and_outputs_follow_the_umask(tmp_path, prefect_server) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    args = ("audit", "refs.txt", "--job", "j", "--offline", "--fail-on")
    gated = run_cli(*args, "any", cwd=tmp_path)
    assert gated.returncode == 1, gated.stderr
    clean = run_cli(*args, "unmatched", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    files = list((tmp_path / "out" / "j").iterdir())
    assert files and {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o644}


def test_a_run_logged_to_a_file_says_how_far_it_is(tmp_path, prefect_server) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n10.1000/xyz123\n")
    args = ("audit", "refs.txt", "--job", "j", "--offline", "--styles", "apa")
    env = {**os.environ, "CITEAUDIT_PROGRESS_SECONDS": "0.1"}
    done = run_cli(*args, cwd=tmp_path, env=env)  # stderr: a pipe, no terminal
    assert done.returncode == 0, done.stderr
    lines = re.findall(r"^citeaudit: (.+), \d+:\d\d elapsed$", done.stderr, re.MULTILINE)
    assert lines and set(lines) <= {"starting", "validate 0/2", "validate 2/2"}, done.stderr


def test_a_run_no_registry_answers_says_so_in_one_line(tmp_path, prefect_server) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens: every request is refused
    env = {
        **os.environ,
        "CITEAUDIT_REGISTRIES": "crossref",
        "CITEAUDIT_CROSSREF_URL": nowhere,
        "CITEAUDIT_DOI_URL": nowhere,
        "CITEAUDIT_CACHE_DIR": str(tmp_path / "cache"),
    }
    args = ("audit", "refs.txt", "--styles", "apa", "--job")
    done = run_cli(*args, "j", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    hint = [line for line in done.stdout.splitlines() if "No registry answered" in line]
    assert len(hint) == 1 and "--offline" in hint[0] and "fake registry" in hint[0], done.stdout
    offline = run_cli(*args, "k", "--offline", cwd=tmp_path, env=env)  # chosen: no hint
    assert offline.returncode == 0 and "No registry answered" not in offline.stdout


def test_a_prefect_run_whose_input_is_missing_fails(tmp_path, prefect_harness) -> None:
    from flows.audit import audit_job
    from models.job import JobParams

    params = JobParams(
        inputs=[str(tmp_path / "gone.bib")],
        job_id="gone",
        out_dir=str(tmp_path / "out"),
        db=str(tmp_path / "lib.duckdb"),
        offline=True,
    )
    state = audit_job(params, return_state=True)
    assert state.is_failed()
    assert not (tmp_path / "out" / "gone").exists()


def test_a_library_that_is_no_duckdb_file_exits_2_before_the_run(tmp_path) -> None:
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    (tmp_path / "refs.bib").write_text("@article{a, title={A title}}\n")
    (tmp_path / "folder").mkdir()
    for db in ("refs.bib", "folder"):
        for args in (("audit", "refs.txt", "--job", "j", "--offline"), ("jobs",)):
            done = run_cli(*args, "--db", db, cwd=tmp_path)
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith(f"citeaudit: error: {db} is ")
            assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "refs.bib").read_text() == "@article{a, title={A title}}\n"


@pytest.mark.parametrize("debug", [None, "", "0", "off", "1"])
def test_an_internal_error_exits_3_whatever_citeaudit_debug_says(
    tmp_path, debug: str | None
) -> None:
    """CITEAUDIT_DEBUG set to anything (0 included) made an internal error exit 1, the gate's
    code. Now it only adds the traceback, and only when on (1, not 0/off/empty)."""
    with duckdb.connect(str(tmp_path / "other.duckdb")) as con:
        con.execute("CREATE TABLE jobs (a INTEGER)")  # another program's table of that name
    env = {k: v for k, v in os.environ.items() if k != "CITEAUDIT_DEBUG"}
    if debug is not None:
        env["CITEAUDIT_DEBUG"] = debug
    done = run_cli("jobs", "--db", "other.duckdb", cwd=tmp_path, env=env)
    assert done.returncode == 3, done.stderr
    assert "citeaudit: internal error: BinderException: " in done.stderr
    assert ("Traceback" in done.stderr) == (debug == "1")


def test_a_failure_inside_the_run_is_one_line_and_exit_3(tmp_path, prefect_server) -> None:
    # another program's DuckDB file, whose citations table is not citeaudit's
    with duckdb.connect(str(tmp_path / "other.duckdb")) as con:
        con.execute("CREATE TABLE citations (a INTEGER)")
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    done = run_cli(
        "audit", "refs.txt", "--job", "j", "--offline", "--db", "other.duckdb", cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    # Prefect's task and flow run logs printed it first, tracebacks included (79 lines)
    # UndeclaredColumns is ours (an InfrastructureError): its message, not a class name
    assert done.stderr.startswith("citeaudit: error: the library's table citations has no column a")
    assert len(done.stderr.strip().splitlines()) == 1


# What a run needs and a usage error must not wait for: Prefect alone takes seconds to import,
# the registry clients (httpx, hishel, redis) over a second, the store (DuckDB, Polars, pyarrow)
# about one, the readers and their parsers a third of one.
SLOW_IMPORTS = ("prefect", "httpx", "tasks.registries.clients", "duckdb", "polars", "pyarrow")
SLOW_IMPORTS += ("bibtexparser", "rispy")


def slow(module: str) -> bool:
    """Whether `module` is (or is inside) one of SLOW_IMPORTS, or is a reader: of the input
    package, a usage error may load kinds.py alone (its checks need the standard library)."""
    if module.startswith("tasks.read."):
        return module != "tasks.read.kinds"
    return module in SLOW_IMPORTS or module.split(".")[0] in SLOW_IMPORTS


USAGE_ERRORS = [
    (("audit", "refs.txt", "--job", "j", "--fail-on", "bogus"), {}),
    (("audit", "missing.bib", "--job", "j"), {}),
    (("audit", "refs.txt", "--job", "../j"), {}),
    (("audit", "refs.txt", "--job", "j", "--format", "endnote"), {}),
    (("audit", "refs.txt", "--job", "j", "--styles", "comic-sans"), {}),
    (("audit", "refs.txt", "--job", "j", "--db", "refs.txt"), {}),
    (("audit", "refs.txt", "--job", "j"), {"CITEAUDIT_REGISTRIES": "crossref,pubmd"}),
    (("audit", "refs.txt", "--job", "j"), {"CITEAUDIT_TASK_RUNNER": "bogus"}),
    (("audit", "refs.txt", "--job", "j", "--bogus"), {}),
    (("import", "missing.bib", "--job", "j"), {}),
    (("check", "refs.txt", "--fail-on", "bogus"), {}),
    (("fix", "missing.bib"), {}),
    (("fix", "refs.bib"), {"CITEAUDIT_MAX_ATTEMPTS": "many"}),  # was exit 3, a traceback's line
    (("zotero", "audit", "--job", "j", "--library-type", "bogus"), {}),
    (("zotero", "audit", "--job", "j", "--library-id", "1", "--fail-on", "bogus"), {}),
    (("report", "j", "--db", "missing.duckdb"), {}),
    (("jobs", "--db", "missing.duckdb"), {}),
    (("registries",), {"CITEAUDIT_REGISTRIES": "crossref,pubmd"}),
    (("snapshot", "build", "bogus", "refs.txt"), {}),
    (("mcp", "--http", "--host", "0.0.0.0"), {}),
    (("server", "status", "--bogus"), {}),
    # a file or a library the command cannot use: told before a reader or the store loads
    (("audit", "folder", "--job", "j"), {}),
    (("audit", "empty.bib", "--job", "j"), {}),
    (("audit", "refs.txt", "--job", "j", "--db", "folder"), {}),
    (("audit", "refs.txt", "--job", "j", "--out", "refs.bib"), {}),
    (("import", "refs.txt", "--job", "../j"), {}),
    (("check", "missing.bib"), {}),
    (("fix", "folder"), {}),
    (("fix", "refs.txt"), {}),  # not BibTeX: told by its head, before the reader loads
    (("fix", "refs.bib", "-o", "nowhere/fixed.bib"), {}),
    (("report", "j", "--db", "folder"), {}),
    (("jobs", "--db", "refs.bib"), {}),
    (("dedupe", "--db", "missing.duckdb"), {}),
    (("zotero", "audit", "--job", "../j", "--library-id", "1"), {}),
    (("snapshot", "build", "dblp", "missing.xml.gz"), {}),
    (("mcp", "--db", "folder"), {}),
    (("mcp", "--out", "refs.bib"), {}),
    (("serve", "--file", "missing.yaml"), {}),  # was found after Prefect's server started
]


@pytest.mark.parametrize(
    ("args", "env"),
    USAGE_ERRORS,
    ids=[" ".join(args + tuple(f"{k}={v}" for k, v in env.items())) for args, env in USAGE_ERRORS],
)
def test_a_usage_error_answers_before_the_heavy_modules_load(
    tmp_path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    """A usage error (a bad value, a missing file, a bad setting, an unknown option) took 3-18 s:
    Prefect and the registry clients were imported before the arguments were checked; a missing
    file or library then still loaded every reader, or DuckDB, Polars and pyarrow (0.3-1 s over
    --help). The real command, with Python's -X importtime, must say so in one line (or click's
    usage box) and exit 2 with no slow() module loaded."""
    (tmp_path / "refs.txt").write_text("10.1038/srep16696\n")
    (tmp_path / "refs.bib").write_text("@article{a, title={A title}}\n")
    (tmp_path / "empty.bib").write_text("")
    (tmp_path / "folder").mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CITEAUDIT_", "PREFECT_"))}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flows.cli", *args],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = set()
    said = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            imported.add(line.rsplit("|", 1)[1].strip())
        else:
            said.append(line)
    assert done.returncode == 2, done.stderr
    if "--bogus" in args:
        assert "No such option: --bogus" in "\n".join(said)
    else:
        assert len(said) == 1 and said[0].startswith("citeaudit: error: "), said
        assert "Value error" not in said[0]  # a setting is named as the user sets it
    assert "flows.cli.main" in imported  # -X importtime did report
    loaded = sorted(m for m in imported if slow(m))
    assert not loaded, f"{' '.join(args)}: {loaded[:5]}"
    assert not (tmp_path / "out").exists()
