"""Start-up of a citeaudit run as a user meets it: median of 5 wall-clock runs of

- `citeaudit --help`                                            goal <= 1 s
- a 5-reference `--offline` audit, background server warm       goal <= 5 s
- the same audit cold (no server running: the run starts it)    goal <= 15 s

Each run is a fresh process with no PREFECT_API_URL, in a temporary CITEAUDIT_HOME (so the
user's own background server is neither used nor stopped).

    uv run python -m bench.startup
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RUNS = 5
FIVE = (
    "10.1016/j.eng.2020.01.007\n10.1038/srep16696\nPMID: 29424689\n"
    "10.1145/2983323.2983779\nSmith J. A made up paper about things. J Stuff. 2019;12:1-10.\n"
)
GOALS = {"--help": 1.0, "audit, server warm": 5.0, "audit, cold": 15.0}


def timed(
    args: list[str], env: dict[str, str], cwd: Path, exit_code: int = 0
) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system) of one citeaudit process, which must
    exit with `exit_code`. On a shared machine the CPU figure is the steadier one: wall time
    there is mostly waiting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], env=env, cwd=cwd, capture_output=True
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != exit_code:
        raise RuntimeError(f"citeaudit {' '.join(args)} exited {done.returncode}: {done.stderr!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def cli_env(work: Path) -> dict[str, str]:
    """The environment of a citeaudit process run as a user runs it, under `work`: its own
    CITEAUDIT_HOME, library and Prefect home, none of our PREFECT_ settings."""
    (work / "prefect-home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    # A user's install keeps bytecode caches; without them (PYTHONDONTWRITEBYTECODE, as on
    # this team's machines) every run compiles Prefect's sources again, ~1/3 of its CPU.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return {
        **env,
        "CITEAUDIT_HOME": str(work / "home"),
        "CITEAUDIT_DB": str(work / "lib.duckdb"),
        "PREFECT_HOME": str(work / "prefect-home"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }


@contextmanager
def server_stopped_after(work: Path, env: dict[str, str]) -> Iterator[None]:
    """The background Prefect server the CLI started under `env` is stopped when the block ends,
    so a benchmark leaves no server behind (nor times the next one's start against a warm one)."""
    try:
        yield
    finally:
        subprocess.run(
            [sys.executable, "-m", "flows.cli", "server", "stop"],
            env=env,
            cwd=work,
            capture_output=True,
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="citeaudit-startup-") as tmp:
        work = Path(tmp)
        (work / "five.txt").write_text(FIVE, encoding="utf-8")
        env = cli_env(work)
        audit = ["audit", "five.txt", "--job", "five", "--out", "out", "--offline"]
        stop = ["server", "stop"]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in GOALS}
        try:
            for _ in range(RUNS):
                times["--help"].append(timed(["--help"], env, work))
                timed(stop, env, work)
                times["audit, cold"].append(timed(audit, env, work))
                times["audit, server warm"].append(timed(audit, env, work))
        finally:
            timed(stop, env, work)
    load = os.getloadavg()[0]
    print(f"start-up, median of {RUNS} (load average at the end {load:.1f}, {os.cpu_count()} CPUs)")
    for name, goal in GOALS.items():
        median = statistics.median(wall for wall, _ in times[name])
        cpu = statistics.median(cpu for _, cpu in times[name])
        verdict = "met" if median <= goal else "MISSED"
        spread = ", ".join(f"{wall:.2f}" for wall, _ in sorted(times[name]))
        print(
            f"  {name:<20} {median:6.2f} s wall, {cpu:5.2f} s CPU "
            f"(goal <= {goal:g} s: {verdict}; runs {spread})"
        )


if __name__ == "__main__":
    main()
