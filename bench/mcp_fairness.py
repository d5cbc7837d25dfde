"""Two MCP servers on one library, fairly served (#35.7): p99 add latency with two servers
against one.

Eight MCP clients (the SDK's streamable-HTTP client, one session each) call `add_citation`
`--calls` times each, one call after another, every call a DOI of the fake registry's bundled
works not added before (each client its own job), all eight at once:
- one server: a real `citeaudit mcp --http` process serving all eight clients;
- two servers: two such processes on the same library (`CITEAUDIT_DB`), four clients each.
Every add looks its DOI up (outside the library lock) and then stores its rows under the
library's write lock, so with two servers the processes queue for one lock file; before #35.7 a
waiter polled a non-blocking flock with backoff and lost to a server taking the lock call after
call (the issue: one server finished 4 calls of 117-124 s while the other did 146).

The fake registry (tests/fake_registry) answers after `LATENCY_S` with its rate limits off, so
the figures measure the library's lock, not a registry's pacing. A fresh library and HTTP cache
per setting.

Goal: p99 add latency with two servers <= 3x the p99 with one.
Run: uv run python -m bench.mcp_fairness [--calls N] [--clients C]
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.fake_registry import FakeRegistry
from tests.fake_registry.fixtures import point_env_at
from tests.reliability_data import bundled_works

ROOT = Path(__file__).resolve().parents[1]
LATENCY_S = 0.05
GOAL_RATIO = 3.0
CALL_TIMEOUT_S = 900  # the issue saw a call take 321 s


@dataclass(frozen=True)
class Calls:
    """One client's add latencies (seconds), in call order, and the server it called."""

    server: int
    seconds: list[float]
    failed: int


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def mcp_server(env: dict[str, str]) -> Iterator[str]:
    """`citeaudit mcp --http` as a real process; its URL once it listens."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "mcp", "--http", "--port", str(port)],
        env={**os.environ, **env},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the MCP server exited with {process.returncode}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP server never listened")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=60)


async def client(url: str, server: int, job: str, dois: Sequence[str], start: anyio.Event) -> Calls:
    """One agent: initialize, wait for the others, then add each DOI in turn, timing each call."""
    seconds, failed = [], 0
    async with (
        httpx.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await start.wait()
        for doi in dois:
            started = time.perf_counter()
            result = await session.call_tool("add_citation", {"job": job, "doi": doi})
            seconds.append(time.perf_counter() - started)
            failed += bool(result.isError)
    return Calls(server, seconds, failed)


async def drive(urls: Sequence[str], clients: int, dois: Sequence[str], calls: int) -> list[Calls]:
    """`clients` clients at once, client k on server k mod len(urls), each its own DOIs."""
    results: list[Calls] = []
    start = anyio.Event()

    async def one(k: int) -> None:
        mine = dois[k * calls : (k + 1) * calls]
        results.append(await client(urls[k % len(urls)], k % len(urls), f"agent-{k}", mine, start))

    async with anyio.create_task_group() as group:
        for k in range(clients):
            group.start_soon(one, k)
        await anyio.sleep(2)  # every session initialized before the first add
        start.set()
    return results


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(label: str, seconds: Sequence[float]) -> str:
    return (
        f"{label}: {len(seconds)} calls, p50 {statistics.median(seconds):.2f} s, "
        f"p99 {percentile(seconds, 0.99):.2f} s, max {max(seconds):.2f} s"
    )


def run(servers: int, clients: int, calls: int, dois: Sequence[str]) -> float:
    """One setting: `servers` servers on a fresh library; prints its figures, returns its p99."""
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp, ExitStack() as stack:
        registry = stack.enter_context(FakeRegistry(rate_limits=False, latency=LATENCY_S))
        env = point_env_at(registry, Path(tmp))
        urls = [stack.enter_context(mcp_server(env)) for _ in range(servers)]
        load = os.getloadavg()[0]
        started = time.perf_counter()
        results = anyio.run(drive, urls, clients, dois, calls)
        wall = time.perf_counter() - started
        every = [s for r in results for s in r.seconds]
        failed = sum(r.failed for r in results)
        print(
            f"{servers} server(s), {clients} clients x {calls} adds: {wall:.1f} s wall, "
            f"load {load:.1f} -> {os.getloadavg()[0]:.1f}, {failed} failed calls",
            flush=True,
        )
        print("  " + summary("all", every), flush=True)
        for server in range(servers):
            mine = [s for r in results if r.server == server for s in r.seconds]
            print("  " + summary(f"server {server + 1}", mine), flush=True)
        return percentile(every, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="adds per client")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    dois = [work["DOI"] for work in bundled_works()]
    if args.clients * args.calls > len(dois):
        raise SystemExit(f"at most {len(dois)} adds: the fake registry's bundled works")
    print(f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.1f}", flush=True)
    one = run(1, args.clients, args.calls, dois)
    two = run(2, args.clients, args.calls, dois)
    ratio = two / one
    met = "met" if ratio <= GOAL_RATIO else "MISSED"
    print(f"p99 two servers / one server: {two:.2f} / {one:.2f} s = {ratio:.2f} "
          f"(goal <= {GOAL_RATIO:g}: {met})")  # fmt: skip


if __name__ == "__main__":
    main()
