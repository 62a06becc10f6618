"""A real Chroma server (`chroma run`, shipped with the chromadb package) on loopback, for the tests of Chroma's
server mode; and a token guard in front of it, as a team puts one (nginx, a gateway) before a Chroma server that
checks no tokens itself."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHROMA = Path(sys.executable).with_name("chroma")
#: `chroma run` listens within ~2 s here; a loaded CI machine gets more.
START_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """`chroma run --path DIR` on 127.0.0.1, stopped and started again on the same port and data."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log = path.with_suffix(".log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [str(CHROMA), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)]
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while not self.alive():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not start: {self._log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def alive(self) -> bool:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            connection.request("GET", "/api/v2/heartbeat")
            return connection.getresponse().status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None


class TokenGuard:
    """An HTTP proxy to `upstream` that answers 401 to a request without `Authorization: Bearer TOKEN` (any
    request passes with `token=None`), records the headers of every request it saw, and can hold writes."""

    def __init__(self, upstream_port: int, token: str | None) -> None:
        self.seen: list[dict[str, str]] = []
        #: While set, each request that writes vectors (`…/upsert`) waits until it is cleared: a Chroma server
        #: that has stopped answering writes, so an indexer stays inside one batch for as long as a test wants.
        self.writes_held = threading.Event()
        #: Set to N: the next N writes go through, then writes are held (as by setting `writes_held`).
        self.hold_after_writes: int | None = None
        #: Held writes are only those whose body holds these bytes (e.g. a namespace); None: every write.
        self.hold_only: bytes | None = None
        #: Set while a write waits at the relay.
        self.write_waiting = threading.Event()
        self._writes_go = threading.Condition()
        guard = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _relay(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                guard.seen.append(headers)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if token is not None and headers.get("authorization") != f"Bearer {token}":
                    self._answer(401, b'{"error":"Unauthorized"}')
                    return
                if self.path.endswith("/upsert"):
                    with guard._writes_go:
                        if guard.hold_after_writes is not None:
                            guard.hold_after_writes -= 1
                            if guard.hold_after_writes < 0:
                                guard.hold_after_writes = None
                                guard.writes_held.set()
                        if guard.hold_only is None or guard.hold_only in body:
                            if guard.writes_held.is_set():
                                guard.write_waiting.set()
                            guard._writes_go.wait_for(lambda: not guard.writes_held.is_set())
                            guard.write_waiting.clear()
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                    response = upstream.getresponse()
                    self._answer(response.status, response.read())
                except OSError:
                    self._answer(502, b'{"error":"Bad Gateway"}')
                finally:
                    upstream.close()

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _relay

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def release_writes(self) -> None:
        with self._writes_go:
            self.writes_held.clear()
            self._writes_go.notify_all()

    @contextmanager
    def running(self) -> Iterator[TokenGuard]:
        self._thread.start()
        try:
            yield self
        finally:
            self.release_writes()
            self._server.shutdown()
            self._server.server_close()
