"""A local HTTP server's life: a ThreadingHTTPServer on 127.0.0.1 (a free port) served by a
background thread, started and stopped, or used as a context manager. The fake registry and the
dumps' publishers (dumps.py) are both one."""

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class Serving:
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    thread_name = "fake-server"

    def _new_server(self) -> ThreadingHTTPServer:
        raise NotImplementedError

    def start(self) -> Self:
        if self._server is None:
            self._server = self._new_server()
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=self.thread_name,
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running: call start()")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"
