"""Prefect's cost per citation: `audit_job` offline on N citations vs the same pipeline on plain
function calls (`run_pipeline`), both writing a job folder and a library; goal <= 5 ms.

    cost per citation = (flow wall - plain wall) / N

Both use one bibliography style (apa) so rendering, which is the same work either way, does not
drown the difference. Needs a Prefect server: a temporary one (prefect_test_harness) is started.
Input: N citations as a DOI list of the fake registry's bundled works (offline: no HTTP).
Run: uv run python -m bench.orchestration [N]
"""

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import flows.prefect_logging  # noqa: F401  (before prefect)
from flows.audit import run_pipeline
from models.job import DEFAULT_CHUNK, JobParams
from tests.reliability_data import bundled_works, synthetic_works, write_doi_list

STYLES = ["apa"]


def params(source: str, job_id: str, out_dir: str, db: str) -> JobParams:
    return JobParams(
        inputs=[source], job_id=job_id, out_dir=out_dir, db=db, offline=True, styles=STYLES
    )


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    from prefect.testing.utilities import prefect_test_harness

    from flows.audit import audit_job

    work = Path(tempfile.mkdtemp(prefix="bench-orchestration-"))
    dois = [w["DOI"] for w in bundled_works()][:n]
    dois += [w["DOI"] for w in synthetic_works(n - len(dois))]
    source = str(write_doi_list(work / "refs.txt", dois))
    out = str(work / "out")

    def flow_job(job_id: str) -> None:
        audit_job(params(source, job_id, out, str(work / f"{job_id}.duckdb")))

    def plain_job(job_id: str) -> None:
        run_pipeline(params(source, job_id, out, str(work / f"{job_id}.duckdb")))

    with prefect_test_harness(server_startup_timeout=120):
        print(f"machine load before: {os.getloadavg()[0]:.2f} (1 min), nproc {os.cpu_count()}")
        flow_job("warm-flow")  # imports, server tables and caches warm for both
        plain_job("warm-plain")
        flow_s = timed(lambda: flow_job("flow"))
        plain_s = timed(lambda: plain_job("plain"))
        print(f"machine load after: {os.getloadavg()[0]:.2f}")
    print(
        f"{n} citations offline, chunks of {DEFAULT_CHUNK}, styles {STYLES}: "
        f"flow {flow_s:.2f} s, plain functions {plain_s:.2f} s"
    )
    cost_ms = (flow_s - plain_s) / n * 1e3
    print(f"Prefect orchestration cost per citation: {cost_ms:.2f} ms (goal <= 5 ms)")


if __name__ == "__main__":
    main()
