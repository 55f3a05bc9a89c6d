"""A threaded HTTP server on 127.0.0.1 that hands every request to one function (the stand-ins' plumbing)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
