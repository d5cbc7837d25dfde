"""Building a crossref snapshot from Crossref's public data file (#30): synthetic files in the
file's format (`N.json.gz`, each `{"items": [...]}` of 5,000 REST API work items) made from the
real works in ../shared/data/crossref (full records only: references, licences, links and all,
as the dump holds them), each work given its own DOI and its title a word of its own (the title
normaliser's cache would otherwise see 1,500 titles again and again).

Figures, per N: records/s of the build over its wall (the store's process pool, 2 workers) and
over its CPU (records per CPU-second x 2: what two idle cores would give), the peak RSS of the
largest process of the build (its parent or a worker), and the snapshot's size.
Goals: >= 50,000 records/s on 2 cores; the peak RSS for 10M records within 1.2x of 1M's.

Run: nice uv run python -m bench.crossref_build [--records N ...] [--workdir DIR]
(default 1,000,000; each N in a fresh process tree; the files are kept under DIR, default
/tmp/citeaudit-bench)
"""

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
from isal import igzip

from bench.process_tree import run_measured

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "crossref"
PER_FILE = 5_000
WORKERS = 2


def real_works() -> list[dict[str, Any]]:
    """The full work records of ../shared/data/crossref (lists and single answers), by DOI."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(DATA.glob("lists/*.json")) + sorted(DATA.glob("*.json")):
        message = json.loads(path.read_text()).get("message")
        items = message.get("items") if isinstance(message, dict) else None
        for work in items if isinstance(items, list) else [message]:
            if isinstance(work, dict) and work.get("DOI") and work.get("type"):
                found.setdefault(str(work["DOI"]).lower(), work)
    return list(found.values())


def write_files(folder: Path, records: int) -> None:
    """The files of `records` works; a file already written (a run stopped mid-way) is kept."""
    works = real_works()
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, records, PER_FILE)):
        target = folder / f"{number}.json.gz"
        if target.is_file():
            continue
        items = []
        for n in range(start, min(start + PER_FILE, records)):
            work = dict(works[n % len(works)])
            work["DOI"] = f"{work['DOI']}.{n}"
            titles = work.get("title") or ["Untitled"]
            work["title"] = [f"{titles[0]} {_word(n)}", *titles[1:]]
            items.append(work)
        encoded = msgspec.json.encode({"items": items})
        # ISA-L's gzip: 4x faster than zlib's at level 1 (10M works are 2,000 files)
        target.with_suffix(".tmp").write_bytes(igzip.compress(encoded, 1))
        target.with_suffix(".tmp").rename(target)


def _word(n: int) -> str:
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[rest]
    return "q" + letters


def _build(files: Path, root: Path) -> None:
    from tasks.snapshots import crossref, store

    store.build(crossref.builder(), [files], root, workers=WORKERS)


def measure(files: Path, root: Path) -> dict[str, float]:
    """Build in a fresh process tree, sampled (bench/process_tree.py)."""
    if root.exists():
        shutil.rmtree(root)
    run = run_measured(_build, files, root)
    manifest = json.loads((root / "crossref" / "manifest.json").read_text())
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
        files = args.workdir / f"crossref-{records}" / "input"
        if not (files.parent / "written").is_file():
            write_files(files, records)
            (files.parent / "written").touch()
        figures = measure(files, args.workdir / f"crossref-{records}" / "snapshots")
        print(json.dumps(figures))
        return
    import subprocess
    import sys

    for records in args.records:
        command = [sys.executable, "-m", "bench.crossref_build", "--measure"]
        command += ["--records", str(records), "--workdir", str(args.workdir)]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        f = json.loads(run.stdout.strip().splitlines()[-1])
        print(
            f"{f['records']:,.0f} records: {f['wall']:.0f} s wall, "
            f"{f['records'] / f['wall']:,.0f} records/s; CPU {f['cpu']:.0f} s, "
            f"{f['records'] / f['cpu'] * WORKERS:,.0f} records/s on {WORKERS} idle cores; "
            f"peak RSS {f['peak_gb']:.2f} GB (largest process); {f['disk_gb']:.2f} GB on disk"
        )


if __name__ == "__main__":
    main()
