"""A real PostgreSQL server for a test: initdb into a temporary folder, started on a free port
of 127.0.0.1, stopped and removed afterwards. The binaries are found on PATH or where Debian's
`postgresql` package puts them (/usr/lib/postgresql/*/bin); PostgreSQL refuses to run as root,
so as root the server runs as `nobody`."""

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    return versions[0].parent if versions else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Postgres:
    folder: Path  # the binaries
    port: int

    def new_database(self, name: str) -> str:
        """A new, empty database; its `postgresql://` URL."""
        createdb = [str(self.folder / "createdb"), "-h", "127.0.0.1", "-p", str(self.port)]
        subprocess.run([*createdb, "-U", "citeaudit", name], check=True, capture_output=True)
        return f"postgresql://citeaudit@127.0.0.1:{self.port}/{name}"


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A running server (user `citeaudit`, no password, on 127.0.0.1 only)."""
    folder = binaries()
    if folder is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed (.ci/run installs Debian's postgresql)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    home = Path(tempfile.mkdtemp(prefix="citeaudit-pg-"))  # not under pytest's 0700 folders
    as_user = "nobody" if os.geteuid() == 0 else None
    if as_user:
        shutil.chown(home, as_user)
    port = free_port()

    def run(*args: str) -> None:
        subprocess.run(args, check=True, capture_output=True, user=as_user, cwd=home)

    data = home / "data"
    try:
        run(str(folder / "initdb"), "-D", str(data), "-A", "trust", "-U", "citeaudit", "--no-sync")
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {home} -c fsync=off"
        log = str(home / "log")
        run(str(folder / "pg_ctl"), "-D", str(data), "-o", options, "-l", log, "-w", "start")
        yield Postgres(folder, port)
    finally:
        if (data / "postmaster.pid").exists():
            run(str(folder / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)
