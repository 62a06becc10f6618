"""The client of one request, as the handlers need it: who it is, what it speaks, and the ways back to it."""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from offprompt.proxy.client_features import ClientSession
from offprompt.proxy.downstream import ProgressFn
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.routes import Route
from offprompt.results import CallSite
from offprompt.serve.client_channels import ConnectionChannel, SessionChannel, owner_of
from offprompt.serve.sdk_adapter import connection_of

Ctx = ServerRequestContext[Any, Any]
__all__ = ["Caller", "Ctx", "owner_of"]


class Caller:
    """One request's client. Built per request: the SDK's session object is per request too."""

    __slots__ = ("connection", "ctx")

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        #: The client's connection, one object for all its requests (None only for a stand-in session).
        self.connection: Connection | None = connection_of(ctx.session)

    @property
    def owner(self) -> str | None:
        return owner_of(self.ctx)

    @property
    def over_http(self) -> bool:
        """Over stdio (and in process) nothing caps an answer's size."""
        return isinstance(self.ctx.request, Request)

    @property
    def protocol_version(self) -> str:
        return self.ctx.session.protocol_version

    @property
    def is_modern(self) -> bool:
        """Whether the caller speaks 2026-07-28 (no server requests: input-required round trips instead)."""
        return self.connection is not None and self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def capabilities(self) -> mt.ClientCapabilities | None:
        return self.ctx.session.client_capabilities

    def channel(self) -> SessionChannel:
        """Requests to the client (sampling, elicitation, roots) on this request's stream."""
        return SessionChannel(self.ctx)

    def progress(self) -> ProgressFn:
        """Relays a downstream's progress to the client; a no-op when the client asked for none."""
        session = self.ctx.session

        async def forward(progress: float, total: float | None, message: str | None) -> None:
            await session.report_progress(progress, total, message)

        return forward

    def call_site(self, route: Route, arguments: dict[str, Any] | None, timeout: float | None = None) -> CallSite:
        """A proxied call, as the result boundary sees it; `timeout`: its server's `timeout_seconds`, which bounds
        the looking at and storing of its result too."""
        return CallSite(
            route.server,
            route.tool,
            route.mode,
            arguments,
            self.owner or "",
            intent=route.intent,
            secrets=route.secrets,
            secrets_allow=route.secrets_allow,
            schema=route.schema,
            max_argument_bytes=route.max_argument_bytes,
            timeout=timeout,
        )

    def client_session(self, proxy: Proxy, route: Route) -> ClientSession | None:
        """The caller's HTTP session when `route`'s server runs a process per session (`per_session`); its
        processes stop when the session closes or expires. None without a session (stdio's one client,
        2026-07-28 single requests): the shared process serves."""
        if not proxy.per_session(route):
            return None
        connection = self.connection
        key = connection.session_id if connection is not None else None
        if connection is None or key is None:
            return None
        if not connection.state.get("offprompt.per_session"):
            connection.state["offprompt.per_session"] = True
            connection.exit_stack.callback(proxy.end_session, key)
        return ClientSession(key, ConnectionChannel(connection, self.owner or ""))
