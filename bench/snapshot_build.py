"""Building a dblp snapshot of dblp's real size (#30): a synthetic `dblp.xml.gz` of N records
(default 7,000,000) in dblp's own format, built, then title lookups timed.

The dump is written from the records of tests/fixtures/snapshots/dblp.xml.gz (recorded DBLP
hits in dblp's format: ISO-8859-1, the DTD's named entities, `<i>`/`<sub>` markup, homonym
numbers, CoRR volumes, `crossref` links, `ee` DOIs): record i is record i mod 543 with its key,
DOIs and title made its own. Each title gets two words drawn (Zipf-like) from 300,000 made-up
words, so the title index has a long tail of rare words as real titles do, not 543 titles'
vocabulary repeated 13,000 times. A `<url>` is added so records average dblp's ~600 bytes.

The build runs with 2 workers (`--workers 2`: the dump's pieces parsed side by side).
Figures: build wall and CPU, peak RSS of the largest process of the build (a child and its
workers: the generator is not counted), the snapshot's size on disk, and the p50/p95 of
`by_title` for 300 titles of the dump, one asked at a time, a letter dropped from one word of
each (and how often the record is first), in wall time and in the lookup thread's CPU time
(what an idle machine's wall would be: the machine is shared), with the load average before
and after.
Goals: build <= 15 min, peak RSS <= 2 GB, <= 3 GB on disk, title lookup p95 <= 10 ms.

Run: nice uv run python -m bench.snapshot_build [--records N] [--workdir DIR] [--keep] [--reuse]
(the dump is kept under DIR between runs of the same N; DIR defaults to /tmp/citeaudit-bench;
--reuse times the lookups of the snapshot a run with --keep left, without building it again)
"""

import argparse
import gzip
import html
import itertools
import json
import os
import random
import re
import shutil
import statistics
import time
from pathlib import Path

from bench.process_tree import run_measured

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "snapshots"
RECORD = re.compile(
    r"<(article|inproceedings|proceedings|book|incollection|phdthesis|mastersthesis)\b.*?</\1>",
    re.S,
)
KEY = re.compile(r'key="([^"]+)"')
TITLE = re.compile(r"<title>(.*?)</title>", re.S)
DOI = re.compile(r"(<ee[^>]*>https://doi\.org/[^<]+)(</ee>)")
TAG = re.compile(r"<[^>]+>")
SYLLABLES = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
SAMPLE = 300


def made_up_words(count: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def write_dump(folder: Path, records: int) -> list[dict[str, str]]:
    """Write folder/dblp.xml.gz (and dblp.dtd) of `records` records; a sample of their keys
    and plain titles, for the lookups."""
    rng = random.Random(30)
    source = gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes()).decode("iso-8859-1")
    templates = [m.group(0) for m in RECORD.finditer(source)]
    words = made_up_words(300_000, rng)
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    sampled = set(rng.sample(range(records), min(SAMPLE, records)))
    sample = []
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "dblp.dtd", folder / "dblp.dtd")
    head = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n'
    with gzip.open(folder / "dblp.xml.gz", "wt", encoding="iso-8859-1", compresslevel=3) as out:
        out.write(head + "<dblp>\n")
        chunk = 50_000
        for start in range(0, records, chunk):
            count = min(chunk, records - start)
            extra = rng.choices(words, cum_weights=cumulative, k=2 * count)
            lines = []
            for offset in range(count):
                i = start + offset
                record = templates[i % len(templates)]
                key = KEY.search(record).group(1)  # type: ignore[union-attr]
                own = f"{key}-{i}"
                title_match = TITLE.search(record)
                title = title_match.group(1).rstrip(".") if title_match else "Untitled"
                title = f"{title} {extra[2 * offset]} {extra[2 * offset + 1]}."
                if title_match:
                    begin, end = title_match.span(1)
                    record = record[:begin] + title + record[end:]
                record = KEY.sub(f'key="{own}"', record, count=1)
                record = DOI.sub(rf"\1.{i}\2", record)
                end = record.rindex("</")
                record = f"{record[:end]}<url>db/{own}.html</url>\n{record[end:]}"
                lines.append(record)
                if i in sampled:
                    sample.append({"key": own, "title": html.unescape(TAG.sub("", title))})
            out.write("\n".join(lines) + "\n")
        out.write("</dblp>\n")
    return sample


WORKERS = 2  # this machine's cores: the dump's pieces are parsed side by side


def _build(dump: Path, root: Path) -> None:
    from tasks.snapshots import dblp, store

    store.build(dblp.BUILDER, [dump], root, workers=WORKERS)


def with_a_typo(title: str, rng: random.Random) -> str:
    words = title.split()
    longest = max(range(len(words)), key=lambda n: len(words[n]))
    word = words[longest]
    cut = rng.randrange(1, len(word)) if len(word) > 2 else 0
    words[longest] = word[:cut] + word[cut + 1 :]
    return " ".join(words)


def load_average() -> str:
    return " ".join(f"{n:.1f}" for n in os.getloadavg())


def _timed_build(dump: Path, root: Path) -> None:
    """Build the snapshot in a child process tree; print its wall, CPU, peak RSS and size."""
    if root.exists():
        shutil.rmtree(root)
    run = run_measured(_build, dump, root)
    manifest = json.loads((root / "dblp" / "manifest.json").read_text())
    records = manifest["records"]
    print(
        f"build: {records:,} records in {run.wall:.0f} s ({records / run.wall:,.0f} records/s), "
        f"CPU {run.cpu:.0f} s ({records / run.cpu * WORKERS:,.0f} records/s on "
        f"{WORKERS} idle cores)"
    )
    print(
        f"build: peak RSS {run.peak_gb:.2f} GB (largest process); "
        f"snapshot on disk {manifest['bytes'] / 1e9:.2f} GB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=7_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/citeaudit-bench"))
    parser.add_argument("--keep", action="store_true", help="keep the built snapshot")
    parser.add_argument("--reuse", action="store_true", help="time the kept snapshot's lookups")
    args = parser.parse_args()
    work = args.workdir / f"dblp-{args.records}"
    dump, root = work / "input" / "dblp.xml.gz", work / "snapshots"
    sample_file = work / "sample.json"
    if not sample_file.is_file():
        started = time.perf_counter()
        sample = write_dump(dump.parent, args.records)
        sample_file.write_text(json.dumps(sample))
        print(f"dump: {args.records:,} records written in {time.perf_counter() - started:.0f} s")
    sample = json.loads(sample_file.read_text())
    print(f"dump: {dump.stat().st_size / 1e9:.2f} GB gzipped")
    print(f"load average before: {load_average()}")
    if not args.reuse:
        _timed_build(dump, root)

    from tasks.snapshots.index import open_snapshot
    from tasks.textnorm import normalise_title

    snapshot = open_snapshot(root, "dblp")
    assert snapshot is not None
    rng = random.Random(7)
    times, cpu, first, same = [], [], 0, 0
    with snapshot:
        snapshot.by_title(["warm up the connection"])
        for asked in sample:
            query = with_a_typo(asked["title"], rng)
            began, began_cpu = time.perf_counter(), time.thread_time()
            [found] = snapshot.by_title([query])
            times.append((time.perf_counter() - began) * 1000)
            cpu.append((time.thread_time() - began_cpu) * 1000)
            first += bool(found) and found[0]["id"] == asked["key"]
            # Or another record of the very same title first: a synthetic dump of millions
            # repeats titles (made-up words drawn Zipf-like), and no title search tells them apart.
            same += bool(found) and normalise_title(found[0]["title"]) == normalise_title(
                asked["title"]
            )
    cuts, cpu_cuts = statistics.quantiles(times, n=100), statistics.quantiles(cpu, n=100)
    print(
        f"title lookup ({len(times)} titles, one letter dropped): p50 {cuts[49]:.1f} ms, "
        f"p95 {cuts[94]:.1f} ms, max {max(times):.1f} ms (CPU p50 {cpu_cuts[49]:.1f} ms, "
        f"p95 {cpu_cuts[94]:.1f} ms); record first for {first}/{len(times)}, "
        f"its title first for {same}/{len(times)}"
    )
    print(f"load average after: {load_average()}")
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
