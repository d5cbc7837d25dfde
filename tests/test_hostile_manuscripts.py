"""A manuscript as a hostile author writes it: the files it names outside its own folder are
refused, never read or sent; and a thesis's chapters, included with `\\input` and friends, are
read, so the gate sees their citations. Through real `citeaudit` processes against the fake
registry."""

import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry

REPO = Path(__file__).resolve().parents[1]
BIB = REPO / "examples" / "references.bib"
SECRET = "hunter2"
# A secret file read as a reference list becomes one registry query per line.
CREDENTIALS = "".join(
    f"DB_PASSWORD={SECRET} Deep residual learning for image recognition {n}. 2016.\n"
    for n in range(3)
)


def audit(folder: Path, registry: FakeRegistry, *args: str) -> subprocess.CompletedProcess[str]:
    """`citeaudit audit ARGS` in `folder`, asking `registry`, its state kept in `folder`."""
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", "audit", *args, "--job", "j", "--out", "out"],
        cwd=folder,
        env={**os.environ, **point_env_at(registry, folder / "state")},
        capture_output=True,
        text=True,
        timeout=300,
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_manuscript_brings_no_file_from_outside_its_folder(tmp_path, prefect_server) -> None:
    secret = tmp_path / "secret"
    for name in ("creds.txt", "creds.bib", "creds.json"):
        write(secret / name, CREDENTIALS)
    paper = tmp_path / "work" / "papers" / "p1"
    write(paper / "refs.bib", BIB.read_text(encoding="utf-8"))
    write(paper / "notes.txt", CREDENTIALS)  # inside, but no bibliography
    (paper / "linked.bib").symlink_to(secret / "creds.bib")  # inside by name only
    write(
        paper / "paper.tex",
        "\\nocite{*}\n"
        "\\bibliography{refs,../../../secret/creds.txt}\n"
        f"\\addbibresource{{{secret / 'creds.txt'}}}\n"
        "\\addbibresource{../../../secret/creds.bib}\n"
        "\\addbibresource{linked.bib}\n"
        "\\addbibresource{notes.txt}\n"
        "\\input{../../../secret/creds.txt}\n",
    )
    write(
        paper / "notes.md",
        f"---\nbibliography:\n  - {secret / 'creds.json'}\n  - refs.bib\n---\nAs shown [@1].\n",
    )
    with FakeRegistry(rate_limits=False) as registry:
        done = audit(paper, registry, "paper.tex", "notes.md")
        queries = [record.path for record in registry.log]
    assert done.returncode == 0, done.stderr
    assert queries, "the bibliography beside the paper is audited"
    assert not [query for query in queries if SECRET in query or "DB_PASSWORD" in query]
    for path in [*paper.rglob("*"), *(tmp_path / "work").rglob("*")]:
        if path.is_file() and not path.is_symlink() and path.name != "notes.txt":
            assert SECRET.encode() not in path.read_bytes(), path
    refused = [
        "paper.tex:2: names the bibliography ../../../secret/creds.txt: outside",
        f"paper.tex:3: names the bibliography {secret / 'creds.txt'}: outside",
        "paper.tex:4: names the bibliography ../../../secret/creds.bib: outside",
        "paper.tex:5: names the bibliography linked.bib: outside",
        "paper.tex:6: names the bibliography notes.txt: not a bibliography file",
        "paper.tex:7: includes ../../../secret/creds.txt: outside",
        f"notes.md: names the bibliography {secret / 'creds.json'}: outside",
    ]
    printed = " ".join(done.stdout.split())
    for where in refused:
        assert where in printed, where


THESIS = {
    "main.tex": "\\documentclass{book}\n\\begin{document}\n\\include{chapters/intro}\n"
    "\\input{chapters/methods}\n\\subimport{appendix/}{extra}\n"
    "\\input{chapters/methods} % again: read once\n\\bibliography{refs}\n\\end{document}\n",
    "chapters/intro.tex": "Surveyed by \\citet{chen2020survey}.\n\nFRET \\citep{tosatto2015}.\n",
    "chapters/methods.tex": "\\input{chapters/detail}\nAs in \\cite{wrongdoi2019}.\n",
    "chapters/detail.tex": "\\input{main} % a loop\n% \\cite{commented}\n"
    "See \\cite{made2023up}\nand \\cite{missing2021}.\n",
    "appendix/extra.tex": "\\input{table}\n",  # the import package's folder: appendix/table
    "appendix/table.tex": "\\begin{tabular}\n\\cite{ralser2006} \\\\\n\\end{tabular}\n",
}


def test_the_gate_sees_the_citations_of_a_thesiss_chapters(tmp_path, prefect_server) -> None:
    for name, text in THESIS.items():
        write(tmp_path / name, text)
    write(tmp_path / "refs.bib", BIB.read_text(encoding="utf-8"))
    with FakeRegistry(rate_limits=False) as registry:
        done = audit(tmp_path, registry, "main.tex", "--fail-on", "not_found,mismatch,unmatched")
    assert done.returncode == 1, done.stdout + done.stderr
    job = tmp_path / "out" / "j"
    audited = pl.read_parquet(job / "citations.parquet")
    assert audited.height == 5  # every entry of refs.bib, each cited in a chapter
    errors = pl.read_parquet(job / "input_errors.parquet")
    assert errors.select("source_file", "entry_key", "line").rows() == [
        ("chapters/detail.tex", "missing2021", 4)
    ]
