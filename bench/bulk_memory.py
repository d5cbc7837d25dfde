"""Peak memory of reading a bulk import's BibTeX: `read_inputs` over N generated entries (title
with LaTeX accents, three authors, journal, year, pages, DOI), each N in a fresh process; the
peak RSS growth and what it means per citation. (`citeaudit import` reads the whole list first,
so its peak is at least this.) Run: uv run python -m bench.bulk_memory [N ...]
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READ = """
import json, resource, sys, time
from pathlib import Path
from tasks.read import read_inputs
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
result = read_inputs([Path(sys.argv[1])])
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"refs": len(result.references), "growth_kb": peak - before, "s": seconds}))
"""


def write_bib(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(
                f"@article{{entry{n},\n  title = {{A study of item {n} in the "
                f"M\\\"{{u}}ller--Garc\\'{{\\i}}a model of citation auditing}},\n"
                f"  author = {{Doe, Jane and Smith, John Q. and Nguyen, Thi {n % 97}}},\n"
                f"  journal = {{Journal of Reproducible Results {n % 13}}},\n"
                f"  year = {{{1990 + n % 35}}}, volume = {{{n % 50}}}, pages = {{{n}--{n + 9}}},\n"
                f"  doi = {{10.5555/bench.{n}}}\n}}\n\n"
            )


def measure(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bib = Path(tmp) / "big.bib"
        write_bib(bib, count)
        size_mb = bib.stat().st_size / 1e6
        done = subprocess.run(
            [sys.executable, "-c", READ, str(bib)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
    read = json.loads(done.stdout.splitlines()[-1])
    growth_mb = read["growth_kb"] / 1024
    print(
        f"{read['refs']:,} entries ({size_mb:.0f} MB .bib): peak RSS +{growth_mb:.0f} MB = "
        f"{read['growth_kb'] / read['refs']:.1f} KB per citation, read in {read['s']:.1f} s"
    )


def main() -> None:
    started = time.perf_counter()
    for count in [int(arg) for arg in sys.argv[1:]] or [10_000, 40_000]:
        measure(count)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
