"""`citeaudit snapshot fetch` and `update` as a user runs them (real processes, real HTTP to the
publishers' stand-in): a fetch killed (SIGKILL) midway resumes to the same bytes, the mailto
never reaches an output, a full disk and Crossref are one line and exit 2."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fake_registry.dumps import DumpServer, dblp_release

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
CITEAUDIT = str(Path(sys.executable).parent / "citeaudit")
MAILTO = "cli-fetch@example.org"


def _env(server: DumpServer, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CITEAUDIT_SNAPSHOTS": str(tmp_path / "snapshots"),
        "CITEAUDIT_DOWNLOADS": str(tmp_path / "downloads"),
        "CITEAUDIT_DBLP_DUMP_URL": f"{server.url}/xml",
        "CITEAUDIT_MAILTO": MAILTO,
        "CITEAUDIT_FETCH_PACE_S": "0",
        "CITEAUDIT_FETCH_RESERVE_BYTES": "0",
        **extra,
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CITEAUDIT, "snapshot", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_fetch_killed_midway_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    payload = random.Random(7).randbytes(600_000)  # fetch checks bytes, not their format
    with DumpServer(tmp_path / "www", rate=300_000) as server:
        dblp_release(server.root / "xml", payload, (FIXTURES / "dblp.dtd").read_bytes())
        env = _env(server, tmp_path)
        part = tmp_path / "downloads" / ".dblp.fetch" / "parts" / "dblp.xml.gz.part"
        running = subprocess.Popen(
            [CITEAUDIT, "snapshot", "fetch", "dblp"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not part.is_file() or part.stat().st_size < len(payload) // 2
        ):
            time.sleep(0.02)
        running.send_signal(signal.SIGKILL)
        running.wait(timeout=30)
        held = part.stat().st_size
        assert 0 < held < len(payload)
        server.rate = None
        done = _run(env, "fetch", "dblp")
        ranges = [r.range for r in server.gets("dblp.xml.gz")]

    assert done.returncode == 0, done.stderr
    assert ranges == [None, f"bytes={held}-"]
    assert (tmp_path / "downloads" / "dblp" / "dblp.xml.gz").read_bytes() == payload
    assert "snapshot build dblp" in done.stdout
    assert MAILTO not in done.stdout + done.stderr
    assert all(MAILTO in r.user_agent for r in server.log)


def test_a_full_disk_and_crossref_are_one_line_and_exit_2(tmp_path: Path) -> None:
    with DumpServer(tmp_path / "www") as server:
        dblp_release(server.root / "xml", b"x" * 1000, b"<!ELEMENT dblp ANY>")
        full = _run(
            _env(server, tmp_path, CITEAUDIT_FETCH_RESERVE_BYTES=str(10**18)), "fetch", "dblp"
        )
        crossref = _run(_env(server, tmp_path), "fetch", "crossref")
        fetched = server.gets("dblp.xml.gz")
    assert full.returncode == 2 and "nothing was fetched" in full.stderr
    assert len(full.stderr.strip().splitlines()) == 1 and not fetched
    assert crossref.returncode == 2 and "torrent" in crossref.stderr
    assert len(crossref.stderr.strip().splitlines()) == 1


def test_update_builds_then_finds_nothing_new(tmp_path: Path) -> None:
    with DumpServer(tmp_path / "www") as server:
        dblp_release(
            server.root / "xml",
            (FIXTURES / "dblp.xml.gz").read_bytes(),
            (FIXTURES / "dblp.dtd").read_bytes(),
        )
        env = _env(server, tmp_path)
        first = _run(env, "update", "dblp")
        second = _run(env, "update")  # every snapshot built: dblp
    assert first.returncode == 0, first.stderr
    assert "dblp@" in first.stdout and "rebuilt" in first.stdout
    assert second.returncode == 0 and "unchanged" in second.stdout
