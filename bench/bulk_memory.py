"""Peak memory of a bulk import's input, by how it is read: N generated BibTeX entries (title with
LaTeX accents, three authors, journal, year, pages, DOI), each N and way in a fresh process; the
peak RSS growth and what it means per citation.

- `whole`: `read_inputs`, the whole list at once (as `audit` reads, and `import` did before #20);
- `stream`: `stream_inputs` in batches of 5,000, each dropped once read;
- `batches`: `citeaudit import`'s batch stage (flows.bulk.import_batches: read, identify, check
  offline and store each batch in a new DuckDB library), without the job folder that follows;
- `import`: the whole command, `citeaudit import big.bib --offline` into a new library and job
  folder, run as a real process under `/usr/bin/time -v` (its maximum RSS, not a growth: the
  Prefect server it starts is another process and not counted).

Goal: the peak bounded by the batch size (N = 100,000 within a small constant of N = 10,000).
Run: uv run python -m bench.bulk_memory [N ...] [way ...] (default 10,000 and 100,000, the three
in-process ways; `import` only when named)
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5_000
MEASURE = """
import flows.quiet  # before prefect
import json, resource, sys, time
from pathlib import Path
from flows.bulk import file_digests, import_batches, store_batch
from flows.steps import PLAIN
from models.job import JobParams
from tasks.read import read_inputs, stream_inputs
way, path, batch = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
if way == "whole":
    refs = len(read_inputs([path]).references)
elif way == "stream":
    refs = sum(len(part.references) for part in stream_inputs([path], None, batch))
else:
    db = path.with_suffix(".duckdb")
    params = JobParams(inputs=[str(path)], job_id="bench", db=str(db), offline=True)
    digests = file_digests(params.inputs)
    imported = import_batches(params, batch, digests, "bench", set(), PLAIN, store_batch, db)
    refs = len(imported.citation_ids)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"refs": refs, "growth_kb": peak - before, "s": seconds}))
"""
WAYS = ("whole", "stream", "batches")


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


def peak_growth(way: str, path: Path, batch: int = BATCH) -> dict[str, float]:
    """{"refs", "growth_kb", "s"} of reading `path` the `way` given, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, way, str(path), str(batch)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    measured: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return measured


def whole_import(path: Path) -> dict[str, float]:
    """{"refs", "max_rss_kb", "s"} of `citeaudit import path --offline`, in a fresh process."""
    folder = path.parent / "import"
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "flows.cli", "import", str(path)]
        + ["--job", "bench", "--offline", "--out", str(folder / "out")]
        + ["--db", str(folder / "library.duckdb")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - started
    rss = next(line for line in done.stderr.splitlines() if "Maximum resident set size" in line)
    rows = pl.read_parquet(folder / "out" / "bench" / "citations.parquet").height
    return {"refs": rows, "max_rss_kb": int(rss.rsplit(":", 1)[1]), "s": seconds}


def measure(count: int, ways: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bib = Path(tmp) / "big.bib"
        write_bib(bib, count)
        size_mb = bib.stat().st_size / 1e6
        for way in ways:
            if way == "import":
                run = whole_import(bib)
                print(
                    f" import: {run['refs']:,} entries: max RSS {run['max_rss_kb'] / 1024:.0f} MB "
                    f"= {run['max_rss_kb'] / run['refs']:.1f} KB per citation, in {run['s']:.1f} s",
                    flush=True,
                )
                continue
            read = peak_growth(way, bib)
            print(
                f"{way:>7}: {read['refs']:,} entries ({size_mb:.0f} MB .bib): peak RSS "
                f"+{read['growth_kb'] / 1024:.0f} MB = "
                f"{read['growth_kb'] / read['refs']:.1f} KB per citation, in {read['s']:.1f} s",
                flush=True,
            )


def main() -> None:
    started = time.perf_counter()
    counts = [int(arg) for arg in sys.argv[1:] if arg.isdigit()] or [10_000, 100_000]
    ways = tuple(arg for arg in sys.argv[1:] if arg in (*WAYS, "import")) or WAYS
    for count in counts:
        measure(count, ways)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
