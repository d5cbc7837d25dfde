"""What the dump-build benchmarks share (bench/crossref_build.py, pubmed_build.py,
openalex_build.py): each N built in a fresh process tree from synthetic files in the dump's own
format, written once under the work folder and kept.

Figures, per N: records/s of the build over its wall (the store's process pool, WORKERS workers)
and over its CPU (records per CPU-second x WORKERS: what that many idle cores would give), the
peak RSS of the largest process of the build (its parent or a worker), and the snapshot's size.
"""

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from isal import igzip

from bench.process_tree import run_measured

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2


def write_gzipped(target: Path, data: bytes) -> None:
    """`data` gzipped (ISA-L, level 1: much faster than zlib's) to `target`, renamed in whole: a
    run stopped mid-way leaves no part-written file to be taken for a whole one."""
    partial = target.with_suffix(".tmp")
    partial.write_bytes(igzip.compress(data, 1))
    partial.rename(target)


def measure(name: str, build: Callable[[Path, Path], None], files: Path, root: Path) -> dict:
    """`build(files, root)` in a fresh process tree, sampled (bench/process_tree.py)."""
    if root.exists():
        shutil.rmtree(root)
    run = run_measured(build, files, root)
    manifest = json.loads((root / name / "manifest.json").read_text())
    shutil.rmtree(root)
    return {
        "records": manifest["records"],
        "wall": run.wall,
        "cpu": run.cpu,
        "peak_gb": run.peak_gb,
        "disk_gb": manifest["bytes"] / 1e9,
    }


def main(
    module: str,
    name: str,
    write_files: Callable[[Path, int], None],
    build: Callable[[Path, Path], None],
    doc: str,
) -> None:
    """The benchmark's command line: each N of `--records` measured in a process of its own."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/citeaudit-bench"))
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # one N, in a process of its own
        [records] = args.records
        files = args.workdir / f"{name}-{records}" / "input"
        if not (files.parent / "written").is_file():
            write_files(files, records)
            (files.parent / "written").touch()
        figures = measure(name, build, files, args.workdir / f"{name}-{records}" / "snapshots")
        print(json.dumps(figures))
        return
    for records in args.records:
        command = [sys.executable, "-m", module, "--measure"]
        command += ["--records", str(records), "--workdir", str(args.workdir)]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        f = json.loads(run.stdout.strip().splitlines()[-1])
        print(
            f"{f['records']:,.0f} records: {f['wall']:.0f} s wall, "
            f"{f['records'] / f['wall']:,.0f} records/s; CPU {f['cpu']:.0f} s, "
            f"{f['records'] / f['cpu'] * WORKERS:,.0f} records/s on {WORKERS} idle cores; "
            f"peak RSS {f['peak_gb']:.2f} GB (largest process); {f['disk_gb']:.2f} GB on disk"
        )
