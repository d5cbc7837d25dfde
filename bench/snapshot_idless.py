"""1,000 ID-less references against a full-size dblp snapshot, then the same job live-only
(issue #30, benchmark 2).

The references are drawn from the snapshot's own records (its Parquet part, a seeded sample of
the records with a title, authors and a year) and written as a citer writes them: the title
changed one of three ways in turn (a letter dropped from its longest word; sentence case; a
subtitle's colon written as a dash, else a letter dropped), the authors as `Last, F.`, the venue,
the year; no DOI, no arXiv id, no URL. They go to a .bib file audited by the real CLI (`citeaudit
audit`, a process of its own, background Prefect server warm), twice:

1. snapshots only: CITEAUDIT_SNAPSHOTS at the snapshot, `--offline` (no live registry);
2. live only: no snapshot, the in-repo fake registry (tests/fake_registry) with its real limits
   (dblp 1 request/s, one in flight; Semantic Scholar 1/s with a key; arXiv one per 3 s;
   OpenAlex 10/s with a key), the client at its documented limits. The fake holds none of these
   synthetic records, only the real ones the dump's titles were made from: a search may find
   one (its title the reference's without the two made-up words, read as a shortened title),
   else every registry of the reference's kind is asked in turn. The run measures what the
   searches for 1,000 ID-less references cost at those limits, not what they would decide.

Each job's wall after start-up is its wall less that of a one-reference audit of the same kind
(bench/audit_throughput.py's way); CPU the same: the CLI process's own, its children's (pandoc
renders the bibliographies beside the lookups, on the other core) and the background server's.
Printed with the statuses (how many verified, and of those how many by the very record drawn)
and the load average before and after each run (the machine is shared).
`--live-sample N` runs N of the 1,000 live and scales the wall by 1,000/N, printed as scaled.
Goal: the snapshot job <= 20 s after start-up.

The snapshot is the one `bench.snapshot_build --records 7000000 --keep` leaves under WORKDIR.

Run: nice uv run python -m bench.snapshot_idless [--records N] [--workdir DIR]
     [--live-sample N | --no-live]
"""

import argparse
import contextlib
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import psutil

from bench.audit_throughput import cpu_of, server_pids
from bench.hallmark import as_bibtex
from bench.snapshot_build import load_average, with_a_typo
from bench.startup import cli_env, server_stopped_after
from tests.fake_registry import FakeRegistry

REFERENCES = 1_000
SAMPLE_S = 0.05  # how often a CLI process's own CPU is read
GOAL_S = 20.0
BIBTEX = {
    "paper-conference": ("inproceedings", "booktitle"),
    "chapter": ("incollection", "booktitle"),
    "article-journal": ("article", "journal"),
    "article": ("article", "journal"),
    "thesis": ("phdthesis", "school"),
    "book": ("book", "publisher"),
}


def draw(snapshot: Path, count: int, seed: int = 30) -> list[dict[str, Any]]:
    """`count` records of the snapshot with a title, authors and a year, drawn at random."""
    parts = str(snapshot / "parts" / "*" / "*.parquet")
    with duckdb.connect() as con:
        con.execute("SET enable_progress_bar = false")
        return (
            con.execute(
                f"""SELECT id, title, authors, year, container, type FROM (
                    SELECT * FROM read_parquet('{parts}')
                    WHERE title IS NOT NULL AND len(authors) > 0 AND year IS NOT NULL)
                USING SAMPLE reservoir({count} ROWS) REPEATABLE ({seed}) ORDER BY id"""
            )
            .to_arrow_table()
            .to_pylist()
        )


def as_cited(title: str, n: int, rng: random.Random) -> str:
    """The title as the n-th citer writes it: a typo, sentence case, or its subtitle's colon
    written as a dash (a typo where it has none)."""
    title = title.rstrip(".")
    if n % 3 == 1:
        return title[:1] + title[1:].lower()
    if n % 3 == 2 and ": " in title:
        return title.replace(": ", " - ", 1)
    return with_a_typo(title, rng)


def author(name: dict[str, Any]) -> str:
    if name.get("literal"):
        return f"{{{name['literal']}}}"
    initials = " ".join(f"{part[0]}." for part in (name.get("given") or "").split() if part)
    return f"{name['family']}, {initials}" if initials else name["family"]


def entries(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as a citer's BibTeX entries (as_bibtex's form), keyed ref0001..."""
    rng = random.Random(7)
    made = []
    for n, record in enumerate(records):
        kind, venue_field = BIBTEX.get(record["type"], ("misc", "howpublished"))
        fields = {
            "title": as_cited(record["title"], n, rng),
            "author": " and ".join(author(a) for a in record["authors"]),
            "year": str(record["year"]),
        }
        if record["container"]:
            fields[venue_field] = record["container"]
        made.append({"bibtex_type": kind, "bibtex_key": f"ref{n:04d}", "fields": fields})
    return made


@dataclass(frozen=True)
class Run:
    """One `citeaudit audit`: seconds of wall and of CPU, and its citations' rows."""

    wall: float
    own: float  # the CLI process's own CPU
    children: float  # its children's: pandoc, rendering the bibliographies beside the lookups
    server: float  # the background Prefect server's, meanwhile
    rows: list[tuple[str, str, str | None, str | None]]  # entry_key, status, registry, matched_id


def audit(
    work: Path, env: dict[str, str], name: str, refs: list[dict[str, Any]], *extra: str
) -> Run:
    """One `citeaudit audit` of `refs`, a process of its own (its CPU sampled as it runs: its
    children's CPU is counted only once they are waited for)."""
    (work / f"{name}.bib").write_text(as_bibtex(refs), encoding="utf-8")
    servers = server_pids(Path(env["CITEAUDIT_HOME"]))
    server_before = cpu_of(servers)
    args = ["audit", f"{name}.bib", "--job", name, "--out", "out", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    errors = work / f"{name}.stderr"
    with errors.open("wb") as stderr:
        process = psutil.Popen(
            [sys.executable, "-m", "flows.cli", *args],
            env=env,
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        own = 0.0
        while process.poll() is None:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                own = times.user + times.system
            time.sleep(SAMPLE_S)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(
            f"citeaudit {' '.join(args)} exited {process.returncode}: {errors.read_text()[-2000:]}"
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    server = cpu_of(servers or server_pids(Path(env["CITEAUDIT_HOME"]))) - server_before
    rows = duckdb.sql(
        f"SELECT entry_key, status, registry, matched_id FROM "
        f"read_parquet('{work / 'out' / name / 'citations.parquet'}')"
    ).fetchall()
    return Run(wall, own, total - own, server, rows)


def run_jobs(
    env: dict[str, str],
    refs: list[dict[str, Any]],
    one: list[dict[str, Any]],
    *extra: str,
    before_job: Callable[[], None] = lambda: None,
) -> tuple[Run, Run]:
    """The warm-up, the one-reference audit and the whole job (`before_job` called before it),
    in a fresh CITEAUDIT_HOME."""
    with tempfile.TemporaryDirectory(prefix="citeaudit-idless-") as tmp:
        work = Path(tmp)
        job_env = {**cli_env(work), **env}
        with server_stopped_after(work, job_env):
            audit(work, job_env, "warm-up", one, *extra)
            single = audit(work, job_env, "one", one, *extra)
            before_job()
            many = audit(work, job_env, "many", refs, *extra)
    return single, many


def report(
    what: str,
    n: int,
    single: Run,
    many: Run,
    drawn: list[dict[str, Any]],
    scale: float = 1.0,
) -> float:
    """Print a job's figures; its wall after start-up (scaled by `scale`)."""
    after = (many.wall - single.wall) * scale
    own = (many.own - single.own) * scale
    children = (many.children - single.children) * scale
    server = (many.server - single.server) * scale
    statuses = Counter(row[1] for row in many.rows)
    keys = {f"ref{i:04d}": record["id"] for i, record in enumerate(drawn)}
    drawn_first = sum(1 for r in many.rows if r[1] == "verified" and r[3] == keys.get(r[0]))
    scaled = f", SCALED x{scale:.1f} from {n}" if scale != 1.0 else ""
    print(f"{what}: {n} references{scaled}")
    print(
        f"  wall {many.wall:.1f} s, one reference {single.wall:.1f} s: after start-up "
        f"{after:.1f} s{' (scaled)' if scale != 1.0 else ''}"
    )
    print(
        f"  CPU after start-up: {own:.1f} s the CLI process, {children:.1f} s its children "
        f"(pandoc), {server:.1f} s the background server: {own + children + server:.1f} s"
    )
    print(
        f"  statuses: {dict(statuses.most_common())}; verified by the record drawn: "
        f"{drawn_first}; registries: {dict(Counter(r[2] for r in many.rows).most_common())}"
    )
    return after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=7_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/citeaudit-bench"))
    parser.add_argument("--live-sample", type=int, help="run N of the references live, scaled")
    parser.add_argument("--no-live", action="store_true", help="the snapshot job only")
    args = parser.parse_args()
    root = args.workdir / f"dblp-{args.records}" / "snapshots"
    if not (root / "dblp" / "manifest.json").is_file():
        sys.exit(
            f"no dblp snapshot under {root}: build it with "
            f"`python -m bench.snapshot_build --records {args.records} --keep`"
        )
    drawn = draw((root / "dblp").resolve(), REFERENCES + 1)
    one, drawn = entries(drawn[:1]), drawn[1:]
    refs = entries(drawn)
    print(f"snapshot: {root / 'dblp'} ({args.records:,} records); {len(refs)} references drawn")

    print(f"load average before the snapshot job: {load_average()}")
    snapshot_env = {"CITEAUDIT_SNAPSHOTS": str(root), "CITEAUDIT_CACHE_ENABLED": "false"}
    single, many = run_jobs(snapshot_env, refs, one, "--offline")
    after = report("snapshots only (--offline)", len(refs), single, many, drawn)
    print(f"  goal <= {GOAL_S:.0f} s after start-up: {'met' if after <= GOAL_S else 'MISSED'}")
    print(f"load average after: {load_average()}", flush=True)
    if args.no_live:
        return

    sample = min(args.live_sample or len(refs), len(refs))
    with FakeRegistry() as registry, tempfile.TemporaryDirectory() as empty:
        live_env = {
            **{f"CITEAUDIT_{k.upper()}": v for k, v in registry.urls().items()},
            "CITEAUDIT_SNAPSHOTS": empty,  # none built: the live registries only
            "CITEAUDIT_CACHE_ENABLED": "false",
            "CITEAUDIT_MAILTO": "bench@example.org",
            "S2_API_KEY": "bench-key",  # the fake admits any key; its pool is keyed users' 1/s
            "OPENALEX_API_KEY": "bench-key",
        }
        print(f"load average before the live job: {load_average()}", flush=True)
        single, many = run_jobs(live_env, refs[:sample], one, before_job=registry.reset)
        log = registry.log
    print(
        "live only, the fake registry at the real limits (it holds none of these records, only "
        "the real ones their titles were made from: the wall is the throttled searches' cost, "
        "its statuses are no measure of the snapshot's)"
    )
    report("live only", sample, single, many, drawn[:sample], len(refs) / sample)
    requests = Counter(r.service for r in log)
    refused = sum(1 for r in log if r.status == 429)
    print(f"  requests of the job: {dict(requests.most_common())}; 429s: {refused}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
