"""A whole `citeaudit audit` of identified citations, as a user runs it, against registries whose
limits are the speed limit (issue #14):

- ratio = (wall of the N-citation audit - wall of a 1-citation audit) / rate-limit bound,
  where the bound is the slowest registry's requests in the N-citation audit / its permitted
  rate; goal <= 1.2 with no 429;
- CPU per identified citation after start-up = (CPU of the N-citation audit - CPU of the
  1-citation audit) / N, with the default outputs; goal <= 3 ms. Counted twice: the CLI process
  alone, and with the background Prefect server's CPU added (its task-run bookkeeping).

The fake registry (tests/fake_registry) serves every bundled Crossref work and PubMed article
with 50 ms latency per answer, at a TENTH of the real limits (Crossref polite pool 1 request/s,
E-utilities 0.3/s would round to 0, so E-utilities keeps its real 3/s), so that registry time
dominates as it does for a large job at the real limits. Every run is a fresh `citeaudit`
process (no PREFECT_API_URL) in a temporary CITEAUDIT_HOME with the background server warm.

By default the client is told the lowered limits (CITEAUDIT_CROSSREF_MAX_RATE). With `--learn`
it is not, as when Crossref lowers its limits under load (#35): it starts from the documented
10/s and must take the 1/s from the answers' headers. The limiter's own share is printed apart:
the spacing of Crossref's requests from the second on against 1/rate (1/0.9 = 1.11 at the
default safety margin), and the wall left after the last registry answer (the job's scoring,
dedupe, rendering and writing, CPU-bound: what the load of a shared machine stretches).

    uv run python -m bench.audit_throughput [--learn]
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.startup import cli_env, server_stopped_after, timed
from tests.fake_registry import FakeRegistry, RequestRecord
from tests.reliability_data import bundled_pmids, bundled_works

CROSSREF_RATE = 1  # a tenth of the polite pool's 10/s
NCBI_RATE = 3
LATENCY_S = 0.05


def cpu_of(pids: list[int]) -> float:
    """User + system CPU seconds of the given processes and their children, alive now."""
    total = 0.0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for p in [proc, *proc.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def server_pids(home: Path) -> list[int]:
    folder = home / "prefect-server"
    found = [p for p in psutil.process_iter(["pid", "cmdline"]) if p.info["cmdline"]]
    return [p.info["pid"] for p in found if str(folder) in " ".join(p.info["cmdline"])]


def audit(
    work: Path, env: dict[str, str], name: str, lines: list[str]
) -> tuple[float, float, float]:
    """Wall seconds, CLI CPU seconds and background-server CPU seconds of one audit."""
    (work / f"{name}.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    args = ["audit", f"{name}.txt", "--job", name, "--out", "out"]
    servers = server_pids(Path(env["CITEAUDIT_HOME"]))
    server_before = cpu_of(servers)
    wall, cli = timed(args, env, work)
    return wall, cli, cpu_of(servers or server_pids(Path(env["CITEAUDIT_HOME"]))) - server_before


def main() -> None:
    learn = "--learn" in sys.argv[1:]
    registry = FakeRegistry(latency=LATENCY_S).start()
    try:
        registry.set_crossref_limit(CROSSREF_RATE, pool="polite")
        registry.set_pubmed_limit(NCBI_RATE)
        lines = [f"doi:{w['DOI']}" for w in bundled_works()]
        lines += [f"PMID: {p}" for p in bundled_pmids()]
        with tempfile.TemporaryDirectory(prefix="citeaudit-throughput-") as tmp:
            work = Path(tmp)
            env = cli_env(work)
            env.update({f"CITEAUDIT_{k.upper()}": v for k, v in registry.urls().items()})
            env.update(CITEAUDIT_MAILTO="bench@example.org", CITEAUDIT_CACHE_ENABLED="false")
            if not learn:  # (E-utilities' 3/s is its documented limit either way)
                env.update(
                    CITEAUDIT_CROSSREF_MAX_RATE=str(CROSSREF_RATE),
                    CITEAUDIT_PUBMED_MAX_RATE=str(NCBI_RATE),
                )
            with server_stopped_after(work, env):
                audit(work, env, "warm-up", lines[:1])
                one = audit(work, env, "one", lines[1:2])
                before = len(registry.log)
                started = time.monotonic()
                many = audit(work, env, "many", lines)
        print("client told the limits" if not learn else "client learning the limits")
        report(registry, before, len(lines), one, many)
        report_pace(registry.log[before:], started + many[0])
    finally:
        registry.stop()


def report(
    registry: FakeRegistry,
    before: int,
    n: int,
    one: tuple[float, float, float],
    many: tuple[float, float, float],
) -> None:
    log = registry.log[before:]
    crossref = sum(1 for r in log if r.service == "crossref")
    eutils = sum(1 for r in log if r.service == "eutils")
    refused = sum(1 for r in log if r.status == 429)
    bound = max(crossref / CROSSREF_RATE, eutils / NCBI_RATE)
    ratio = (many[0] - one[0]) / bound
    cli_ms = (many[1] - one[1]) / n * 1000
    all_ms = (many[1] + many[2] - one[1] - one[2]) / n * 1000
    print(f"{n} identified citations; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print(f"  requests: Crossref {crossref} at {CROSSREF_RATE}/s, E-utilities {eutils} at "
          f"{NCBI_RATE}/s: rate-limit bound {bound:.1f} s; 429s: {refused}")  # fmt: skip
    print(f"  wall: {n} citations {many[0]:.1f} s, 1 citation {one[0]:.1f} s")
    verdict = "met" if ratio <= 1.2 and refused == 0 else "MISSED"
    print(f"  (wall - one-citation wall) / bound = {ratio:.2f} (goal <= 1.2, no 429: {verdict})")
    print(f"  CPU per citation after start-up: {cli_ms:.2f} ms in the CLI process, {all_ms:.2f} ms "
          f"with the background Prefect server's (goal <= 3 ms: "
          f"{'met' if all_ms <= 3 else 'MISSED'})")  # fmt: skip


def report_pace(log: list[RequestRecord], ended: float) -> None:
    """The limiter alone: Crossref's requests from the second on against its advertised
    spacing, and how long the audit ran after the registries' last answer."""
    arrivals = [r.at for r in log if r.service == "crossref"]
    if len(arrivals) < 2:
        return
    spacing = (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1) * CROSSREF_RATE
    first_gap = (arrivals[1] - arrivals[0]) * CROSSREF_RATE
    print(f"  Crossref requests 2..{len(arrivals)}: {spacing:.2f} x the advertised spacing "
          f"(first gap {first_gap:.2f}); after the last registry answer: "
          f"{ended - max(r.at for r in log):.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
