"""Peak memory of a bulk import's input, by how it is read: N generated BibTeX entries (title with
LaTeX accents, three authors, journal, year, pages, DOI), each N and way in a fresh process; the
peak RSS growth and what it means per citation.

- `whole`: `read_inputs`, the whole list at once (as `audit` reads, and `import` did before #20);
- `stream`: `stream_inputs` in batches of 5,000, each dropped once read;
- `batches`: `citeaudit import`'s batch stage (tasks/job/batches.import_batches: read, identify,
  check offline and store each batch in a new DuckDB library), without the job folder that follows;
- `import`: the whole command, `citeaudit import big.bib --offline` into a new library and job
  folder, run as a real process: the peak of the summed RSS of it and its children (pandoc),
  sampled every 0.1 s; the background Prefect server it may start runs in a session of its own,
  is not the import's and is not counted. Past `--cap-gb` the import is stopped and reported
  as over the cap.

Goals (#20, #35.5): the in-process peaks bounded by the batch size (N = 100,000 within a small
constant of N = 10,000); the whole import of 1,000,000 references within 1.5x the peak of
100,000 and under 3 GB (printed when both are run).
Run: uv run python -m bench.bulk_memory [N ...] [way ...] [--input bib|dois] [--cap-gb G]
(default 10,000 and 100,000, the three in-process ways; `import` only when named; `--input
dois`: a plain list of DOIs, one a line, instead of BibTeX entries)
"""

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import psutil

ROOT = Path(__file__).resolve().parents[1]
BATCH = 5_000
MEASURE = """
import flows.prefect_logging  # before prefect
import json, resource, sys, time
from pathlib import Path
from flows.progress import report
from flows.steps import check_all
from models.job import JobParams
from tasks.job.batches import citation_count, file_digests, import_batches, store_batch
from tasks.read.inputs import read_inputs, stream_inputs
from tasks.store.scratch import Scratch
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
    with Scratch(path.parent) as spill:
        stages = (check_all, store_batch, spill, db, report)
        import_batches(params, batch, digests, "bench", set(), *stages)
        refs = citation_count(spill)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"refs": refs, "growth_kb": peak - before, "s": seconds}))
"""
WAYS = ("whole", "stream", "batches")
GOAL_RATIO, GOAL_GB = 1.5, 3.0


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


def write_dois(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(f"10.5555/bench.{n}\n")


INPUTS = {"bib": ("big.bib", write_bib), "dois": ("dois.txt", write_dois)}


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


def tree_rss(process: psutil.Process) -> int:
    """The summed RSS of `process` and its descendants in its session (bytes): a background
    server it starts in a session of its own is not counted."""
    session = os.getsid(process.pid)
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            if os.getsid(member.pid) == session:
                total += member.memory_info().rss
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass  # ended between the listing and the reading
    return total


def whole_import(path: Path, cap_gb: float) -> dict[str, float]:
    """{"refs", "peak_kb", "s", "capped"} of `citeaudit import path --offline`, in a fresh
    process whose tree's RSS is sampled every 0.1 s; stopped past `cap_gb`."""
    folder = path.parent / "import"
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "import", str(path)]
        + ["--job", "bench", "--offline", "--out", str(folder / "out")]
        + ["--db", str(folder / "library.duckdb")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,  # its process group: stopped whole past the cap
    )
    peak, capped = 0, False
    watched = psutil.Process(process.pid)
    while process.poll() is None:
        with contextlib.suppress(psutil.NoSuchProcess):
            peak = max(peak, tree_rss(watched))
        if peak > cap_gb * 2**30:
            capped = True
            os.killpg(process.pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    stderr = process.communicate()[1].decode(errors="replace")
    seconds = time.perf_counter() - started
    if capped:
        return {"refs": 0, "peak_kb": peak / 1024, "s": seconds, "capped": True}
    if process.returncode:
        raise RuntimeError(f"import exited {process.returncode}: {stderr[-2000:]}")
    rows = pl.scan_parquet(folder / "out" / "bench" / "citations.parquet").select(pl.len())
    return {"refs": rows.collect().item(), "peak_kb": peak / 1024, "s": seconds, "capped": False}


def measure(count: int, ways: tuple[str, ...], kind: str, cap_gb: float) -> float | None:
    """Each way's figures for `count` references; the whole import's peak in KB, if run."""
    imported = None
    with tempfile.TemporaryDirectory() as tmp:
        name, write = INPUTS[kind]
        listing = Path(tmp) / name
        write(listing, count)
        size_mb = listing.stat().st_size / 1e6
        for way in ways:
            if way == "import":
                run = whole_import(listing, cap_gb)
                if run["capped"]:
                    print(
                        f" import: {count:,} references: stopped past the cap, {cap_gb:g} GB, "
                        f"after {run['s']:.0f} s",
                        flush=True,
                    )
                    imported = run["peak_kb"]
                    continue
                imported = run["peak_kb"]
                print(
                    f" import: {run['refs']:,} references ({size_mb:.0f} MB {kind}): peak RSS "
                    f"{imported / 1024:.0f} MB = {imported / run['refs']:.2f} KB per citation, "
                    f"in {run['s']:.1f} s",
                    flush=True,
                )
                continue
            read = peak_growth(way, listing)
            print(
                f"{way:>7}: {read['refs']:,} entries ({size_mb:.0f} MB {kind}): peak RSS "
                f"+{read['growth_kb'] / 1024:.0f} MB = "
                f"{read['growth_kb'] / read['refs']:.1f} KB per citation, in {read['s']:.1f} s",
                flush=True,
            )
    return imported


def verdict(peaks: dict[int, float]) -> str | None:
    """The #35.5 goal, when 100,000 and 1,000,000 were both imported."""
    if not {100_000, 1_000_000} <= peaks.keys():
        return None
    small, large = peaks[100_000] / 2**20, peaks[1_000_000] / 2**20  # GB
    ratio = large / small
    met = ratio <= GOAL_RATIO and large < GOAL_GB
    return (
        f"1,000,000 / 100,000: {large:.2f} / {small:.2f} GB = x{ratio:.2f} (goal x{GOAL_RATIO:g} "
        f"or less and under {GOAL_GB:g} GB: {'met' if met else 'MISSED'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("args", nargs="*", help="counts (digits) and ways")
    parser.add_argument("--input", choices=sorted(INPUTS), default="bib")
    parser.add_argument("--cap-gb", type=float, default=8.0, help="stop an import past this")
    options = parser.parse_args()
    started = time.perf_counter()
    counts = [int(arg) for arg in options.args if arg.isdigit()] or [10_000, 100_000]
    ways = tuple(arg for arg in options.args if arg in (*WAYS, "import")) or WAYS
    peaks = {}
    for count in counts:
        peak = measure(count, ways, options.input, options.cap_gb)
        if peak is not None:
            peaks[count] = peak
    if line := verdict(peaks):
        print(line)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
