"""One Prefect server in the background, shared by every citeaudit run of this user.

Without `PREFECT_API_URL`, Prefect starts a temporary server inside each process (20-28 s on a
busy machine, and a 60-line traceback when it is slower than its timeout). Instead the first run
starts `prefect server start` once, detached, under a small supervisor; later runs connect to it.
Everything lives in `CITEAUDIT_HOME/prefect-server/`: `server.json` (supervisor pid, port, URL),
the server's own Prefect home (its SQLite database), `server.log`, and one lease file per client
process. The supervisor stops the server once no client has used it for
`CITEAUDIT_SERVER_IDLE_SECONDS` (default 30 min), and on `citeaudit server stop` (SIGTERM).

This module must stay cheap to import: the CLI imports it before anything heavy."""

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tasks.errors import InfrastructureError

DEFAULT_IDLE_S = 1800.0
DEFAULT_STARTUP_TIMEOUT_S = 180.0
POLL_S = 2.0


class ServerStartError(InfrastructureError):
    """The background server could not be started (the message says what to do)."""


def citeaudit_home() -> Path:
    """`CITEAUDIT_HOME`, else the user's data folder for citeaudit."""
    explicit = os.environ.get("CITEAUDIT_HOME")
    if explicit:
        return Path(explicit)
    from platformdirs import user_data_dir

    return Path(user_data_dir("citeaudit", appauthor=False))


def server_dir(home: Path | None = None) -> Path:
    return (home or citeaudit_home()) / "prefect-server"


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, not {raw!r}")
    return value


@dataclass(frozen=True)
class ServerInfo:
    pid: int  # the supervisor's
    port: int
    started_at: float

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"


def read_info(folder: Path) -> ServerInfo | None:
    try:
        data = json.loads((folder / "server.json").read_text(encoding="utf-8"))
        return ServerInfo(int(data["pid"]), int(data["port"]), float(data["started_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def healthy(api_url: str, timeout: float = 5.0) -> bool:
    # urllib, not httpx: a new httpx client builds an SSL context each time (0.1 s), even for
    # plain http to loopback.
    from urllib.error import URLError
    from urllib.request import urlopen

    try:
        with urlopen(f"{api_url}/health", timeout=timeout) as answer:
            return int(answer.status) == 200
    except (URLError, OSError):
        return False


def running_server(folder: Path) -> ServerInfo | None:
    """The server this folder's supervisor runs, if it is alive and answering."""
    info = read_info(folder)
    if info is None or not pid_alive(info.pid) or not healthy(info.api_url):
        return None
    return info


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path`, so two runs starting at once start one server."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- the client side: what a citeaudit run calls


def lease(folder: Path) -> Path:
    """Mark this process as a user of the server: the supervisor keeps the server while any
    leaseholder lives (a lease whose process died is ignored)."""
    clients = folder / "clients"
    clients.mkdir(parents=True, exist_ok=True)
    path = clients / str(os.getpid())
    path.touch()
    return path


def release(path: Path) -> None:
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        (path.parent.parent / "last_used").touch()


def ensure_server(folder: Path | None = None) -> tuple[str, Path]:
    """The URL of the background server (started if none runs) and this process's lease on it.
    Raises ServerStartError with what to do when it cannot start in time."""
    folder = folder or server_dir()
    timeout = _seconds("CITEAUDIT_SERVER_STARTUP_TIMEOUT", DEFAULT_STARTUP_TIMEOUT_S)
    with _locked(folder / "start.lock"):
        info = read_info(folder)
        if info is not None and pid_alive(info.pid):
            # Running, perhaps slow to answer on a busy machine: wait for it, never start a
            # second one beside it.
            pid = info.pid
            info = _wait_healthy(folder, lambda: pid_alive(pid), timeout)
        else:
            info = _start(folder, timeout)
        return info.api_url, lease(folder)


def _wait_healthy(folder: Path, alive: Callable[[], bool], timeout: float) -> ServerInfo:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        info = read_info(folder)
        if info is not None and healthy(info.api_url):
            return info
        time.sleep(0.3)
    raise ServerStartError(
        f"the background Prefect server did not answer within {timeout:.0f} s "
        f"(log: {folder / 'server.log'}); try again, raise CITEAUDIT_SERVER_STARTUP_TIMEOUT, "
        "run `citeaudit server stop`, or set PREFECT_API_URL to a running Prefect server"
    )


def _start(folder: Path, timeout: float) -> ServerInfo:
    (folder / "server.json").unlink(missing_ok=True)
    log = folder / "server.log"
    with log.open("ab") as handle:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "flows.server", str(folder)],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not ours to stop: a Ctrl-C on this run must not reach it
            cwd=Path(__file__).resolve().parents[1],
        )
    try:
        return _wait_healthy(folder, lambda: supervisor.poll() is None, timeout)
    except ServerStartError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(supervisor.pid, signal.SIGTERM)
        raise


def stop(folder: Path | None = None, timeout: float = 30.0) -> ServerInfo | None:
    """Stop the background server (the supervisor stops it and exits); the one stopped."""
    folder = folder or server_dir()
    info = read_info(folder)
    if info is None or not pid_alive(info.pid):
        return None
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return info


def configured_api_url() -> str | None:
    """A Prefect API the user chose: `PREFECT_API_URL`, the active Prefect profile's, or (when
    Prefect is already loaded, as under a test harness) the current settings'. Read without
    importing Prefect when it is not loaded yet (it costs seconds)."""
    if "prefect.context" in sys.modules:
        from prefect.settings import get_current_settings

        return get_current_settings().api.url or None
    return os.environ.get("PREFECT_API_URL") or profile_api_url()


def profile_api_url() -> str | None:
    """The API URL of the active Prefect profile (profiles.toml), if it sets one."""
    import tomllib

    prefect_home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home / "profiles.toml")
    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    url = data.get("profiles", {}).get(active, {}).get("PREFECT_API_URL")
    return str(url) if url else None


@dataclass(frozen=True)
class Api:
    url: str
    lease: Path | None  # this process's lease on the background server, if it uses that


@contextlib.contextmanager
def prefect_api() -> Iterator[Api]:
    """Point this process (and processes it starts) at a Prefect API for the block: the one
    configured, else the background server, leased for the block."""
    url = configured_api_url()
    if url:
        yield Api(url, None)
        return
    url, held = ensure_server()
    os.environ["PREFECT_API_URL"] = url
    try:
        if "prefect.context" in sys.modules:
            from prefect.settings import PREFECT_API_URL, temporary_settings

            with temporary_settings(updates={PREFECT_API_URL: url}):
                yield Api(url, held)
        else:
            yield Api(url, held)
    finally:
        release(held)


# -- the supervisor: `python -m flows.server FOLDER`, started detached by ensure_server


def live_clients(folder: Path) -> int:
    """Leaseholders still running; leases of dead processes are removed."""
    live = 0
    for path in (folder / "clients").glob("*"):
        if path.name.isdigit() and pid_alive(int(path.name)):
            live += 1
        else:
            path.unlink(missing_ok=True)
    return live


def idle_for(folder: Path, now: float) -> float:
    """Seconds since a client last let go of the server (or since it started)."""
    stamps = [folder / "last_used", folder / "server.json"]
    last = max((p.stat().st_mtime for p in stamps if p.exists()), default=now)
    return now - last


def supervise(folder: Path) -> int:
    # Started by a run that blocks stop signals in all its threads (flows/interrupt.py); the
    # mask is inherited, and this process must answer `citeaudit server stop`.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    # Before the server starts: a stop arriving early must still stop it.
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    idle_limit = _seconds("CITEAUDIT_SERVER_IDLE_SECONDS", DEFAULT_IDLE_S)
    port = free_port()
    prefect_home = folder / "prefect-home"
    prefect_home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_UI_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1"]
        + ["--port", str(port), "--no-ui"],
        env=env,
        stdin=subprocess.DEVNULL,
    )
    info = ServerInfo(os.getpid(), port, time.time())
    tmp = folder / "server.json.tmp"
    tmp.write_text(json.dumps(asdict(info)), encoding="utf-8")
    os.replace(tmp, folder / "server.json")
    try:
        while not stopping and server.poll() is None:
            time.sleep(POLL_S)
            if not live_clients(folder) and idle_for(folder, time.time()) > idle_limit:
                break
    finally:
        if read_info(folder) == info:
            (folder / "server.json").unlink(missing_ok=True)
        end_process(server)
    return 0


def end_process(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
