"""HTTP connections before their first request: a deadline for the headers, and a cap on how many wait.

uvicorn reads a request's headers for as long as the client takes: a client that opens sockets and sends a
request line and nothing more (slowloris) holds a file descriptor each until the process has none left, and
then every caller's connection fails, a valid token's included. So a connection must finish its first request's
headers within `header_timeout` seconds or be closed; and when `max_waiting` connections are still waiting for
theirs, the oldest of them is closed to make room (a new one is never refused: a real client sends its headers
at once and is through before it could be the oldest). Once a connection has sent its headers, the bearer
token check (`RequestGuard`) and uvicorn's keep-alive timeout take over.

The parser is httptools' (C), as uvicorn picks when it is installed: h11's (pure Python) cost offprompt about a
third of a tiny call's CPU. h11 capped a request's headers at 16 KiB; httptools has no cap, so the cap is here.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import OrderedDict

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["DEFAULT_HEADER_TIMEOUT_SECONDS", "DEFAULT_MAX_WAITING", "raise_fd_limit", "waiting_protocol"]

logger = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_WAITING = 256
#: The most a request line and its headers may take: h11's own limit, which offprompt's requests had before.
MAX_HEADER_BYTES = 16 * 1024


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit (a common soft default is 1024); the new limit
    (0 where the platform has no such limit)."""
    if sys.platform == "win32":
        return 0
    import resource  # POSIX only

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            return soft
        return hard
    return soft


class HeaderCapped(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a request line and headers past `MAX_HEADER_BYTES` and reading
    header values without the whitespace around them, as h11 did.

    Counted per read: a read that begins and ends inside one request's headers counts whole. A read in which a
    request's headers end, or a body gives way to the next request, is not counted, so the cap may be passed by
    one read at most (asyncio reads 256 KiB at most); a body never counts.
    """

    _in_headers = True  # the next bytes are a request line or headers: at the start, and after each body
    _header_bytes = 0
    _headers_done = 0  # requests whose headers have ended, on this connection

    def data_received(self, data: bytes) -> None:
        counting, done = self._in_headers, self._headers_done
        super().data_received(data)
        if not counting or self._headers_done != done:
            return
        self._header_bytes += len(data)
        if self._header_bytes > MAX_HEADER_BYTES and not self.transport.is_closing():
            self.send_400_response("Invalid HTTP request received.")  # what h11's cap answered

    def on_header(self, name: bytes, value: bytes) -> None:
        # RFC 9110 5.5: the whitespace around a field value is not part of it. h11 dropped it; llhttp keeps the
        # trailing part, and `Mcp-Name: "  memory_load  "` then did not match the body's name.
        super().on_header(name, value.strip(b" \t"))

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._headers_done += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_headers, self._header_bytes = True, 0


def waiting_protocol(header_timeout: float, max_waiting: int) -> type[HeaderCapped]:
    """uvicorn's httptools protocol, with the header deadline, the cap on connections still waiting for theirs,
    and the cap on a request's header bytes."""
    waiting: OrderedDict[HttpToolsProtocol, asyncio.TimerHandle] = OrderedDict()  # oldest first

    class WaitingLimited(HeaderCapped):
        _seen: object = None  # the request cycle whose headers were last seen complete

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._wait()

        def _wait(self) -> None:
            """From now, this connection has `header_timeout` to send a request's headers."""
            self._admitted()
            while len(waiting) >= max_waiting:
                oldest, timer = waiting.popitem(last=False)
                timer.cancel()
                logger.info("closed a connection that had sent no request yet: %d others were waiting", max_waiting)
                oldest.transport.close()
            waiting[self] = self.loop.call_later(header_timeout, self._too_slow)

        def _too_slow(self) -> None:
            if waiting.pop(self, None) is not None:
                logger.info("closed a connection that sent no complete request within %.0f s", header_timeout)
                self.transport.close()

        def _admitted(self) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._seen:  # a request's headers are in
                self._seen = self.cycle
                self._admitted()

        def on_response_complete(self) -> None:
            pipelined = bool(self.pipeline)  # the next request's headers are in already: it starts now
            super().on_response_complete()
            if not pipelined and not self.transport.is_closing():  # kept alive: the next headers get the deadline
                self._wait()

        def connection_lost(self, exc: Exception | None) -> None:
            self._admitted()
            super().connection_lost(exc)

    return WaitingLimited
