"""Hostile dumps given to `citeaudit snapshot build`: each must be refused in one line
(exit 2) with the build's peak RSS under 500 MB, whatever the dump expands to.

| case                | the dump                                                           |
|---------------------|--------------------------------------------------------------------|
| `dblp-spaces`       | dblp.xml.gz: the fixture's header, `<dblp>`, 1.5 GiB of spaces     |
| `crossref-2gib`     | a Crossref data-file part: `{"items": [` and 2 GiB of works        |
| `crossref-workers`  | two such parts, `--workers 2`                                      |
| `arxiv-line`        | arXiv's JSON lines: one line of 2 GiB                              |
| `retractions-line`  | Retraction Watch's CSV: its header, then a quoted field of 2 GiB   |
| `crossref-tiny`     | a Crossref part of `{"items": [{}, {}, ...]}`: 64 MiB of 22M items |
| `crossref-tiny-item`| a Crossref part of one work whose title is 15 MB of `[[...[]]],`   |
| `openalex-tiny`     | an OpenAlex part of one 40 MB line: a work of 13M authorships `{}` |
| `pubmed-tiny`       | a PubMed file of one record of 64 MiB of `<a/>`                    |
| `dblp-xxe`          | dblp.xml.gz declaring a `SYSTEM "file://..."` entity used in a     |
|                     | title: refused, the file's content nowhere in the output           |

Beside them, the Markdown reader on the heading that was cubic (`# a`, N spaces, `x`):
`read_inputs` of a .md holding it, timed for 4 KB, 20 KB and 5 MB (`markdown-heading-N`; goal:
linear, seconds at most).

Each bomb is a gzip file of several members (one compressed block of 64 MiB written again and
again): a few MB on disk, written in seconds. The build runs as the CLI does (`python -m
flows.cli`, its own CITEAUDIT_SNAPSHOTS) under `nice`; its process tree (the CLI and its
workers) is sampled every 50 ms: the peak of the tree's summed RSS and of its largest process.

Run: nice uv run python -m bench.hostile_dumps [--workdir DIR] [--only CASE ...]
"""

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "snapshots"
GOAL_MB = 500
SAMPLE_S = 0.05
BLOCK = 64 << 20  # bytes a member of a bomb expands to
SECRET = b"a-local-file-the-dump-must-not-read"


@dataclass(frozen=True)
class Result:
    case: str
    exit: int
    wall: float
    peak_tree_mb: float  # the tree's RSS summed, at its highest
    peak_process_mb: float  # the largest one process reached
    dump_mb: float  # the dump's size on disk
    expands_gb: float
    said: str  # the build's last line on stderr


def bomb(path: Path, head: bytes, filler: bytes, size: int, tail: bytes = b"") -> float:
    """A gzip file of `head`, `size` bytes of `filler`, `tail`; what it expands to in GB."""
    block = gzip.compress(filler * (BLOCK // len(filler)), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(head))
        for _ in range(size // BLOCK):
            out.write(block)
        out.write(gzip.compress(tail))
    return (len(head) + size // BLOCK * BLOCK + len(tail)) / 1e9


def _dblp_header() -> bytes:
    xml = gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes())
    return xml.split(b"<dblp>")[0] + b"<dblp>"


def dblp_spaces(folder: Path) -> tuple[list[str], float]:
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    expands = bomb(folder / "dblp.xml.gz", _dblp_header(), b" ", 3 << 29, b"</dblp>")
    return ["dblp", str(folder / "dblp.xml.gz")], expands


def crossref_parts(folder: Path, parts: int = 1) -> tuple[list[str], float]:
    work = b'{"DOI": "10.1234/bomb", "title": ["A work repeated"], "type": "journal-article"},'
    expands = 0.0
    for number in range(parts):
        path = folder / f"{number}.json.gz"
        expands += bomb(path, b'{"items": [', work, 2 << 30, b'{"DOI": "10.1234/end"}]}')
    return ["crossref", str(folder), "--workers", str(parts)], expands


def crossref_workers(folder: Path) -> tuple[list[str], float]:
    return crossref_parts(folder, 2)


def crossref_tiny(folder: Path) -> tuple[list[str], float]:
    expands = bomb(folder / "0.json.gz", b'{"items": [', b"{},", BLOCK, b"{}]}")
    return ["crossref", str(folder)], expands


def crossref_tiny_item(folder: Path) -> tuple[list[str], float]:
    # nested empty lists: few commas (under the file's cap), 7M values in one 15 MB item
    nested = (b"[" * 14 + b"]" * 14 + b",") * 500_000
    part = b'{"items": [{"DOI": "10.1234/tiny", "title": [' + nested + b"[]]}]}"
    (folder / "0.json.gz").write_bytes(gzip.compress(part))
    return ["crossref", str(folder)], len(part) / 1e9


def openalex_tiny(folder: Path) -> tuple[list[str], float]:
    part = folder / "updated_date=2024-01-01" / "part_000.gz"
    part.parent.mkdir()
    # 40 MB: under the line's cap of 64 MB
    line = b'{"id": "https://openalex.org/W1", "authorships": [' + b"{}," * 13_000_000 + b"{}]}\n"
    part.write_bytes(gzip.compress(line))
    return ["openalex", str(folder)], len(line) / 1e9


def pubmed_tiny(folder: Path) -> tuple[list[str], float]:
    head = b"<PubmedArticleSet><PubmedArticle>"
    tail = b"</PubmedArticle></PubmedArticleSet>"
    expands = bomb(folder / "pubmed25n0001.xml.gz", head, b"<a/>", BLOCK, tail)
    return ["pubmed", str(folder / "pubmed25n0001.xml.gz")], expands


def arxiv_line(folder: Path) -> tuple[list[str], float]:
    expands = bomb(folder / "arxiv.json.gz", b'{"id": "2404.05961", "title": "', b"x", 2 << 30)
    return ["arxiv", str(folder / "arxiv.json.gz")], expands


def retractions_line(folder: Path) -> tuple[list[str], float]:
    header = (FIXTURES / "retraction_watch.csv").read_bytes().split(b"\n")[0] + b'\n1,"'
    expands = bomb(folder / "retractions.csv.gz", header, b"x", 2 << 30)
    return ["retractions", str(folder / "retractions.csv.gz")], expands


def dblp_xxe(folder: Path) -> tuple[list[str], float]:
    secret = folder / "secret.txt"
    secret.write_bytes(SECRET)
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    xml = gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes())
    doctype = f'<!DOCTYPE dblp SYSTEM "dblp.dtd" [<!ENTITY xxe SYSTEM "file://{secret}">]>'
    xml = xml.replace(b'<!DOCTYPE dblp SYSTEM "dblp.dtd">', doctype.encode(), 1)
    xml = xml.replace(b"<title>", b"<title>&xxe; ", 1)
    (folder / "dblp.xml.gz").write_bytes(gzip.compress(xml))
    return ["dblp", str(folder / "dblp.xml.gz")], len(xml) / 1e9


CASES: dict[str, Callable[[Path], tuple[list[str], float]]] = {
    "dblp-spaces": dblp_spaces,
    "crossref-2gib": crossref_parts,
    "crossref-workers": crossref_workers,
    "crossref-tiny": crossref_tiny,
    "crossref-tiny-item": crossref_tiny_item,
    "openalex-tiny": openalex_tiny,
    "pubmed-tiny": pubmed_tiny,
    "arxiv-line": arxiv_line,
    "retractions-line": retractions_line,
    "dblp-xxe": dblp_xxe,
}


def run_build(case: str, folder: Path, args: list[str], expands: float) -> Result:
    """`citeaudit snapshot build ARGS` under nice, its process tree sampled."""
    snapshots = folder / "snapshots"
    env = {**os.environ, "CITEAUDIT_SNAPSHOTS": str(snapshots)}
    command = ["nice", "-n", "10", sys.executable, "-m", "flows.cli", "snapshot", "build", *args]
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tree = psutil.Process(child.pid)
    peak_tree = peak_one = 0
    while child.poll() is None:
        try:
            processes = [tree, *tree.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        sizes = []
        for process in processes:
            try:
                sizes.append(process.memory_info().rss)
            except psutil.NoSuchProcess:
                continue
        peak_tree = max(peak_tree, sum(sizes))
        peak_one = max(peak_one, max(sizes, default=0))
        time.sleep(SAMPLE_S)
    out, err = child.communicate()
    wall = time.perf_counter() - started
    said = (err or out).decode(errors="replace").strip().splitlines()
    if case == "dblp-xxe":
        leaked = [p for p in snapshots.rglob("*") if p.is_file() and SECRET in p.read_bytes()]
        if SECRET in out + err or leaked:
            raise SystemExit(f"{case}: the local file's content leaked ({leaked})")
    dump_mb = sum(p.stat().st_size for p in folder.glob("*.gz")) / 1e6
    return Result(
        case,
        child.returncode,
        wall,
        peak_tree / 1e6,
        peak_one / 1e6,
        dump_mb,
        expands,
        said[-1] if said else "",
    )


def markdown_heading(folder: Path, spaces: int) -> float:
    """Seconds (CPU) `read_inputs` takes on a .md whose heading ends in `spaces` spaces."""
    from tasks.read.inputs import read_inputs

    path = folder / f"heading-{spaces}.md"
    path.write_text("# a" + " " * spaces + "x\n\n## References\n\n1. Smith, 2020. A work.\n")
    started = time.process_time()
    read_inputs([path])
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    options = parser.parse_args()
    work = Path(options.workdir or tempfile.mkdtemp(prefix="citeaudit-hostile-"))
    print(
        "| case | exit | wall s | peak RSS, tree (MB) | largest process (MB) | dump (MB) "
        f"| expands to (GB) | said | exit 2, < {GOAL_MB} MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for case in options.only or CASES:
            folder = work / case
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            args, expands = CASES[case](folder)
            r = run_build(case, folder, args, expands)
            met = r.exit == 2 and r.peak_tree_mb < GOAL_MB
            print(
                f"| `{r.case}` | {r.exit} | {r.wall:.1f} | **{r.peak_tree_mb:.0f}** | "
                f"{r.peak_process_mb:.0f} | {r.dump_mb:.1f} | {r.expands_gb:.2f} | "
                f"{r.said[:160]} | {'met' if met else 'MISSED'} |",
                flush=True,
            )
            shutil.rmtree(folder, ignore_errors=True)
        if options.only is None:
            print("\n| case | CPU s |\n|---|---|")
            for spaces in (4_000, 20_000, 5_000_000):
                seconds = markdown_heading(work, spaces)
                print(f"| `markdown-heading-{spaces}` | **{seconds:.3f}** |", flush=True)
    finally:
        if options.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
