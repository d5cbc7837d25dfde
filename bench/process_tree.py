"""A build measured as a tree of processes: its wall, the CPU of every process in it and the
peak RSS of the largest one.

A build's workers are the children of multiprocessing's forkserver, not of the build, so
`getrusage(RUSAGE_CHILDREN)` counts neither their CPU nor their memory: the tree is sampled
instead (CPU and RSS per process, twice a second; a worker's last half second is missed).
"""

import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

SAMPLE_S = 0.5


@dataclass(frozen=True)
class Measured:
    wall: float  # seconds
    cpu: float  # seconds, user and system, summed over the tree
    peak_gb: float  # the largest RSS any one process of the tree reached


def run_measured(target: Callable[..., None], *args: object) -> Measured:
    """Run `target(*args)` in a spawned process (this one's memory is not counted); raise
    SystemExit if it fails."""
    started = time.perf_counter()
    child = multiprocessing.get_context("spawn").Process(target=target, args=args)
    child.start()
    cpu: dict[int, float] = {}
    peak = 0
    tree = psutil.Process(child.pid)
    while child.is_alive():
        try:
            processes = [tree, *tree.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    cpu[process.pid] = times.user + times.system
                    peak = max(peak, process.memory_info().rss)
            except psutil.NoSuchProcess:
                continue
        time.sleep(SAMPLE_S)
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"the build failed (exit {child.exitcode})")
    return Measured(time.perf_counter() - started, sum(cpu.values()), peak / 1e9)
