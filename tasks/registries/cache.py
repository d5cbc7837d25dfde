"""Registry answers on disk (hishel), keyed without credentials. Only answers the client
accepts are written: RegistryHttp keeps those and forgets any other (a gateway's 404, an
unusable body), and until then an answer is visible to no other request."""

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import hishel
import httpcore
import httpx

_CACHE_KEY = "citeaudit.cache_key"
_CACHEABLE_STATUSES = [200, 404]
# Answers awaiting the client's check; one the client never judged (it raised) is dropped.
_UNCHECKED_MAX = 256


def _cache_key(request: httpcore.Request, body: bytes | None) -> str:
    """Method, URL, Accept and body (POST efetch is keyed on its id list). The key is also left
    on the request so a body that turns out unusable can be evicted."""
    accept = b",".join(v for k, v in request.headers if k.lower() == b"accept")
    parts = [request.method, bytes(request.url), accept, body or b""]
    key = hashlib.sha256(b"\n".join(parts)).hexdigest()
    request.extensions[_CACHE_KEY] = key
    return key


class _CheckedFileStorage(hishel.FileStorage):
    """hishel's file storage, with two changes.

    A new answer is held in memory until the client has checked it (`keep`) or rejected it
    (`remove`): written at once, another thread or process could read a gateway's 404 in the
    moment before the client forgot it. An entry another process is half-way through writing
    (its writes are not atomic) or a damaged file is a miss, not a crash."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._unchecked: OrderedDict[str, tuple[Any, Any, Any]] = OrderedDict()
        self._unchecked_lock = threading.Lock()

    def store(self, key: str, response: Any, request: Any, metadata: Any = None) -> None:
        with self._unchecked_lock:
            self._unchecked[key] = (response, request, metadata)
            while len(self._unchecked) > _UNCHECKED_MAX:  # never checked: just not cached
                self._unchecked.popitem(last=False)

    def keep(self, key: str) -> None:
        with self._unchecked_lock:
            entry = self._unchecked.pop(key, None)
        if entry is not None:
            super().store(key, *entry)

    def remove(self, key: Any) -> None:
        if isinstance(key, str):
            with self._unchecked_lock:
                self._unchecked.pop(key, None)
        super().remove(key)

    def retrieve(self, key: str) -> Any:
        try:
            return super().retrieve(key)
        except (ValueError, KeyError, TypeError, OSError):
            self.remove(key)
            return None


class ResponseCache:
    """Registry answers on disk for `ttl_s`, shared by every client and job using `directory`."""

    def __init__(self, directory: Path, ttl_s: float = 86_400.0) -> None:
        self.directory = directory
        self._storage = _CheckedFileStorage(base_path=directory, ttl=ttl_s)
        # Registries send no cache headers: force caching, but only of real answers (200, 404).
        self._controller = hishel.Controller(
            cacheable_methods=["GET", "POST"],
            cacheable_status_codes=_CACHEABLE_STATUSES,
            force_cache=True,
            key_generator=_cache_key,
        )

    def wrap(self, transport: httpx.BaseTransport) -> httpx.BaseTransport:
        return hishel.CacheTransport(
            transport=transport, storage=self._storage, controller=self._controller
        )

    def keep(self, response: httpx.Response) -> None:
        """The client accepted the answer: from now on it is served from the cache."""
        key = response.request.extensions.get(_CACHE_KEY)
        if isinstance(key, str):
            self._storage.keep(key)

    def forget(self, response: httpx.Response) -> None:
        key = response.request.extensions.get(_CACHE_KEY)
        if isinstance(key, str):
            self._storage.remove(key)
