"""Agents adding citations while a crew runs: the agent service's `add` against the fake
registry at the real rate limits with 50 ms latency per answer.

    one agent       N adds in a row: seconds per add (median, 95th percentile), and how that
                    grows with the job (each add re-stores the whole job)
    several agents  A threads adding N/A each to one job at once: wall time, adds per second,
                    429s (goal 0), every add stored once (goal: all)

Input: N DOIs of the fake registry's bundled works. Run: uv run python -m bench.agent [N] [A]
"""

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.agent_service import AgentService
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
    dois = [w["DOI"] for w in bundled_works()][: 2 * n]
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
            list(pool.map(lambda doi: timed_add(service, "crew", doi), dois[n : 2 * n]))
        wall = time.perf_counter() - started
        stored = len(service.list_citations("crew").data["citations"])
        print(
            f"{agents} agents, {n} adds at once: {wall:.1f} s wall, {n / wall:.2f} adds/s, "
            f"{registry.rate_limited()} x 429 (goal 0), {stored}/{n} stored (goal all)"
        )


if __name__ == "__main__":
    main()
