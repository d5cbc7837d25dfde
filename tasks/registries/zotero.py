"""Zotero's web API and Zotero 7's local API (`http://localhost:23119/api/`, read-only, the same
format): a library's items read in pages, citeaudit's findings written back.

Reads go through pyzotero, which holds the API's session (endpoint, key, web or local). Writes
are POSTs of at most 50 objects, each carrying the version it was read at: the API answers each
object on its own, and an item the user changed since (code 412) is left alone and reported,
never overwritten. A 429 or 503 waits for its Retry-After or Backoff and asks again, up to
`max_attempts`; a Backoff on a good answer holds the next request for that long. Either wait is
capped as the registries' Retry-After is (`retry_after_cap_s`), and a wait over LONG_WAIT_S is
said (`notice`) before it starts, so that a run never sits silent for long.

The API key is a secret like the registries' keys: it goes in the request's header only.
"""

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr

from tasks.errors import CiteauditError, InfrastructureError, MissingExtra, UsageError
from tasks.registries.limits import HostLimits, int_header, parse_retry_after

try:
    from pyzotero import zotero, zotero_errors
except ModuleNotFoundError as exc:
    raise MissingExtra("zotero", "citeaudit zotero") from exc

WEB_URL = "https://api.zotero.org"
LOCAL_URL = "http://localhost:23119/api"
PAGE = 100  # the API's largest page
WRITE_BATCH = 50  # the API's most objects in one write
# The most pages one listing reads: twice the largest audit (flows/audit.MAX_AUDIT_REFERENCES)
# in full pages, so that a server paging without end is refused before memory runs out.
MAX_PAGES = 2_000
LONG_WAIT_S = 60.0  # a wait longer than this is said on stderr
T = TypeVar("T")


class ZoteroError(CiteauditError):
    """Zotero refused or failed; the message names the library, never the key."""


class ZoteroRefused(ZoteroError, UsageError):
    """What the user gave is refused: the key, the library, collection or search (exit 2)."""


class ZoteroUnavailable(ZoteroError, InfrastructureError):
    """Zotero could not be reached, kept refusing, answered without end or failed (exit 3)."""


@dataclass
class WriteOutcome:
    written: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # changed in Zotero since we read them
    failed: dict[str, str] = field(default_factory=dict)


class _Zotero(zotero.Zotero):
    """pyzotero's client, its own Backoff handling off: it waits uncapped, in a timer thread
    that keeps the process alive that long; ZoteroLibrary._asked waits instead, capped."""

    def _set_backoff(self, duration: Any) -> None:
        pass

    def _check_backoff(self) -> None:
        pass

    @zotero.retrieve
    def search_items(self, search: str) -> str:
        """A saved search's items: Zotero 7's local API runs saved searches (the web API does
        not)."""
        return str(
            self._build_query(f"/{self.library_type}/{self.library_id}/searches/{search}/items")
        )


class ZoteroLibrary:
    def __init__(
        self,
        library_id: str,
        library_type: str = "user",
        api_key: SecretStr | None = None,
        *,
        local: bool = False,
        url: str | None = None,
        max_attempts: int = 5,
        max_pages: int = MAX_PAGES,
        retry_after_cap_s: float = HostLimits.retry_after_cap_s,
        sleep: Callable[[float], None] = time.sleep,
        notice: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    ) -> None:
        key = api_key.get_secret_value() if api_key else None
        self._api = _Zotero(library_id, library_type, key, local=local)
        self._api.endpoint = (url or (LOCAL_URL if local else WEB_URL)).rstrip("/")
        self.local = local
        self.where = f"{'local ' if local else ''}Zotero library {library_type}s/{library_id}"
        self._max_attempts = max_attempts
        self._max_pages = max_pages
        self._wait_cap = retry_after_cap_s
        self._sleep = sleep
        self._notice = notice
        self._held_until = 0.0

    def items(self, collection: str | None = None, search: str | None = None) -> list[Any]:
        """Every item of the library, the collection or the saved search, in the API's JSON."""
        return self._paged(self._page, collection, search)

    def notes(self, tag: str) -> list[Any]:
        """The child notes carrying `tag` (an earlier run's notes, to update rather than add)."""
        return self._paged(self._notes_page, tag)

    def write(self, objects: list[dict[str, Any]]) -> WriteOutcome:
        """Create or update `objects` (each with its `key` and `version` when it exists)."""
        if self.local:
            raise ZoteroRefused(f"{self.where}: Zotero's local API is read-only; use the web API")
        outcome = WriteOutcome()
        for start in range(0, len(objects), WRITE_BATCH):
            batch = objects[start : start + WRITE_BATCH]
            answer = self._asked(self._post, batch)
            outcome.written += list(answer.get("success", {}).values())
            outcome.written += [batch[int(i)].get("key", "") for i in answer.get("unchanged", {})]
            for index, failure in answer.get("failed", {}).items():
                key = failure.get("key") or batch[int(index)].get("key", f"#{index}")
                if failure.get("code") == 412:
                    outcome.conflicts.append(key)
                else:
                    outcome.failed[key] = str(failure.get("message", failure.get("code")))
        return outcome

    def _paged(self, fetch: Callable[..., list[Any]], *args: Any) -> list[Any]:
        """Every page `fetch` answers, each item once. A server is not trusted to end: paging
        stops at its Total-Results, at an empty page, at a page of items already read, and
        past `max_pages` it is refused."""
        found: dict[str, Any] = {}
        start = 0
        for _ in range(self._max_pages):
            page = self._asked(fetch, *args, start)
            start += len(page)
            fresh = {item.get("key"): item for item in page if item.get("key") not in found}
            found |= fresh
            total = int_header(self._api.request.headers, "Total-Results")
            if not fresh or (total is not None and start >= total):
                return list(found.values())
        raise ZoteroUnavailable(
            f"{self.where}: still paging after {self._max_pages} pages ({len(found)} items); "
            "stopped"
        )

    def _wait(self, seconds: float) -> None:
        if seconds > LONG_WAIT_S:
            self._notice(f"citeaudit: {self.where} asks to wait; waiting {seconds:.0f} s")
        self._sleep(max(0.0, seconds))

    @staticmethod
    def _asked_to_wait(headers: httpx.Headers) -> float:
        """The seconds a Retry-After (seconds or a date) or a Backoff (seconds) asks for."""
        retry_after = parse_retry_after(headers.get("Retry-After"))
        return retry_after if retry_after is not None else _seconds(headers.get("Backoff"))

    def _status(self) -> int:
        return self._api.request.status_code if self._api.request is not None else 0

    def _page(self, collection: str | None, search: str | None, start: int) -> list[Any]:
        if search:
            return self._api.search_items(search, start=start, limit=PAGE)
        if collection:
            return self._api.collection_items(collection, start=start, limit=PAGE)
        return self._api.items(start=start, limit=PAGE)

    def _post(self, batch: list[dict[str, Any]]) -> Any:
        answer = self._api.client.post(
            f"{self._api.endpoint}/{self._api.library_type}/{self._api.library_id}/items",
            content=json.dumps(batch),
            headers={"Content-Type": "application/json"},
        )
        self._api.request = answer
        if answer.status_code >= 400 and answer.status_code not in (429, 503):
            zotero.error_handler(self._api, answer)
        return answer.json() if answer.status_code == 200 else None

    def _notes_page(self, tag: str, start: int) -> list[Any]:
        return self._api.items(itemType="note", tag=tag, start=start, limit=PAGE)

    def _asked(self, call: Callable[..., T], *args: Any) -> T:
        """`call`'s answer, waiting out a 429 or 503 and any Backoff the API asked for."""
        for attempt in range(1, self._max_attempts + 1):
            self._wait(self._held_until - time.monotonic())
            result: T | None = None
            try:
                result = call(*args)
            except zotero_errors.PyZoteroError as exc:
                # pyzotero raises for a 503 (and a 429 without Backoff); both are asked again
                if self._status() not in (429, 503):
                    raise _refusal(self.where, self._status()) from exc
            except httpx.HTTPError as exc:
                raise ZoteroUnavailable(
                    f"{self.where}: not reachable ({type(exc).__name__})"
                ) from exc
            answer = self._api.request
            wait = min(self._asked_to_wait(answer.headers), self._wait_cap)
            self._held_until = time.monotonic() + wait
            if answer.status_code not in (429, 503):
                return result  # type: ignore[return-value]
            if attempt == self._max_attempts:
                break
            self._held_until = time.monotonic() + max(wait, 2.0**attempt)
        raise ZoteroUnavailable(
            f"{self.where}: still refused (HTTP 429/503) after {self._max_attempts} tries"
        )


def _refusal(where: str, status: int) -> ZoteroError:
    """An answer of `status`: the key or the library is the user's to fix; anything else is
    Zotero's failure."""
    if status in (401, 403):
        return ZoteroRefused(
            f"{where}: the API key is not accepted (HTTP {status}); set ZOTERO_API_KEY"
        )
    if status == 404:
        return ZoteroRefused(f"{where}: no such library, collection or saved search (HTTP 404)")
    return ZoteroUnavailable(f"{where}: refused (HTTP {status})")


def _seconds(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0
