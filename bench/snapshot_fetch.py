"""`citeaudit snapshot fetch` against the publishers' stand-in (tests/fake_registry/dumps.py), as
a user runs it (`python -m flows.cli`, its own CITEAUDIT_DOWNLOADS), for each source that is
downloaded as files:

| case       | what                                                                            |
|------------|---------------------------------------------------------------------------------|
| `resume`   | the fetch SIGKILLed once its biggest file's .part holds half the file, run again: |
|            | the Range the second run asks, the bytes asked twice, the file's md5 against the |
|            | publisher's                                                                     |
| `corrupt`  | one byte flipped in the biggest file as served: the exit code, the file absent   |
| `disk`     | CITEAUDIT_FETCH_RESERVE_BYTES set above the free space: the exit code, the bytes |
|            | of dump files sent before it refused                                           |
| `rate`     | an unthrottled fetch of the biggest file: MB/s, and the client's CPU per GB     |

The files are random bytes of the publishers' layouts (fetch checks bytes, never formats):
dblp.xml.gz of SIZE MB with its .md5 and DTD; Retraction Watch's CSV of SIZE/4; an OpenAlex
partition of 4 parts of SIZE/4 with its manifest; a PubMed baseline file of SIZE/2 and an
update file, each with its .md5. The arXiv harvest is OAI-PMH pages, resumed from a token
(tests/test_snapshots_fetch.py); Kaggle's zip is a file like the others.

Run: nice uv run python -m bench.snapshot_fetch [--size MB] [--workdir DIR]
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from tests.fake_registry.dumps import DumpServer, dblp_release, openalex_partition, pubmed_file

ROOT = Path(__file__).resolve().parents[1]


def publish(www: Path, size: int) -> dict[str, tuple[str, str]]:
    """Each source's files under `www`; per source, (biggest file's name in the downloads
    folder, its path on the server)."""
    noise = random.Random(41)
    dblp_release(www / "xml", noise.randbytes(size), b"<!ELEMENT dblp ANY>")
    (www / "rw").mkdir(parents=True)
    (www / "rw" / "retraction_watch.csv").write_bytes(noise.randbytes(size // 4))
    openalex_partition(www, "2026-11-01", [[{"id": "W1"}]] * 4)
    for written in sorted((www / "data/works/updated_date=2026-11-01").glob("part_*.gz")):
        written.write_bytes(noise.randbytes(size // 4))
    manifest = json.loads((www / "data/works/manifest").read_text())
    for entry in manifest["entries"]:
        entry["meta"]["content_length"] = size // 4
    (www / "data/works/manifest").write_text(json.dumps(manifest))
    pubmed_file(www / "pubmed/baseline", "pubmed26n0001.xml.gz", noise.randbytes(size // 2))
    pubmed_file(www / "pubmed/updatefiles", "pubmed26n0002.xml.gz", noise.randbytes(1000))
    part = "data/works/updated_date=2026-11-01/part_003.gz"
    return {
        "dblp": ("dblp.xml.gz", "/xml/dblp.xml.gz"),
        "retractions": ("retraction_watch.csv", "/rw/retraction_watch.csv"),
        "openalex": (part, f"/{part}"),
        "pubmed": ("baseline/pubmed26n0001.xml.gz", "/pubmed/baseline/pubmed26n0001.xml.gz"),
    }


def environment(server: DumpServer, work: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CITEAUDIT_SNAPSHOTS": str(work / "snapshots"),
        "CITEAUDIT_DOWNLOADS": str(work / "downloads"),
        "CITEAUDIT_DBLP_DUMP_URL": f"{server.url}/xml",
        "CITEAUDIT_RETRACTIONS_URL": f"{server.url}/rw/retraction_watch.csv",
        "CITEAUDIT_OPENALEX_BUCKET_URL": server.url,
        "CITEAUDIT_PUBMED_DUMP_URL": f"{server.url}/pubmed",
        "CITEAUDIT_FETCH_PACE_S": "0",
        "CITEAUDIT_FETCH_RESERVE_BYTES": "0",
        "CITEAUDIT_PROGRESS_SECONDS": "3600",
        **extra,
    }


def command(name: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "snapshot", "fetch", name]


def run(name: str, env: dict[str, str]) -> tuple[int, float, float]:
    """(exit code, wall s, CPU s of the process) of one fetch run to its end."""
    started = time.monotonic()
    process = psutil.Popen(
        command(name), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    cpu = 0.0
    while process.poll() is None:
        try:
            times = process.cpu_times()
            cpu = times.user + times.system
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    return process.returncode, time.monotonic() - started, cpu


def md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def resume(name: str, target: str, served: str, www: Path, work: Path, size: int) -> str:
    with DumpServer(www, rate=size / 4) as server:  # the whole file in ~4 s: a kill lands
        env = environment(server, work)
        part = work / "downloads" / f".{name}.fetch" / "parts" / f"{target}.part"
        whole = (www / served.lstrip("/")).stat().st_size
        process = subprocess.Popen(
            command(name), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (
            not part.is_file() or part.stat().st_size < whole // 2
        ):
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        held = part.stat().st_size
        server.rate = None
        code, _, _ = run(name, env)
        asked = [r.range for r in server.gets(served)]
    start = int(asked[-1].removeprefix("bytes=").rstrip("-")) if asked[-1] else 0
    same = md5(work / "downloads" / name / target) == md5(www / served.lstrip("/"))
    return (
        f"killed at {held / whole:.0%} ({held:,} of {whole:,} bytes); run again: exit {code},"
        f" asked {asked[-1]}, {held - start:,} bytes asked twice; same md5: {same}"
    )


def corrupt(name: str, target: str, served: str, www: Path, work: Path) -> str:
    with DumpServer(www) as server:
        server.corrupt(count=5, path_ends=served)  # every attempt of the run
        code, _, _ = run(name, environment(server, work))
    there = (work / "downloads" / name / target).exists()
    return f"exit {code}; the file left in the folder: {there}"


def disk(name: str, www: Path, work: Path) -> str:
    free = shutil.disk_usage(work).free
    with DumpServer(www) as server:
        env = environment(server, work, CITEAUDIT_FETCH_RESERVE_BYTES=str(free + 1))  # 0 left
        code, _, _ = run(name, env)
        sent = [r for r in server.log if r.method == "GET" and not r.path.endswith((".md5", "/"))]
        sent = [r for r in sent if "list-type" not in r.path and "manifest" not in r.path]
    return f"exit {code}; dump files asked for before refusing: {len(sent)}"


def rate(name: str, target: str, served: str, www: Path, work: Path) -> str:
    with DumpServer(www) as server:
        code, wall, cpu = run(name, environment(server, work))
    size = (work / "downloads" / name / target).stat().st_size
    total = sum(p.stat().st_size for p in (work / "downloads" / name).rglob("*") if p.is_file())
    return (
        f"exit {code}; {total / 1e6:,.0f} MB in {wall:.1f} s ({total / 1e6 / wall:,.0f} MB/s"
        f" from 127.0.0.1, start-up included), client CPU {cpu:.1f} s ({cpu / total * 1e9:.1f}"
        f" s per GB; its biggest file {size / 1e6:,.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=256, help="dblp.xml.gz's size in MB")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="fetch-bench-", dir=args.workdir))
    size = args.size * 1_000_000
    try:
        www = base / "www"
        biggest = publish(www, size)
        print(f"load {os.getloadavg()[0]:.1f}; dblp {args.size} MB", flush=True)
        for name, (target, served) in biggest.items():
            for case in ("resume", "corrupt", "disk", "rate"):
                work = base / f"{name}-{case}"
                work.mkdir()
                if case == "resume":
                    said = resume(name, target, served, www, work, size)
                elif case == "corrupt":
                    said = corrupt(name, target, served, www, work)
                elif case == "disk":
                    said = disk(name, www, work)
                else:
                    said = rate(name, target, served, www, work)
                print(f"{name:12} {case:8} {said}", flush=True)
                shutil.rmtree(work)
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
