"""Agents adding citations while a crew runs: the agent service's `add` against the fake
registry at the real rate limits with 50 ms latency per answer.

    one agent       N adds in a row: seconds per add (median, 95th percentile), and whether that
                    grows with the job (an add stores only its own rows)
    several agents  A threads adding N/A each to one job at once: seconds per add (median),
                    wall time, adds per second, 429s (goal 0), every add stored once (goal: all)
    a grown job     G citations audited as a list (offline) into a job, then K adds to it and K
                    to an empty job (offline: the store's cost alone): seconds per add on each

Input: N DOIs of the fake registry's bundled works. Run: uv run python -m bench.agent [N] [A] [G]
"""

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.agents.service import AgentService
from flows.audit import run_pipeline
from models.job import JobParams
from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at
from tests.reliability_data import bundled_works


def timed_add(service: AgentService, job: str, doi: str) -> float:
    started = time.perf_counter()
    service.add(job, doi=doi)
    return time.perf_counter() - started


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    agents = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    grown = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    dois = [w["DOI"] for w in bundled_works()]
    work = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    with FakeRegistry() as registry:
        registry.latency = 0.05
        os.environ.update(point_env_at(registry, work))  # read at each call, not at import
        service = AgentService(db=str(work / "citeaudit.duckdb"))
        print(f"machine load before: {os.getloadavg()[0]:.2f} (1 min), nproc {os.cpu_count()}")
        seconds = [timed_add(service, "one-agent", doi) for doi in dois[:n]]
        quarter = max(1, n // 4)
        print(
            f"one agent, {n} adds: median {statistics.median(seconds):.2f} s, "
            f"p95 {sorted(seconds)[int(0.95 * (n - 1))]:.2f} s; first {quarter} adds "
            f"{statistics.mean(seconds[:quarter]):.2f} s each, last {quarter} "
            f"{statistics.mean(seconds[-quarter:]):.2f} s each"
        )
        registry.reset()
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=agents) as pool:
            each = list(pool.map(lambda doi: timed_add(service, "crew", doi), dois[n : 2 * n]))
        wall = time.perf_counter() - started
        stored = len(service.list_citations("crew").data["citations"])
        print(
            f"{agents} agents, {n} adds at once: median {statistics.median(each):.2f} s per add, "
            f"{wall:.1f} s wall, {n / wall:.2f} adds/s, "
            f"{registry.rate_limited()} x 429 (goal 0), {stored}/{n} stored (goal all)"
        )
        grown_job(work, dois, grown)
        print(f"machine load after: {os.getloadavg()[0]:.2f} (1 min)")


def grown_job(work: Path, dois: list[str], size: int, adds: int = 5) -> None:
    """Whether an add's cost grows with its job: adds to a job of `size` and to an empty one."""
    listing = work / "grown.txt"
    listing.write_text("\n".join(dois[:size]) + "\n")
    db = str(work / "grown.duckdb")
    params = JobParams(inputs=[str(listing)], job_id="grown", db=db, out_dir=str(work / "out"))
    run_pipeline(params.model_copy(update={"offline": True, "styles": []}))
    service = AgentService(db=db, offline=True)
    fresh = dois[size : size + adds]
    on_grown = [timed_add(service, "grown", doi) for doi in fresh]
    on_empty = [timed_add(service, "empty", doi) for doi in fresh]
    print(
        f"offline adds: to a job of {size} citations median {statistics.median(on_grown):.2f} s, "
        f"to an empty job {statistics.median(on_empty):.2f} s ({adds} adds each)"
    )


if __name__ == "__main__":
    main()
