"""Building a pubmed snapshot from PubMed's baseline (#41.1): synthetic baseline files in the
format NLM publishes (`pubmedYYnNNNN.xml.gz`, each a `<PubmedArticleSet>` of PER_FILE
`<PubmedArticle>`s) made from the recorded efetch answers (tests/fixtures/registry, real PubMed
records with abstracts, MeSH and all), each given its own PMID and its title a word of its own.

Figures, per N: the build's wall time (the store's process pool, 2 workers), its CPU, records/s,
the peak RSS of the largest process (its parent or a worker) and the snapshot's size.
Goal: a baseline of 1M citations built in <= 5 min.

Run: nice uv run python -m bench.pubmed_build [--records N ...] [--workdir DIR]
(default 1,000,000; each N in a fresh process tree; the files are kept under DIR, default
/tmp/citeaudit-bench)
"""

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from isal import igzip

from bench.crossref_build import WORKERS, _word
from bench.process_tree import run_measured

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "registry" / "pubmed_articles.jsonl.gz"
PER_FILE = 30_000  # as NLM's baseline files hold
HEADER = b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet>\n<PubmedArticleSet>\n'
_PMID = re.compile(r'<PMID Version="1">\d+</PMID>')


def write_files(folder: Path, records: int) -> None:
    """The baseline files of `records` citations; a file already written is kept."""
    with gzip.open(RECORDED, "rt", encoding="utf-8") as lines:
        articles = [json.loads(line)["xml"] for line in lines]
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, records, PER_FILE), start=1):
        target = folder / f"pubmed26n{number:04d}.xml.gz"
        if target.is_file():
            continue
        body = []
        for n in range(start, min(start + PER_FILE, records)):
            xml = _PMID.sub(f'<PMID Version="1">{n + 1}</PMID>', articles[n % len(articles)], 1)
            body.append(xml.replace("</ArticleTitle>", f" {_word(n)}</ArticleTitle>", 1))
        encoded = HEADER + "\n".join(body).encode("utf-8") + b"\n</PubmedArticleSet>\n"
        target.with_suffix(".tmp").write_bytes(igzip.compress(encoded, 1))
        target.with_suffix(".tmp").rename(target)


def _build(files: Path, root: Path) -> None:
    from tasks.snapshots import pubmed, store

    store.build(pubmed.BUILDER, [files], root, workers=WORKERS)


def measure(files: Path, root: Path) -> dict[str, float]:
    """Build in a fresh process tree, sampled (bench/process_tree.py)."""
    if root.exists():
        shutil.rmtree(root)
    run = run_measured(_build, files, root)
    manifest = json.loads((root / "pubmed" / "manifest.json").read_text())
    shutil.rmtree(root)
    return {
        "records": manifest["records"],
        "wall": run.wall,
        "cpu": run.cpu,
        "peak_gb": run.peak_gb,
        "disk_gb": manifest["bytes"] / 1e9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/citeaudit-bench"))
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # one N, in a process of its own
        [records] = args.records
        files = args.workdir / f"pubmed-{records}" / "input"
        if not (files.parent / "written").is_file():
            write_files(files, records)
            (files.parent / "written").touch()
        figures = measure(files, args.workdir / f"pubmed-{records}" / "snapshots")
        print(json.dumps(figures))
        return
    for records in args.records:
        command = [sys.executable, "-m", "bench.pubmed_build", "--measure"]
        command += ["--records", str(records), "--workdir", str(args.workdir)]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        f = json.loads(run.stdout.strip().splitlines()[-1])
        print(
            f"{f['records']:,.0f} citations: {f['wall']:.0f} s wall "
            f"({'met' if f['wall'] <= 300 else 'MISSED'}: <= 300 s), "
            f"{f['records'] / f['wall']:,.0f} records/s; CPU {f['cpu']:.0f} s, "
            f"{f['records'] / f['cpu'] * WORKERS:,.0f} records/s on {WORKERS} idle cores; "
            f"peak RSS {f['peak_gb']:.2f} GB (largest process); {f['disk_gb']:.2f} GB on disk"
        )


if __name__ == "__main__":
    main()
