"""HTTP connections before their first request: a deadline for the headers, and a cap on how many wait.

uvicorn reads a request's headers for as long as the client takes: a client that opens sockets and sends a
request line and nothing more (slowloris) holds a file descriptor each until the process has none left, and
then every caller's connection fails, a valid token's included. So a connection must finish its first request's
headers within `header_timeout` seconds or be closed; and when `max_waiting` connections are still waiting for
theirs, the oldest of them is closed to make room (a new one is never refused: a real client sends its headers
at once and is through before it could be the oldest). Once a connection has sent its headers, the bearer
token check (`RequestGuard`) and uvicorn's keep-alive timeout take over.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import OrderedDict

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT_SECONDS", "DEFAULT_MAX_WAITING", "raise_fd_limit", "waiting_protocol"]

logger = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_WAITING = 256


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


def waiting_protocol(header_timeout: float, max_waiting: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol, with the header deadline and the cap on connections still waiting for theirs."""
    waiting: OrderedDict[H11Protocol, asyncio.TimerHandle] = OrderedDict()  # oldest first

    class WaitingLimited(H11Protocol):
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
            super().on_response_complete()
            if not self.transport.is_closing():  # kept alive: the next request's headers get the deadline too
                self._wait()

        def connection_lost(self, exc: Exception | None) -> None:
            self._admitted()
            super().connection_lost(exc)

    return WaitingLimited
