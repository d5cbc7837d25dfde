"""The publishers of the registries' dumps, as `citeaudit snapshot fetch` meets them: a real HTTP
server on 127.0.0.1 serving a folder the way their hosts serve files.

    with DumpServer(tmp_path / "www") as server:     # the folder's files, under server.url
        dblp_release(server.root / "xml", xml_gz, dtd)
        settings = FetchSettings(dblp_dump_url=f"{server.url}/xml", ...)

- any file: GET and HEAD, `Content-Length`, a strong `ETag` (the file's md5, as S3 gives for
  an object uploaded whole), `Last-Modified`, `Accept-Ranges: bytes`; `Range: bytes=N-` (and
  `N-M`) answered 206 with `Content-Range`, or 416 past the end; `If-Range` with another ETag
  gets the whole file (200), as RFC 9110 says; `If-None-Match` with its ETag: 304;
- a folder (a path ending in `/`): its files as an HTML index of links, as NCBI's FTP site over
  HTTPS and Apache list them (`pubmed/baseline/`);
- `/?list-type=2&prefix=P[&continuation-token=T]` at the root: S3's ListObjectsV2 XML
  (`Contents` with `Key`, `Size`, `ETag`, `LastModified`; `IsTruncated`,
  `NextContinuationToken`), `page_keys` keys a page: the OpenAlex bucket.

Faults, each for the next `count` answers of a file whose path contains `path_ends`:
`cut(fraction)` closes the connection after that share of the body (a fetch cut midway);
`corrupt()` flips one byte of the body (the checksums still announce the good file);
`unavailable()` answers 503 with `Retry-After: 1`. `rate` (bytes/s) slows every body, so a
test can kill a client midway. `log` holds each request (method, path, Range, status,
User-Agent).
"""

import gzip
import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from tests.fake_registry.serving import Serving

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    status: int
    user_agent: str


@dataclass
class _Fault:
    kind: str  # cut | corrupt | unavailable
    count: int
    path_ends: str
    fraction: float = 0.5


class DumpServer(Serving):
    """A folder served over HTTP as the dumps' publishers serve theirs."""

    def __init__(self, root: Path, *, page_keys: int = 1000, rate: float | None = None) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.page_keys = page_keys
        self.rate = rate
        self._faults: list[_Fault] = []
        self._log: list[Request] = []
        self._lock = threading.Lock()

    def _new_server(self) -> ThreadingHTTPServer:
        return _Server(("127.0.0.1", 0), _Handler, self)

    @property
    def url(self) -> str:
        return self.base_url

    # -- faults and log ----------------------------------------------------------------------

    def cut(self, fraction: float = 0.5, *, count: int = 1, path_ends: str = "") -> None:
        self._faults.append(_Fault("cut", count, path_ends, fraction))

    def corrupt(self, *, count: int = 1, path_ends: str = "") -> None:
        self._faults.append(_Fault("corrupt", count, path_ends))

    def unavailable(self, *, count: int = 1, path_ends: str = "") -> None:
        self._faults.append(_Fault("unavailable", count, path_ends))

    @property
    def log(self) -> list[Request]:
        with self._lock:
            return list(self._log)

    def gets(self, path_ends: str = "") -> list[Request]:
        """The GETs of a file (listings and HEADs aside)."""
        return [r for r in self.log if r.method == "GET" and r.path.endswith(path_ends)]

    def _fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.count > 0 and path.endswith(fault.path_ends):
                    fault.count -= 1
                    return fault
        return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, dumps: DumpServer) -> None:
        self.dumps = dumps
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: the server keeps its own log."""

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        dumps = self.server.dumps
        split = urlsplit(self.path)
        path = unquote(split.path)
        params = {k: v[-1] for k, v in parse_qs(split.query).items()}
        try:
            self._reply(dumps, path, params, head)
        except (BrokenPipeError, ConnectionResetError):  # the client is gone (killed)
            self.close_connection = True

    def send_response(self, code: int, message: str | None = None) -> None:
        """Logged before it is sent, so a client that has its answer finds it counted."""
        self.server.dumps._record(
            Request(
                self.command,
                self.path,
                self.headers.get("Range"),
                code,
                self.headers.get("User-Agent", ""),
            )
        )
        super().send_response(code, message)

    def _reply(self, dumps: DumpServer, path: str, params: dict[str, str], head: bool) -> int:
        if path == "/" and params.get("list-type") == "2":
            return self._send(200, _list_objects(dumps, params), "application/xml", head)
        target = (dumps.root / path.lstrip("/")).resolve()
        if not target.is_relative_to(dumps.root.resolve()) or not target.exists():
            return self._send(404, b"Not Found", "text/plain", head)
        if target.is_dir():
            return self._send(200, _index(target, path), "text/html", head)
        fault = dumps._fault(path) if not head else None
        if fault is not None and fault.kind == "unavailable":
            self.send_response(503)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return 503
        body = target.read_bytes()
        etag = f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"'
        if fault is not None and fault.kind == "corrupt":
            body = (
                body[: len(body) // 2]
                + bytes([body[len(body) // 2] ^ 0xFF])
                + body[len(body) // 2 + 1 :]
            )
        start, end, status = 0, len(body), 200
        wanted = self.headers.get("Range")
        if not wanted and self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return 304
        if_range = self.headers.get("If-Range")
        if wanted and (if_range is None or if_range == etag):
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start = int(first)
            end = min(int(last) + 1, len(body)) if last else len(body)
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return 416
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", formatdate(target.stat().st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
        self.end_headers()
        if head:
            return status
        stop = end
        if fault is not None and fault.kind == "cut":
            stop = start + int((end - start) * fault.fraction)
        self._write(body[start:stop], dumps.rate)
        if stop < end:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        return status

    def _write(self, body: bytes, rate: float | None) -> None:
        step = 8192 if rate else len(body) or 1
        for at in range(0, len(body), step):
            self.wfile.write(body[at : at + step])
            if rate:
                self.wfile.flush()
                time.sleep(step / rate)

    def _send(self, status: int, body: bytes, content_type: str, head: bool) -> int:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)
        return status


def _index(folder: Path, path: str) -> bytes:
    """An Apache-style index of a folder, as NCBI's FTP site lists it over HTTPS."""
    rows = "".join(
        f'<a href="{escape(p.name)}">{escape(p.name)}</a>  {p.stat().st_size}\n'
        for p in sorted(folder.iterdir())
        if p.is_file()
    )
    return (
        f"<html><head><title>Index of {escape(path)}</title></head><body>"
        f"<h1>Index of {escape(path)}</h1><pre>{rows}</pre></body></html>"
    ).encode()


def _list_objects(dumps: DumpServer, params: dict[str, str]) -> bytes:
    """S3's ListObjectsV2 over every file under the root, by key."""
    prefix = params.get("prefix", "")
    keys = sorted(
        str(p.relative_to(dumps.root))
        for p in dumps.root.rglob("*")
        if p.is_file() and str(p.relative_to(dumps.root)).startswith(prefix)
    )
    start = int(params.get("continuation-token", "0"))
    page = keys[start : start + dumps.page_keys]
    following = start + dumps.page_keys
    contents = ""
    for key in page:
        body = (dumps.root / key).read_bytes()
        stamp = datetime.fromtimestamp((dumps.root / key).stat().st_mtime, UTC)
        contents += (
            f"<Contents><Key>{escape(key)}</Key>"
            f"<LastModified>{stamp.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</LastModified>"
            f"<ETag>&quot;{hashlib.md5(body, usedforsecurity=False).hexdigest()}&quot;</ETag>"
            f"<Size>{len(body)}</Size><StorageClass>STANDARD</StorageClass></Contents>"
        )
    truncated = following < len(keys)
    more = f"<NextContinuationToken>{following}</NextContinuationToken>" if truncated else ""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3_NS}">'
        f"<Name>openalex</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount>"
        f"<MaxKeys>{dumps.page_keys}</MaxKeys><IsTruncated>{str(truncated).lower()}</IsTruncated>"
        f"{contents}{more}</ListBucketResult>"
    ).encode()


# -- the publishers' layouts ------------------------------------------------------------------


def md5_line(data: bytes, name: str) -> str:
    """An .md5 file as md5sum writes it (dblp)."""
    return f"{hashlib.md5(data, usedforsecurity=False).hexdigest()}  {name}\n"


def dblp_release(folder: Path, xml_gz: bytes, dtd: bytes) -> None:
    """dblp.org/xml/: dblp.xml.gz, its .md5, dblp.dtd."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dblp.xml.gz").write_bytes(xml_gz)
    (folder / "dblp.xml.gz.md5").write_text(md5_line(xml_gz, "dblp.xml.gz"))
    (folder / "dblp.dtd").write_bytes(dtd)


def pubmed_file(folder: Path, name: str, data: bytes) -> None:
    """One of NCBI's files with its .md5 as NCBI writes it (`MD5(name)= hex`)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
    (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")


def openalex_partition(root: Path, day: str, parts: list[list[dict[str, Any]]]) -> None:
    """data/works/updated_date=DAY/part_NNN.gz (JSON lines) and the manifest listing every
    part in the bucket, as OpenAlex publishes it (s3:// URLs, content_length, record_count)."""
    works = root / "data" / "works"
    folder = works / f"updated_date={day}"
    folder.mkdir(parents=True, exist_ok=True)
    for number, records in enumerate(parts):
        lines = "".join(json.dumps(r) + "\n" for r in records).encode()
        (folder / f"part_{number:03d}.gz").write_bytes(gzip.compress(lines, mtime=0))
    entries: list[dict[str, Any]] = []
    for part in sorted(works.glob("updated_date=*/part_*.gz")):
        count = len(gzip.decompress(part.read_bytes()).splitlines())
        key = part.relative_to(root)
        entries.append(
            {
                "url": f"s3://openalex/{key}",
                "meta": {"content_length": part.stat().st_size, "record_count": count},
            }
        )
    meta = {
        "content_length": sum(e["meta"]["content_length"] for e in entries),
        "record_count": sum(e["meta"]["record_count"] for e in entries),
    }
    (works / "manifest").write_text(json.dumps({"entries": entries, "meta": meta}, indent=1))
