"""A fake Zotero web API (v3) over real HTTP, as its documentation describes it: one user
library of items in the API's JSON (`tests/fixtures/zotero/items.json`), read in pages
(`start`, `limit`, `Total-Results`, `Link: rel="next"`, `Last-Modified-Version`), written in
batches of at most 50 (`POST /users/{id}/items`: each object's `version` checked, a stale one
answered in `failed` with code 412, the others saved with the library's new version).

    with FakeZotero(api_key="k") as zotero:
        zotero.url                      # the base to give as CITEAUDIT_ZOTERO_URL
        zotero.edit("CHEN2020")         # the user changes an item (its version moves on)
        FakeZotero(page_cap=2, edit_after_read={"CHEN2020"})   # pages of 2; an edit mid-audit
        zotero.refuse_next(429, backoff=1)   # the next request answered 429 with Backoff
        zotero.refuse_writes = 500      # every write answered 500 (Zotero failing)
        zotero.requests                 # (method, path) of every request
        zotero.posted                   # the objects of every write, as sent
        FakeZotero(endless="repeat")    # every listing answered with the same full page
        FakeZotero(endless="fresh", total_results=250)   # full pages of new notes, without end

A request with another key is answered 403, as the API answers an invalid key. A hostile
server's pages (`endless`) are answered up to `patience` requests, then 500: a client that
would page forever fails instead of hanging the test.
"""

import copy
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qs, urlsplit

ITEMS = Path(__file__).parent / "fixtures" / "zotero" / "items.json"
WRITE_BATCH = 50
ENDLESS_CAP = 100


class FakeZotero:
    def __init__(
        self,
        api_key: str = "test-key",
        items: Path = ITEMS,
        page_cap: int = 100,
        edit_after_read: set[str] | None = None,
        endless: Literal["repeat", "fresh"] | None = None,
        total_results: int | None = None,
        patience: int = ENDLESS_CAP,
    ) -> None:
        self.api_key = api_key
        self.page_cap = page_cap  # a smaller page than asked, so that paging is exercised
        # the user edits these items once they have been read
        self.edit_after_read = set(edit_after_read or ())
        self.endless = endless
        self.total_results = total_results  # what an endless server claims (None: no header)
        self.patience = patience  # requests an endless server answers before its 500
        self.items: dict[str, dict[str, Any]] = {i["key"]: i for i in json.loads(items.read_text())}
        self.version = max(i["version"] for i in self.items.values())
        self.library_id = next(iter(self.items.values()))["library"]["id"]
        self.requests: list[tuple[str, str]] = []
        self.write_batches: list[int] = []
        self.posted: list[list[dict[str, Any]]] = []  # each write's objects, as sent
        self._refusals: list[tuple[int, dict[str, str]]] = []
        self.refuse_writes: int | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def edit(self, key: str, **fields: Any) -> None:
        """The user edits an item in Zotero: its data changes and its version moves on."""
        with self._lock:
            self.version += 1
            item = self.items[key]
            item["data"].update(fields)
            item["version"] = item["data"]["version"] = self.version

    def refuse_next(self, status: int, **headers: str) -> None:
        self._refusals.append(
            (status, {k.replace("_", "-").title(): v for k, v in headers.items()})
        )

    def tags(self, key: str) -> list[str]:
        return [t["tag"] for t in self.items[key]["data"].get("tags", [])]

    def notes(self, parent: str) -> list[dict[str, Any]]:
        return [
            i["data"]
            for i in self.items.values()
            if i["data"]["itemType"] == "note" and i["data"].get("parentItem") == parent
        ]

    # --- the API ---------------------------------------------------------------------------

    def _listing(self, query: dict[str, list[str]], path: str) -> tuple[list[Any], int]:
        chosen: Iterator[dict[str, Any]] = iter(self.items.values())
        parts = path.strip("/").split("/")
        if "collections" in parts:
            collection = parts[parts.index("collections") + 1]
            chosen = (i for i in chosen if collection in i["data"].get("collections", []))
        if "itemType" in query:
            chosen = (i for i in chosen if i["data"]["itemType"] == query["itemType"][0])
        if "tag" in query:
            tag = query["tag"][0]
            chosen = (i for i in chosen if tag in [t["tag"] for t in i["data"].get("tags", [])])
        found = sorted(chosen, key=lambda i: i["key"])
        start = int(query.get("start", ["0"])[0])
        limit = min(int(query.get("limit", ["25"])[0]), self.page_cap)
        return found[start : start + limit], len(found)

    def _endless(self, query: dict[str, list[str]]) -> list[Any]:
        """A full page of notes: the same each time (`repeat`), or new ones (`fresh`)."""
        start = 0 if self.endless == "repeat" else int(query.get("start", ["0"])[0])
        limit = min(int(query.get("limit", ["25"])[0]), self.page_cap)
        return [
            {
                "key": f"E{number:07d}",
                "version": 1,
                "data": {"key": f"E{number:07d}", "itemType": "note", "note": "x" * 1000},
            }
            for number in range(start, start + limit)
        ]

    def _write(self, objects: list[dict[str, Any]]) -> dict[str, Any]:
        outcome: dict[str, Any] = {"successful": {}, "success": {}, "unchanged": {}, "failed": {}}
        with self._lock:
            self.version += 1
            for index, data in enumerate(objects):
                key = data.get("key") or f"N{self.version:03d}{index:03d}"[:8]
                current = self.items.get(key)
                if current is not None and data.get("version") != current["version"]:
                    outcome["failed"][str(index)] = {
                        "key": key,
                        "code": 412,
                        "message": f"Item has been modified since specified version "
                        f"(expected {data.get('version')}, found {current['version']})",
                    }
                    continue
                merged = copy.deepcopy(current["data"]) if current else {}
                merged.update(data, key=key, version=self.version)
                item = {"key": key, "version": self.version, "data": merged}
                item["library"] = {"type": "user", "id": self.library_id}
                self.items[key] = item
                outcome["successful"][str(index)] = item
                outcome["success"][str(index)] = key
        return outcome

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any, **headers: str) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.end_headers()
                self.wfile.write(data)

            def _refused(self) -> bool:
                fake.requests.append((self.command, self.path))
                key = self.headers.get("Zotero-API-Key") or self.headers.get(
                    "Authorization", ""
                ).removeprefix("Bearer ")
                if key != fake.api_key:
                    self._answer(403, "Invalid key")
                    return True
                if fake._refusals:
                    status, headers = fake._refusals.pop(0)
                    self._answer(status, "Too many requests", **headers)
                    return True
                return False

            def do_GET(self) -> None:
                if self._refused():
                    return
                split = urlsplit(self.path)
                if fake.endless:
                    if len(fake.requests) > fake.patience:
                        self._answer(500, "the fake's patience ran out")
                        return
                    extra = {"Total-Results": str(fake.total_results)}
                    self._answer(
                        200,
                        fake._endless(parse_qs(split.query)),
                        **(extra if fake.total_results is not None else {}),
                    )
                    return
                page, total = fake._listing(parse_qs(split.query), split.path)
                query = parse_qs(split.query)
                start = int(query.get("start", ["0"])[0])
                headers = {"Total-Results": str(total), "Last-Modified-Version": str(fake.version)}
                if start + len(page) < total:
                    query["start"] = [str(start + len(page))]
                    following = "&".join(f"{k}={v[0]}" for k, v in query.items())
                    headers["Link"] = f'<{fake.url}{split.path}?{following}>; rel="next"'
                self._answer(200, page, **headers)
                for key in sorted(fake.edit_after_read & {i["key"] for i in page}):
                    fake.edit(key, extra="edited by the user meanwhile")
                    fake.edit_after_read.discard(key)

            def do_POST(self) -> None:
                if self._refused():
                    return
                objects = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if fake.refuse_writes is not None:
                    self._answer(fake.refuse_writes, "Zotero failed to write")
                    return
                if len(objects) > WRITE_BATCH:
                    self._answer(413, f"Only {WRITE_BATCH} objects can be written at a time")
                    return
                fake.write_batches.append(len(objects))
                fake.posted.append(objects)
                self._answer(200, fake._write(objects), Last_Modified_Version=str(fake.version))

        return Handler
