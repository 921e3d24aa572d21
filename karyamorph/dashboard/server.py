"""Serve the dashboard: bind (127.0.0.1 and a free port by default), print the URL with its
token, open a browser if asked, and run until interrupted."""

from __future__ import annotations

import asyncio
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from karyamorph.dashboard.app import create_app
from karyamorph.dashboard.auth import new_token
from karyamorph.dashboard.state import State


@dataclass(frozen=True, slots=True)
class Served:
    """Where the page is: its address and token, and the URL that carries the token."""

    host: str
    port: int
    token: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?token={self.token}"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class Server:
    """The dashboard on one socket, run in the foreground (:meth:`run`) or on a thread
    (:meth:`start`, :meth:`stop`: what the browser tests and the paint benchmark use)."""

    def __init__(
        self, state: State, host: str = "127.0.0.1", port: int = 0, token: str | None = None
    ) -> None:
        self.token = token or new_token()
        self.socket = bind(host, port)
        bound = self.socket.getsockname()
        self.served = Served(host, int(bound[1]), self.token)
        config = uvicorn.Config(create_app(state, self.token), log_level="warning", access_log=False,
                                lifespan="off")  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self, on_ready: Callable[[Served], None] | None = None) -> None:
        """Serve until interrupted (Ctrl-C)."""
        if on_ready is not None:
            on_ready(self.served)
        asyncio.run(self._server.serve(sockets=[self.socket]))

    def start(self) -> Served:
        """Serve on a thread; return once the server accepts requests."""
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[self.socket])), daemon=True,
            name="karyamorph-dashboard",
        )  # fmt: skip
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the dashboard server stopped while starting")
            threading.Event().wait(0.01)
        return self.served

    def stop(self) -> None:
        """Stop a server started with :meth:`start`."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.socket.close()


def open_browser(url: str) -> None:
    """Open ``url`` in the user's browser (quietly nothing where there is none)."""
    webbrowser.open(url, new=2)
