"""Dedupe at scale: 100,000 new citations against a 1,000,000-record library.

`uv run python -m bench.dedupe_scale [--library N] [--new N]`

The library is built from the real records of ../shared/data/dedupe (DBLP, ACM, Cora): work
titles are drawn from their words at real frequencies and real title lengths (one in ten is
spliced from two real titles instead: near misses of each other), with real surnames and venues;
each work is cited a few times with the perturbations real lists show (typos,
dropped words, missing DOIs, year off by one, lower-cased, abbreviated venue, missing author).
New citations are 70 % further citations of library works and 30 % citations of new works.
Frames are built at the match-key level (records_frame's output), which is what the library
stores; building them is not timed. The timed part runs in a fresh process, so its peak RSS
(ru_maxrss, which sees polars' and DuckDB's native allocations) is dedupe's own: loading the
library from Parquet and assign_works. Its accuracy against the known truth is printed too.
"""

import argparse
import itertools
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl

from bench.dedupe_sources import DEDUPE_DATA, cora, dblp_acm
from tasks.dedupe import LIBRARY_SCHEMA, RECORD_SCHEMA, assign_works, records_frame

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Synth:
    """Synthetic works and perturbed citations of them, from pools of real keys."""

    def __init__(self, real: pl.DataFrame, seed: int = 7):
        self.rng = random.Random(seed)
        self.titles = [t.split() for t in real["title_key"].drop_nulls() if len(t.split()) >= 3]
        counts = Counter(word for title in self.titles for word in title)
        self.vocabulary = sorted(counts)
        self.weights = list(itertools.accumulate(counts[w] for w in self.vocabulary))
        self.surnames = real["first_author"].drop_nulls().unique().sort().to_list()
        self.venues = real["container"].drop_nulls().unique().sort().to_list()

    def title(self) -> list[str]:
        """Mostly real words at their real frequencies in a real title's length; one in ten
        is spliced from two real titles, a near miss of other works spliced from them."""
        rng = self.rng
        a, b = rng.choice(self.titles), rng.choice(self.titles)
        if rng.random() < 0.1:
            return a[: max(2, len(a) // 2)] + b[len(b) // 2 :]
        return rng.choices(self.vocabulary, cum_weights=self.weights, k=len(a))

    def work(self, n: int) -> dict[str, object]:
        rng = self.rng
        words = self.title()
        authors = [rng.choice(self.surnames) for _ in range(rng.randint(1, 4))]
        return {
            "doi": f"10.5555/synth.{n}" if rng.random() < 0.7 else None,
            "title_key": " ".join(words),
            "surnames": authors,
            "initials": rng.choice(LETTERS),
            "year": rng.randint(1970, 2025),
            "container": rng.choice(self.venues),
            "volume": str(rng.randint(1, 300)),
            "pages": str(rng.randint(1, 2000)),
        }

    def citation(
        self, work: dict[str, object], citation_id: str, work_id: str
    ) -> dict[str, object]:
        rng = self.rng
        words = str(work["title_key"]).split()
        if rng.random() < 0.3:  # a typo: one character lost or replaced
            i = rng.randrange(len(words))
            if len(words[i]) > 3:
                j = rng.randrange(len(words[i]))
                words[i] = words[i][:j] + rng.choice(["", rng.choice(LETTERS)]) + words[i][j + 1 :]
        if rng.random() < 0.15 and len(words) > 5:  # a word dropped
            del words[rng.randrange(1, len(words))]
        surnames = list(work["surnames"])  # type: ignore[call-overload]
        if rng.random() < 0.05:
            surnames = []
        year = work["year"]
        if rng.random() < 0.1:
            year = int(year) + rng.choice([-1, 1])  # type: ignore[call-overload]
        container = str(work["container"])
        if rng.random() < 0.3:
            container = " ".join(w[:4] for w in container.split())  # abbreviated venue
        title_key = " ".join(words)
        return {
            "citation_id": citation_id,
            "doi": work["doi"] if rng.random() < 0.5 else None,
            "title": title_key,
            "title_key": title_key,
            "first_author": surnames[0] if surnames else None,
            "surnames": surnames,
            "initials": work["initials"] if surnames else None,
            "year": year,
            "container": container,
            "container_title": container,
            "volume": work["volume"],
            "pages": work["pages"],
            "type": "article-journal",
            "preprint": False,
            "verified": False,
            "completeness": 0.8,
            "relations": [],
            "work_id": work_id,
        }


def frame(rows: list[dict[str, object]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={**LIBRARY_SCHEMA}, strict=False).select(list(schema))


def build(folder: Path, library_size: int, new_size: int) -> None:
    real = records_frame([r.reference for r in [*dblp_acm()[0], *cora()]])
    synth = Synth(real)
    works: list[dict[str, object]] = []
    rows: list[dict[str, object]] = []
    while len(rows) < library_size:
        work = synth.work(len(works))
        works.append(work)
        for _ in range(1 + min(int(synth.rng.expovariate(1 / 3)), 40)):  # ~4 citations a work
            rows.append(synth.citation(work, f"lib{len(rows)}", f"w{len(works) - 1}"))
    rows = rows[:library_size]
    cited = sorted({str(r["work_id"]) for r in rows})
    frame(rows, LIBRARY_SCHEMA).write_parquet(folder / "library.parquet")
    new: list[dict[str, object]] = []
    for n in range(new_size):
        if synth.rng.random() < 0.7:
            work_id = synth.rng.choice(cited)
            new.append(synth.citation(works[int(work_id[1:])], f"new{n}", work_id))
        else:  # a new work; some are cited twice in the batch
            work = synth.work(len(works))
            works.append(work)
            new.append(synth.citation(work, f"new{n}", f"fresh{len(works) - 1}"))
            if synth.rng.random() < 0.2 and n + 1 < new_size:
                new.append(synth.citation(work, f"new{n}b", f"fresh{len(works) - 1}"))
    new = new[:new_size]
    truth = frame(new, LIBRARY_SCHEMA).select("citation_id", "work_id")
    truth.write_parquet(folder / "truth.parquet")
    frame(new, RECORD_SCHEMA).write_parquet(folder / "new.parquet")


def measure(folder: Path) -> None:
    start = time.perf_counter()
    library = pl.read_parquet(folder / "library.parquet")
    new = pl.read_parquet(folder / "new.parquet")
    loaded = time.perf_counter()
    result = assign_works(new, library)
    done = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_gb = usage.ru_maxrss / 1024**2  # KiB on Linux
    print(f"library {library.height:,} records, new {new.height:,} citations")
    print(f"assign_works: {done - loaded:.1f} s wall (loading Parquet: {loaded - start:.1f} s)")
    print(f"CPU time of the whole process: {usage.ru_utime + usage.ru_stime:.1f} s")
    print(f"peak RSS of the dedupe process: {peak_gb:.2f} GB")
    print(f"new works: {result.new_works:,}; links: {result.links.height:,}")
    report_accuracy(result.assignments, pl.read_parquet(folder / "truth.parquet"))


def report_accuracy(assignments: pl.DataFrame, truth: pl.DataFrame) -> None:
    """Citations of library works: did they get that work? Citations of new works: did they
    stay out of the library?"""
    joined = truth.rename({"work_id": "truth"}).join(assignments, on="citation_id")
    old = joined.filter(~pl.col("truth").str.starts_with("fresh"))
    fresh = joined.filter(pl.col("truth").str.starts_with("fresh"))
    hit = old.select((pl.col("truth") == pl.col("work_id")).mean()).item()
    print(f"citations of library works given that work: {hit:.4f} of {old.height:,}")
    kept_out = fresh.select(pl.col("work_id").str.starts_with("w-").mean()).item()  # w-<hash>
    print(f"citations of new works kept out of the library: {kept_out:.4f} of {fresh.height:,}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=100_000)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure)
        return
    if not DEDUPE_DATA.is_dir():
        print(f"no shared data at {DEDUPE_DATA}: nothing to measure")
        return
    with tempfile.TemporaryDirectory(prefix="dedupe-scale-") as tmp:
        start = time.perf_counter()
        build(Path(tmp), args.library, args.new)
        print(f"(building the synthetic library took {time.perf_counter() - start:.0f} s)")
        command = [sys.executable, "-m", "bench.dedupe_scale", "--measure", tmp]
        subprocess.run(command, check=True, cwd=Path(__file__).resolve().parents[1])


if __name__ == "__main__":
    main()
