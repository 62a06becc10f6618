"""Serving offprompt over streamable HTTP (`/mcp`) and legacy SSE (`/sse` + `/messages/`); stdio is
`serve.stdio.serve_stdio`'s.

Over HTTP every request first passes `RequestGuard`, in this order:

    Host not a local name (or an --allow-host)   → 421   stops DNS rebinding
    Origin present and not a local origin         → 403   stops cross-site browser pages
    bearer token configured, missing or wrong     → 401
    body over `max_request_bytes`                 → 413   (the SDK's transports enforce the cap)

The guard drops the client's `Authorization` header from the request before
anything else sees it, so it can't be forwarded to a downstream server (the
MCP spec forbids token passthrough). A valid token becomes the request's
owner, a stable hash of the token: `caller.owner_of(ctx)` reads it, and a
namespace stored by one token's caller is invisible to another's. The SDK
also binds each session to the owner that opened it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from offprompt.errors import ConfigError
from offprompt.logs import keep_message_content_out_of_logs
from offprompt.serve.connections import (
    DEFAULT_HEADER_TIMEOUT_SECONDS,
    DEFAULT_MAX_WAITING,
    raise_fd_limit,
    waiting_protocol,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger(__name__)
keep_message_content_out_of_logs()  # the SDK's SSE transport logs whole messages at DEBUG

TransportName = Literal["stdio", "http", "sse"]
TOKEN_ENV: Final = "OFFPROMPT_AUTH_TOKEN"
DEFAULT_PORT: Final = 8765
MIN_TOKEN_LENGTH: Final = 16
MCP_PATH: Final = "/mcp"
DEFAULT_SESSIONS_PER_TOKEN: Final = 100
DEFAULT_SESSION_IDLE_SECONDS: Final = 600.0
SSE_PATH: Final = "/sse"
MESSAGES_PATH: Final = "/messages/"

LOCAL_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})
# RFC 6750 b64token: no spaces or commas, so a comma list of tokens is unambiguous.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>[^/?#@\s]+)")
# The SDK's own Host/Origin checks are switched off because RequestGuard makes them, for every route alike.
_CHECKED_BY_GUARD: Final = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def owner_id(token: str) -> str:
    """The stable, non-secret id of a token's caller: what the catalog stores as a namespace's owner."""
    return hashlib.sha256(b"offprompt owner\0" + token.encode()).hexdigest()[:32]


def parse_tokens(values: Iterable[str]) -> tuple[str, ...]:
    """Tokens from flags and env values, each of which may be a comma list; blanks dropped, order kept."""
    tokens: dict[str, None] = {}
    for value in values:
        for token in value.split(","):
            if token.strip():
                tokens[token.strip()] = None
    return tuple(tokens)


def is_loopback(host: str) -> bool:
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class TransportSettings:
    """How `offprompt serve` talks to its clients; checked when built."""

    transport: TransportName = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    auth_tokens: tuple[str, ...] = field(default=(), repr=False)  # secrets stay out of logs
    allowed_hosts: tuple[str, ...] = ()
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE
    #: Open sessions one bearer token (or, without tokens, all callers together) may hold at once.
    max_sessions_per_token: int = DEFAULT_SESSIONS_PER_TOKEN
    #: A session with no request for this long is closed.
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS
    #: A connection that has not sent its first request's headers by then is closed (slowloris).
    header_timeout_seconds: float = DEFAULT_HEADER_TIMEOUT_SECONDS
    #: Connections still waiting for their headers at once; the oldest goes to make room for a new one.
    max_waiting_connections: int = DEFAULT_MAX_WAITING

    def __post_init__(self) -> None:
        if self.max_sessions_per_token <= 0:
            raise ConfigError("--max-sessions-per-token must be at least 1")
        if not 0 < self.session_idle_seconds < float("inf"):
            raise ConfigError("--session-idle-seconds must be a positive number of seconds")
        if not 0 < self.header_timeout_seconds < float("inf"):
            raise ConfigError("--header-timeout-seconds must be a positive number of seconds")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"--port {self.port} is not a TCP port: give 1-65535, or 0 to pick a free one")
        if self.max_request_bytes <= 0:
            raise ConfigError("the request body cap must be a positive number of bytes")
        for token in self.auth_tokens:
            if not _TOKEN.fullmatch(token) or len(token) < MIN_TOKEN_LENGTH:
                raise ConfigError(
                    f"an auth token must be at least {MIN_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / "
                    "(several tokens are separated by commas); make one with "
                    "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"
                )
        if self.transport != "stdio" and not self.auth_tokens and not is_loopback(self.host):
            raise ConfigError(
                f"refusing to listen on {self.host}: it is reachable from other machines, and without a token "
                f"anyone who can reach it could use every tool and read all stored outputs. Set a token with "
                f"--auth-token or ${TOKEN_ENV} (clients then send `Authorization: Bearer <token>`), "
                "or listen on 127.0.0.1"
            )

    def local_names(self) -> frozenset[str]:
        """The host names a request may be addressed to (Host) and come from (Origin)."""
        names = set(LOCAL_NAMES)
        for host in (self.host, *self.allowed_hosts):
            if host not in _WILDCARDS:
                names.add(_normal_host(host))
        return frozenset(names)


def add_transport_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` flags for the transport; read them back with `transport_settings`."""
    parser.add_argument(
        "--transport",
        choices=["stdio", "http", "sse"],
        default="stdio",
        help="stdio (default); http: streamable HTTP at /mcp; sse: the legacy /sse + /messages/ transport",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; others need a token)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)"
    )
    parser.add_argument(
        "--auth-token",
        action="append",
        metavar="TOKEN",
        help=f"require `Authorization: Bearer TOKEN` on HTTP; repeat it or give a comma list for several callers, "
        f"each with its own stored outputs (default ${TOKEN_ENV}; the variable keeps it out of `ps`)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests addressed to this host name (Host / Origin); localhost names always are",
    )
    parser.add_argument(
        "--max-sessions-per-token",
        type=int,
        default=None,
        metavar="N",
        help=f"open HTTP sessions one token may hold (default {DEFAULT_SESSIONS_PER_TOKEN}, or the config's "
        "max_sessions_per_token)",
    )
    parser.add_argument(
        "--session-idle-seconds",
        type=float,
        default=None,
        metavar="S",
        help=f"close an HTTP session after S seconds without a request (default {DEFAULT_SESSION_IDLE_SECONDS:.0f}, "
        "or the config's session_idle_seconds)",
    )
    parser.add_argument(
        "--header-timeout-seconds",
        type=float,
        default=None,
        metavar="S",
        help=f"close an HTTP connection that has not sent a request's headers after S seconds "
        f"(default {DEFAULT_HEADER_TIMEOUT_SECONDS:.0f})",
    )


def transport_settings(
    args: argparse.Namespace,
    environ: Mapping[str, str] = os.environ,
    *,
    max_sessions_per_token: int = DEFAULT_SESSIONS_PER_TOKEN,
    session_idle_seconds: float = DEFAULT_SESSION_IDLE_SECONDS,
) -> TransportSettings:
    """The transport settings from parsed `serve` flags; a flag's token wins over the environment's, a flag's
    session limits over the config file's (passed as keywords)."""
    raw = args.auth_token if args.auth_token else [environ.get(TOKEN_ENV, "")]
    flag_sessions = getattr(args, "max_sessions_per_token", None)
    flag_idle = getattr(args, "session_idle_seconds", None)
    return TransportSettings(
        transport=args.transport,
        host=args.host,
        port=args.port,
        auth_tokens=parse_tokens(raw) if args.transport != "stdio" else (),
        allowed_hosts=tuple(args.allow_host),
        max_sessions_per_token=flag_sessions if flag_sessions is not None else max_sessions_per_token,
        session_idle_seconds=flag_idle if flag_idle is not None else session_idle_seconds,
        header_timeout_seconds=(
            DEFAULT_HEADER_TIMEOUT_SECONDS
            if getattr(args, "header_timeout_seconds", None) is None
            else args.header_timeout_seconds
        ),
    )


# -- the HTTP checks ---------------------------------------------------------------------------------------------


def _normal_host(name: str) -> str:
    name = name.strip("[]").lower().rstrip(".")
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


def _host_name(value: str | None) -> str | None:
    """The host name of a `Host` header value, or None when it is not one."""
    if value is not None and len(value) <= _CACHED_HOST_CHARS:
        return _cached_host_name(value)
    return _parse_host_name(value)


#: A client sends the same Host with every request, and parsing it (a regex, ipaddress) was most of the guard's
#: time: the names of the last values seen are kept, those as long as a host name and a port can be.
_CACHED_HOST_CHARS: Final = 270


@functools.lru_cache(maxsize=256)
def _cached_host_name(value: str) -> str | None:
    return _parse_host_name(value)


def _parse_host_name(value: str | None) -> str | None:
    match = _HOST.fullmatch(value or "")
    if match is None:
        return None
    return _normal_host(match["v6"] or match["name"])


def _origin_host(origin: str) -> str | None:
    match = _ORIGIN.fullmatch(origin)
    return _host_name(match["host"]) if match else None


class RequestGuard:
    """ASGI middleware in front of every HTTP route: Host (421), Origin (403), bearer token (401)."""

    def __init__(self, app: ASGIApp, settings: TransportSettings) -> None:
        self.app = app
        self.names = settings.local_names()
        self.owners = frozenset(owner_id(t) for t in settings.auth_tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if _host_name(headers.get("host")) not in self.names:
            logger.warning("refused a request addressed to Host %r", headers.get("host"))
            response = error_response(
                421,
                "misdirected_request",
                "Misdirected request: this offprompt answers only to localhost names (see --allow-host).",
            )
            await response(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and _origin_host(origin) not in self.names:
            logger.warning("refused a request from Origin %r", origin)
            response = error_response(403, "forbidden", "Forbidden: requests from this web origin are not allowed.")
            await response(scope, receive, send)
            return
        if headers.get("authorization") is not None:
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"authorization"]}
        if self.owners:
            owner = self._owner(headers.get("authorization"))
            if owner is None:
                await self._unauthorized(headers.get("authorization") is not None)(scope, receive, send)
                return
            scope["user"] = AuthenticatedUser(AccessToken(token=owner, client_id=owner, scopes=[]))
        await self.app(scope, receive, _json_413(send))

    def _owner(self, authorization: str | None) -> str | None:
        scheme, _, credential = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            return None
        presented = owner_id(credential.strip())
        found = False
        for owner in self.owners:  # compare with every token, so timing says nothing about which one matched
            found |= hmac.compare_digest(presented, owner)
        return presented if found else None

    @staticmethod
    def _unauthorized(presented: bool) -> JSONResponse:
        challenge = 'Bearer realm="offprompt"' + (', error="invalid_token"' if presented else "")
        message = "the bearer token is not valid" if presented else "send `Authorization: Bearer <token>`"
        logger.warning("refused a request: %s", message)
        error = "invalid_token" if presented else "invalid_request"  # RFC 6750's names
        return error_response(401, error, f"Unauthorized: {message}.", {"WWW-Authenticate": challenge})


def error_response(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An HTTP refusal as a client can read it: JSON with OAuth's `error` and `error_description` (Claude Code
    parses a 401's body as JSON, and showed only "Failed to connect" for plain text)."""
    return JSONResponse({"error": error, "error_description": description}, status, headers=headers)


def _json_413(send: Send) -> Send:
    """`send`, with the SDK's plain-text 413 ("Request body too large") answered as JSON instead."""
    refusing = False

    async def sending(message: Message) -> None:
        nonlocal refusing
        if message["type"] == "http.response.start" and message["status"] == 413:
            refusing = True
            return
        if refusing and message["type"] == "http.response.body":
            if message.get("more_body"):
                return
            description = "Request body too large: send a smaller request (the server's limit is max_request_bytes)."
            body = json.dumps({"error": "request_too_large", "error_description": description}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 413, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return sending


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
