"""The settings and the checks of serving offprompt over streamable HTTP (`/mcp`) and legacy SSE (`/sse` +
`/messages/`); the apps and uvicorn are `serve.http_apps`', stdio is `serve.stdio.serve_stdio`'s.

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
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from offprompt.errors import ConfigError
from offprompt.logs import keep_message_content_out_of_logs
from offprompt.serve.connections import (
    DEFAULT_HEADER_TIMEOUT_SECONDS,
    DEFAULT_MAX_WAITING,
)

logger = logging.getLogger(__name__)
keep_message_content_out_of_logs()  # the SDK's SSE transport logs whole messages at DEBUG

TransportName = Literal["stdio", "http", "sse"]
TOKEN_ENV: Final = "OFFPROMPT_AUTH_TOKEN"
DEFAULT_PORT: Final = 8765
MIN_TOKEN_LENGTH: Final = 16
DEFAULT_SESSIONS_PER_TOKEN: Final = 100
DEFAULT_SESSION_IDLE_SECONDS: Final = 600.0

LOCAL_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS: Final = frozenset({"0.0.0.0", "::", ""})
# RFC 6750 b64token: no spaces or commas, so a comma list of tokens is unambiguous.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>[^/?#@\s]+)")


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
