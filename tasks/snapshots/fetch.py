"""Downloading a registry's public dump: the files `citeaudit snapshot fetch` and `update` get.

A dump is a few files (dblp.xml.gz and its DTD) or thousands (OpenAlex's parts, PubMed's
baseline), each a `Remote`: its URL, where it goes, and what its publisher announces (size,
md5, a validator). A `Fetcher` gets them, one at a time, politely:

- one connection, a pause between requests, a User-Agent naming citeaudit and the mailto (a
  secret: redacted from every message this module makes);
- resumable: a file is written to `.NAME.fetch/parts/FILE.part`; a fetch killed midway asks
  for the rest (`Range: bytes=N-`, `If-Range` with the validator the first answer gave, so a
  file changed meanwhile comes whole again), and so does a connection cut mid-body;
- checked: the size announced, and the md5 the publisher gives (dblp's and PubMed's `.md5`
  files, an S3 ETag of a single-part object); a file that does not match is deleted and the
  fetch fails naming it, nothing half-right left where a build would read it;
- within the disk: before the first byte, what is announced and not yet here must fit in the
  free space of the folder, less a reserve (`CITEAUDIT_FETCH_RESERVE_BYTES`);
- written whole: a finished file is renamed into the dump's folder, and `fetched.json` in the
  state folder records what it was (url, size, md5, validator), so a fetch run again skips a
  file the publisher has not changed.

```
$CITEAUDIT_DOWNLOADS/                 (default: $CITEAUDIT_SNAPSHOTS/downloads)
  dblp/dblp.xml.gz, dblp/dblp.dtd     what `snapshot build dblp` reads
  .dblp.fetch/fetched.json            what each file was when fetched
  .dblp.fetch/parts/dblp.xml.gz.part  a download in progress, and its .part.json
```
"""

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from tasks.errors import InfrastructureError, UsageError
from tasks.plural import counted
from tasks.registries.http import RETRYABLE_STATUSES, RetryPolicy
from tasks.registries.transports import redact

CHUNK = 1 << 20
SMALL = 64 << 20  # the most a listing, a manifest or an .md5 file may be

# (file, bytes done, bytes in all or None when unknown): the CLI's progress bar listens.
Progress = Callable[[str, int, int | None], None]


class FetchError(InfrastructureError):
    """The publisher could not give a file whole (after retries): exit 3, the part kept."""


class ChecksumMismatch(InfrastructureError):
    """A file that is not what its publisher announced: deleted, the fetch failed."""


class NotEnoughSpace(UsageError):
    """The files announced do not fit on the disk: refused before the first byte."""


@dataclass(frozen=True)
class Remote:
    """One file of a dump: where it is, where it goes (relative to the dump's folder), and what
    the publisher announces of it (None: not announced)."""

    url: str
    name: str
    size: int | None = None
    md5: str | None = None
    version: str | None = None  # ETag or Last-Modified: a file changed shows a new one


@dataclass(frozen=True)
class Fetched:
    url: str
    size: int
    md5: str
    version: str | None


def _noop(_name: str, _done: int, _total: int | None) -> None:
    return None


class Fetcher:
    """One polite HTTP connection to a publisher; close when done (a context manager)."""

    def __init__(
        self,
        user_agent: str,
        *,
        secrets: Iterable[str] = (),
        pace_s: float = 1.0,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | None = None,
        transport: httpx.BaseTransport | None = None,
        auth: httpx.Auth | None = None,
        progress: Progress | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._secrets = tuple(s for s in secrets if s)
        self._pace_s = pace_s
        self._retry = retry or RetryPolicy()
        self._progress = progress or _noop
        self._sleep = sleep
        self._last = float("-inf")
        self.requests = 0  # sent to the wire, every attempt
        self._client = httpx.Client(
            headers={"User-Agent": user_agent},
            timeout=timeout or httpx.Timeout(60.0, connect=15.0),
            follow_redirects=True,  # httpx drops Authorization on a redirect to another host
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            transport=transport,
            auth=auth,  # httpx leaves it out of a redirect to another host
        )

    def __enter__(self) -> "Fetcher":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    # -- small answers ----------------------------------------------------------------------

    def text(self, url: str, params: Mapping[str, str] | None = None) -> str:
        """A small file's text (an .md5 file, a listing, a manifest), read whole."""
        return self.body(url, params).decode("utf-8", errors="replace")

    def body(self, url: str, params: Mapping[str, str] | None = None) -> bytes:
        def read(response: httpx.Response) -> bytes:
            data = bytearray()
            for chunk in response.iter_bytes(CHUNK):
                data += chunk
                if len(data) > SMALL:
                    raise FetchError(self.redact(f"{url}: more than {SMALL} bytes"))
            return bytes(data)

        return self._asking("GET", url, read, params=params)

    def remote(self, url: str, name: str, md5: str | None = None) -> Remote:
        """The file at `url` as its HEAD announces it (size, validator)."""

        def announced(response: httpx.Response) -> Remote:
            length = response.headers.get("content-length")
            return Remote(
                url,
                name,
                int(length) if length and length.isdigit() else None,
                md5,
                _validator(response),
            )

        return self._asking("HEAD", url, announced)

    # -- files ------------------------------------------------------------------------------

    def fetch(self, remotes: list[Remote], folder: Path, reserve: int = 0) -> list[Remote]:
        """Get each of `remotes` into `folder` that is not there as announced; the ones fetched.
        Refused before the first byte when they do not fit (NotEnoughSpace)."""
        state = state_folder(folder)
        done = _read_fetched(state)
        todo = [r for r in remotes if not _unchanged(r, done.get(r.name), folder)]
        check_space(folder, todo, state, reserve)
        fetched = []
        for remote in todo:
            before = done.get(remote.name) if (folder / remote.name).is_file() else None
            got = self.download(remote, folder, state, before)
            if got is not before:
                done[remote.name] = got
                fetched.append(remote)
                write_json(state / "fetched.json", {k: asdict(v) for k, v in done.items()})
        return fetched

    def download(
        self, remote: Remote, folder: Path, state: Path, before: Fetched | None = None
    ) -> Fetched:
        """One file, resumed from its part if a fetch was killed; checked, then renamed in.
        `before`: the file fetched earlier, asked for only if it changed since (a publisher
        that announces nothing ahead answers 304): then returned as it is."""
        part = state / "parts" / f"{remote.name}.part"
        meta = part.with_name(part.name + ".json")
        part.parent.mkdir(parents=True, exist_ok=True)
        kept = _read_json(meta) if part.is_file() else None
        if kept is None or kept.get("url") != remote.url:
            part.write_bytes(b"")
            unless = before.version if before else None
            kept = {"url": remote.url, "version": remote.version, "unless": unless}
            write_json(meta, kept)
        attempt = 0
        while True:
            attempt += 1
            try:
                complete = self._continue(remote, part, meta, kept)
            except (httpx.TransportError, _Retryable) as exc:
                if attempt >= self._retry.max_attempts:
                    raise FetchError(
                        self.redact(f"{remote.name}: {exc} (after {attempt} attempts)")
                    ) from None
                answer = exc.response if isinstance(exc, _Retryable) else None
                self._sleep(self._retry.wait_before_retry(attempt, answer))
                continue
            if complete is None and before is not None:  # not modified since
                part.unlink()
                meta.unlink(missing_ok=True)
                return before
            if complete:
                break
        return self._finish(remote, part, meta, folder)

    def _continue(
        self, remote: Remote, part: Path, meta: Path, kept: dict[str, Any]
    ) -> bool | None:
        """Ask for what the part lacks and append it; whether the part is now whole (None: not
        modified since the file held)."""
        offset = part.stat().st_size
        if remote.size is not None and offset == remote.size:
            return True
        headers = {"Accept-Encoding": "identity"}  # offsets count the file's own bytes
        if offset:
            headers["Range"] = f"bytes={offset}-"
            if kept.get("version"):
                headers["If-Range"] = str(kept["version"])
        elif unless := kept.get("unless"):
            etag = unless.startswith(('"', "W/"))
            headers["If-None-Match" if etag else "If-Modified-Since"] = str(unless)
        self._pace()
        with self._client.stream("GET", remote.url, headers=headers) as response:
            status = response.status_code
            if status == 304 and not offset:
                return None
            if status == 416 and offset and remote.size is None:
                return True  # nothing after what we hold: the part is the file
            if status in RETRYABLE_STATUSES:
                raise _Retryable(f"HTTP {status}", response)
            if status == 416 or status >= 400:
                raise FetchError(self.redact(f"{remote.url}: HTTP {status}"))
            if status == 206 and _range_start(response) != offset:
                raise FetchError(self.redact(f"{remote.url}: answered another range"))
            mode = "ab" if status == 206 else "wb"  # a 200: the whole file (changed, or no Range)
            kept.update(version=_validator(response) or kept.get("version"))
            write_json(meta, kept)
            total = _total(response, offset if status == 206 else 0) or remote.size
            done = offset if status == 206 else 0
            with part.open(mode) as out:
                for chunk in response.iter_raw():  # as received: a cut keeps what came
                    out.write(chunk)
                    done += len(chunk)
                    self._progress(remote.name, done, total)
                out.flush()
                os.fsync(out.fileno())
            if total is not None and done < total:
                raise _Retryable(f"connection closed at {done} of {total} bytes", None)
        return True

    def _finish(self, remote: Remote, part: Path, meta: Path, folder: Path) -> Fetched:
        size = part.stat().st_size
        digest = md5_of(part)
        wrong = None
        if remote.size is not None and size != remote.size:
            wrong = f"{size} bytes, {remote.size} announced"
        elif remote.md5 is not None and digest != remote.md5.lower():
            wrong = f"md5 {digest}, {remote.md5.lower()} published"
        if wrong:
            part.unlink()
            meta.unlink(missing_ok=True)
            raise ChecksumMismatch(
                self.redact(f"{remote.name} from {remote.url}: {wrong}; deleted, fetch it again")
            )
        target = folder / remote.name
        target.parent.mkdir(parents=True, exist_ok=True)
        part.replace(target)
        kept = _read_json(meta) or {}
        meta.unlink(missing_ok=True)
        return Fetched(remote.url, size, digest, kept.get("version") or remote.version)

    # -- the one connection -----------------------------------------------------------------

    def _pace(self) -> None:
        wait = self._last + self._pace_s - time.monotonic()
        if wait > 0:
            self._sleep(wait)
        self._last = time.monotonic()
        self.requests += 1

    def _asking(
        self,
        method: str,
        url: str,
        read: Callable[[httpx.Response], Any],
        params: Mapping[str, str] | None = None,
    ) -> Any:
        for attempt in range(1, self._retry.max_attempts + 1):
            self._pace()
            answer: httpx.Response | None = None
            try:
                with self._client.stream(method, url, params=params) as response:
                    if response.status_code < 400:
                        return read(response)
                    if response.status_code not in RETRYABLE_STATUSES:
                        raise FetchError(
                            self.redact(f"{method} {response.url}: HTTP {response.status_code}")
                        )
                    reason = f"HTTP {response.status_code}"
                    answer = response
            except httpx.TransportError as exc:
                reason = type(exc).__name__
            if attempt == self._retry.max_attempts:
                failed = f"{method} {url}: {reason} (after {attempt} attempts)"
                raise FetchError(self.redact(failed))
            self._sleep(self._retry.wait_before_retry(attempt, answer))
        raise AssertionError("unreachable")


class _Retryable(Exception):
    def __init__(self, reason: str, response: httpx.Response | None) -> None:
        super().__init__(reason)
        self.response = response


def check_space(folder: Path, todo: list[Remote], state: Path, reserve: int) -> None:
    """Refuse (NotEnoughSpace) when what `todo` announces, less the parts already here, does not
    fit in `folder`'s free space less `reserve` bytes."""
    needed = 0
    for remote in todo:
        if remote.size is not None:
            part = state / "parts" / f"{remote.name}.part"
            needed += max(remote.size - (part.stat().st_size if part.is_file() else 0), 0)
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free - reserve
    if needed > free:
        raise NotEnoughSpace(
            f"{folder}: {counted(len(todo), 'file')} of {_gb(needed)} to fetch,"
            f" {_gb(max(free, 0))} free"
            f" (keeping {_gb(reserve)} free): nothing was fetched"
        )


def md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def parse_md5(text: str) -> str:
    """The hex digest of an .md5 file: `HEX  name` (md5sum) or `MD5(name)= HEX` (openssl)."""
    for word in text.replace("=", " ").split():
        if len(word) == 32 and all(c in "0123456789abcdefABCDEF" for c in word):
            return word.lower()
    raise FetchError(f"not an md5 file: {text[:80]!r}")


def state_folder(folder: Path) -> Path:
    state = folder.parent / f".{folder.name}.fetch"
    state.mkdir(parents=True, exist_ok=True)
    return state


def _read_fetched(state: Path) -> dict[str, Fetched]:
    raw = _read_json(state / "fetched.json") or {}
    return {name: Fetched(**value) for name, value in raw.items()}


def _unchanged(remote: Remote, done: Fetched | None, folder: Path) -> bool:
    """Whether the file fetched before is still the one announced (nothing to fetch)."""
    target = folder / remote.name
    if done is None or not target.is_file() or target.stat().st_size != done.size:
        return False
    if remote.md5 is not None:
        return remote.md5.lower() == done.md5
    if remote.version is not None and done.version is not None:
        return remote.version == done.version
    return remote.size is not None and remote.size == done.size


def _validator(response: httpx.Response) -> str | None:
    etag = response.headers.get("etag")
    if etag and not etag.startswith("W/"):  # a weak ETag cannot guard a Range
        return etag
    return response.headers.get("last-modified")


def _range_start(response: httpx.Response) -> int | None:
    value = response.headers.get("content-range", "")  # bytes START-END/TOTAL
    start = value.removeprefix("bytes ").partition("-")[0]
    return int(start) if start.isdigit() else None


def _total(response: httpx.Response, offset: int) -> int | None:
    length = response.headers.get("content-length")
    if response.headers.get("content-encoding") or not (length and length.isdigit()):
        return None
    return offset + int(length)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, value: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    tmp.replace(path)


def _gb(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"
