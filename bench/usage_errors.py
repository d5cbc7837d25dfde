"""Usage errors as a user meets them (#32): each must answer at about what `--help` costs, before
Prefect, the registry clients, the readers or the store (DuckDB, Polars, pyarrow) load. For each
command, the best of 5 fresh processes: CPU seconds (user + system, the steadier figure on a
shared machine) and wall seconds; `--help` first, as the floor.

    uv run python -m bench.usage_errors

Bytecode caches are written and kept, as a user's install keeps them (bench/startup.py says
why): the best of 5 is a run that found them.
"""

import os
import tempfile
from pathlib import Path

from bench.startup import timed

RUNS = 5
# name -> the command's arguments and the exit code it must give
COMMANDS: dict[str, tuple[list[str], int]] = {
    "--help": (["--help"], 0),
    "audit --fail-on bogus": (["audit", "--fail-on", "bogus", "--job", "x", "refs.bib"], 2),
    "audit missing.bib": (["audit", "--job", "x", "missing.bib"], 2),
    "fix missing.bib": (["fix", "missing.bib"], 2),
    "report --db missing.duckdb": (["report", "x", "--db", "missing.duckdb"], 2),
}
# The goal: a usage error costs at most this much CPU over `--help`.
GOAL_OVER_HELP_S = 0.2


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="citeaudit-usage-") as tmp:
        work = Path(tmp)
        (work / "refs.bib").write_text("@article{a, title={A title}, year={2001}}\n")
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PREFECT_", "CITEAUDIT_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        best: dict[str, tuple[float, float]] = {}
        for name, (args, code) in COMMANDS.items():
            runs = [timed(args, env, work, exit_code=code) for _ in range(RUNS)]
            best[name] = (min(wall for wall, _ in runs), min(cpu for _, cpu in runs))
    load = os.getloadavg()[0]
    print(f"usage errors, best of {RUNS} (load average at the end {load:.1f})")
    floor = best["--help"][1]
    for name, (wall, cpu) in best.items():
        over = cpu - floor
        verdict = "" if name == "--help" else f", {over:+.2f} s over --help"
        if name != "--help":
            verdict += " (met)" if over <= GOAL_OVER_HELP_S else " (MISSED)"
        print(f"  {name:<28} {cpu:5.2f} s CPU, {wall:5.2f} s wall{verdict}")


if __name__ == "__main__":
    main()
