"""Prefect's cost per citation: `audit_job` offline on N citations vs the same stages called as
plain functions (each task's `.fn`), both writing a job folder and a library; goal <= 5 ms.

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

import flows.quiet  # noqa: F401  (before prefect)
from flows import steps
from flows.audit import DEFAULT_CHUNK
from tasks.citation_ids import assign_citation_ids, link_claims, plan_chunks, unique_claim_ids
from tasks.dedupe.job import repeats_within_jobs
from tasks.render.selection import bibliography_items
from tests.reliability_data import bundled_works, synthetic_works, write_doi_list

STYLES = ["apa"]


def plain_job(inputs: list[str], job_id: str, out_dir: str, db: str) -> None:
    """audit_job's stages (flows/audit.py), without Prefect: keep in step with the flow."""
    read = steps.read_step.fn(inputs, None)
    claims, refs = unique_claim_ids(read.claims, assign_citation_ids(read.references))
    claims = link_claims(claims, refs)
    results = [
        r for chunk in plan_chunks(refs, DEFAULT_CHUNK) for r in steps.lookup_chunk.fn(chunk, True)
    ]
    works = steps.dedupe_step.fn(job_id, refs, results, db)
    duplicates = repeats_within_jobs(works.columns).height
    assessment = steps.assess_step.fn(refs, results, claims, duplicates=duplicates)
    work_ids = dict(works.columns.select("citation_id", "work_id").iter_rows())
    items = bibliography_items(refs, {r.citation_id: r for r in results}, work_ids)
    bibliographies = steps.render_step.fn(items, STYLES)
    job = steps.JobRecord(
        job_id=job_id,
        inputs=inputs,
        refs=refs,
        results=results,
        errors=read.errors,
        claims=claims,
        assessment=assessment,
        items=items,
        bibliographies=bibliographies,
        dedupe=works,
    )
    steps.persist_step.fn(job, out_dir, db)


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
        db = str(work / f"{job_id}.duckdb")
        audit_job(inputs=[source], job_id=job_id, out_dir=out, db=db, offline=True, styles=STYLES)

    with prefect_test_harness(server_startup_timeout=120):
        print(f"machine load before: {os.getloadavg()[0]:.2f} (1 min), nproc {os.cpu_count()}")
        flow_job("warm-flow")  # imports, server tables and caches warm for both
        plain_job([source], "warm-plain", out, str(work / "warm-plain.duckdb"))
        flow_s = timed(lambda: flow_job("flow"))
        plain_s = timed(lambda: plain_job([source], "plain", out, str(work / "plain.duckdb")))
        print(f"machine load after: {os.getloadavg()[0]:.2f}")
    print(
        f"{n} citations offline, chunks of {DEFAULT_CHUNK}, styles {STYLES}: "
        f"flow {flow_s:.2f} s, plain functions {plain_s:.2f} s"
    )
    cost_ms = (flow_s - plain_s) / n * 1e3
    print(f"Prefect orchestration cost per citation: {cost_ms:.2f} ms (goal <= 5 ms)")


if __name__ == "__main__":
    main()
