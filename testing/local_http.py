"""A threaded HTTP server on 127.0.0.1 that hands every request to one function (the stand-ins' plumbing)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


def serve(handle: Callable[[BaseHTTPRequestHandler], None], *, http11: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if http11 else "HTTP/1.0"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes: without this, Nagle's algorithm holds the
            # body until the client's delayed ACK (40 ms) on every kept-alive request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            handle(self)

        def do_POST(self) -> None:
            handle(self)

        def do_PUT(self) -> None:
            handle(self)

        def do_DELETE(self) -> None:
            handle(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def stop(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


class Served:
    """A stand-in that `serve` answers on 127.0.0.1 by its `_handle`: started, stopped, and where it is."""

    http11: ClassVar[bool] = False  # keep-alive connections (HTTP/1.1), as AWS's endpoints answer
    _server: ThreadingHTTPServer | None = None

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._server = serve(self._handle, http11=self.http11)
        return self

    def stop(self) -> None:
        stop(self._server)

    @property
    def url(self) -> str:
        assert self._server is not None
        return url(self._server)
