"""The ASGI apps that serve offprompt over HTTP, behind `http.RequestGuard`: streamable HTTP at `/mcp` with its
sessions capped per token (`SessionCap`), legacy SSE at `/sse` + `/messages/`; and the listening socket and
uvicorn that run them until the process is told to stop."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from offprompt.errors import ConfigError
from offprompt.serve.connections import raise_fd_limit, waiting_protocol
from offprompt.serve.http import RequestGuard, TransportSettings, error_response

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger(__name__)

MCP_PATH: Final = "/mcp"
SSE_PATH: Final = "/sse"
MESSAGES_PATH: Final = "/messages/"
# The SDK's own Host/Origin checks are switched off because RequestGuard makes them, for every route alike.
_CHECKED_BY_GUARD: Final = TransportSecuritySettings(enable_dns_rebinding_protection=False)


# -- the ASGI apps -----------------------------------------------------------------------------------------------


class SessionCap:
    """Refuses (429) a request that would open one session more than its token may hold.

    The SDK caps sessions for the whole server (one caller opening thousands locked everyone else out with 503);
    this cap is per token, so one caller can use up only its own share. It reads the session manager's
    registry of open sessions and their owners, which idle sessions leave when they expire.
    """

    def __init__(self, app: ASGIApp, manager: StreamableHTTPSessionManager, limit: int, idle_seconds: float) -> None:
        self.app = app
        self.manager = manager
        self.limit = limit
        self.idle_seconds = idle_seconds
        #: Sessions admitted but not yet in the manager's registry, per owner: the check and the admission are one
        #: step (no await between them), and a burst of initializes cannot all pass a check made before any
        #: registered. Released when the answer starts, by when its session is registered (or was not made).
        self.reserved: Counter[str | None] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and self._opens_session(Headers(scope=scope)):
            user = scope.get("user")
            owner = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
            owners = self.manager._session_owners
            if owner is None:
                held = len(self.manager._server_instances) - len(owners)
            else:
                held = sum(1 for o in owners.values() if o == owner)
            key = user.access_token.client_id if isinstance(user, AuthenticatedUser) else None
            held += self.reserved[key]
            if held >= self.limit:
                logger.warning("refused a new session: its token already holds %d open sessions", held)
                message = (
                    f"Too many sessions: this token already holds {held} open MCP sessions, the most one token may "
                    f"have. End sessions you no longer use (HTTP DELETE with their Mcp-Session-Id); an idle one "
                    f"closes by itself after {self.idle_seconds:.0f} s. The server's operator sets the limit with "
                    "--max-sessions-per-token or max_sessions_per_token."
                )
                retry = {"Retry-After": str(int(self.idle_seconds))}
                await error_response(429, "too_many_sessions", message, retry)(scope, receive, send)
                return
            await self._admit(key, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _admit(self, key: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an opening request with its session reserved until the answer starts: the manager has
        registered the session by then, and counting it in both places would refuse a session the token may
        still open (the request goes on a while after its client has the answer)."""
        self.reserved[key] += 1
        counted = True

        def release() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.reserved[key] -= 1

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            release()

    @staticmethod
    def _opens_session(headers: Headers) -> bool:
        # As the SDK routes: a request with a session id uses that session; one naming a protocol version
        # without a handshake (2026-07-28) is served without a session.
        if headers.get("mcp-session-id") is not None:
            return False
        version = headers.get("mcp-protocol-version")
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def http_app(server: Server[Any], settings: TransportSettings) -> ASGIApp:
    """Streamable HTTP at `/mcp`: 2025-11-25 clients get sessions, 2026-07-28 clients single requests."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=_CHECKED_BY_GUARD,
        max_request_body_size=settings.max_request_bytes,
        session_idle_timeout=settings.session_idle_seconds,
        host=settings.host,
    )
    capped = SessionCap(app, server.session_manager, settings.max_sessions_per_token, settings.session_idle_seconds)
    return RequestGuard(capped, settings)


class _SseStream:
    """`GET /sse`: one legacy SSE connection, served until the client goes away.

    Each connection is a session: a token (or, without tokens, all callers together) may hold at most `limit`
    open at once, as over streamable HTTP, so one caller cannot take every connection; the next gets 429.
    """

    def __init__(self, server: Server[Any], transport: SseServerTransport, limit: int) -> None:
        self.server = server
        self.transport = transport
        self.limit = limit
        self.lifespan_state: Any = None
        self.open: Counter[str | None] = Counter()  # open connections per owner (one event loop: no lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")  # the owner `RequestGuard` named (its token's hash); None without tokens
        owner = user.access_token.client_id if isinstance(user, AuthenticatedUser) else None
        if self.open[owner] >= self.limit:
            await self._refuse(self.open[owner])(scope, receive, send)
            return
        self.open[owner] += 1
        try:
            await self._serve(scope, receive, send)
        finally:
            self.open[owner] -= 1

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self.transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
            await serve_loop(
                self.server,
                read_stream,
                write_stream,
                lifespan_state=self.lifespan_state,
                init_options=self.server.create_initialization_options(),
            )

    @staticmethod
    def _refuse(held: int) -> JSONResponse:
        logger.warning("refused a new SSE connection: its token already holds %d open", held)
        message = (
            f"Too many sessions: this token already holds {held} open SSE connections (GET {SSE_PATH}), the most "
            "one token may have. Close connections you no longer use. The server's operator sets the limit with "
            "--max-sessions-per-token or max_sessions_per_token."
        )
        return error_response(429, "too_many_sessions", message)


def sse_app(server: Server[Any], settings: TransportSettings) -> ASGIApp:
    """The legacy HTTP+SSE transport: `GET /sse` for the stream, `POST /messages/?session_id=…` for requests."""
    transport = SseServerTransport(
        MESSAGES_PATH, security_settings=_CHECKED_BY_GUARD, max_request_body_size=settings.max_request_bytes
    )
    stream = _SseStream(server, transport, settings.max_sessions_per_token)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # One lifespan for the whole app, as the streamable HTTP manager does, not one per connection.
        async with server.lifespan(server) as state:
            stream.lifespan_state = state
            yield

    routes = [
        Route(SSE_PATH, endpoint=stream, methods=["GET"]),
        Mount(MESSAGES_PATH, app=transport.handle_post_message),
    ]
    return RequestGuard(Starlette(routes=routes, lifespan=lifespan), settings)


# -- serving -----------------------------------------------------------------------------------------------------


def listen(settings: TransportSettings) -> socket.socket | None:
    """The listening socket for HTTP and SSE (None for stdio), bound here so a port that is taken fails before
    anything starts and port 0 gives a free port to announce. Raises ConfigError."""
    if settings.transport == "stdio":
        return None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            settings.host or None, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {settings.host}: {exc.strerror or exc}; check --host") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"cannot listen on {settings.host} port {settings.port}: {exc.strerror or exc}; "
            "choose another --port (0 picks a free one)"
        ) from None
    return listener


async def serve_transport(
    server: Server[Any],
    settings: TransportSettings,
    on_ready: Callable[[str], None] | None = None,
    listener: socket.socket | None = None,
) -> None:
    """Serve `server` over HTTP or SSE until the process is told to stop (stdio is `serve.stdio.serve_stdio`).

    `listener` comes from `listen(settings)` (made here when not given); `on_ready` gets the URL to connect to
    once the HTTP server accepts connections.
    """
    if settings.transport == "stdio":  # the CLI serves stdio itself, with the fast lane: a mix-up, said at once
        raise ValueError("serve_transport serves HTTP and SSE; serve stdio with serve.stdio.serve_stdio")
    if settings.transport == "http":
        app, path = http_app(server, settings), MCP_PATH
    else:
        app, path = sse_app(server, settings), SSE_PATH
    listener = listener or listen(settings)
    assert listener is not None
    host, port = listener.getsockname()[:2]
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    url = f"http://{f'[{shown}]' if ':' in shown else shown}:{port}{path}"
    config = uvicorn.Config(
        _AnnounceOnStartup(app, lambda: on_ready(url) if on_ready else None),
        log_config=None,  # offprompt's logging: stderr, one format
        access_log=logger.isEnabledFor(logging.DEBUG),
        proxy_headers=False,  # no proxy is trusted to rewrite the client's address
        server_header=False,
        ws="none",
        lifespan="on",
        timeout_graceful_shutdown=3,  # SSE streams stay open; don't wait for clients forever
        http=waiting_protocol(settings.header_timeout_seconds, settings.max_waiting_connections),
    )
    raise_fd_limit()  # a soft limit of 1024 is a common default: the hard limit is what the process may have
    with listener:
        await _Uvicorn(config).serve(sockets=[listener])


class _AnnounceOnStartup:
    """Calls `announce` once the app's lifespan has started, i.e. when requests will be served."""

    def __init__(self, app: ASGIApp, announce: Callable[[], None]) -> None:
        self.app = app
        self.announce = announce

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_and_announce(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                self.announce()

        await self.app(scope, receive, send_and_announce)


class _Uvicorn(uvicorn.Server):
    """uvicorn re-raises SIGTERM after its graceful shutdown, which would end the process before the memory
    is closed; this one just returns."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
