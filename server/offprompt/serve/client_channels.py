"""The clients offprompt serves, as channels for the downstreams' requests (sampling, elicitation, roots).

`StdioClient` is the one client of a stdio server, asked with JSON-RPC ids of offprompt's own; a
`SessionChannel` is the SDK session of the client whose call is in flight (the SDK path, every transport); a
`ConnectionChannel` is one HTTP client session's own stream, for a `per_session` server's requests between calls.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from offprompt.serve.sdk_adapter import connection_of

logger = logging.getLogger(__name__)

Write = Callable[[dict[str, Any]], Awaitable[None]]

#: The typed request and result of each relayed method, for the SDK's session.
_TYPES: dict[str, tuple[Any, type[Any]]] = {
    "sampling/createMessage": (mt.CreateMessageRequest, mt.CreateMessageResult),
    "elicitation/create": (mt.ElicitRequest, mt.ElicitResult),
    "roots/list": (mt.ListRootsRequest, mt.ListRootsResult),
}


def owner_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Whose namespaces a request may see and store under: over HTTP with bearer tokens, the id of the caller's
    token (`serve.http.RequestGuard` puts it on the request); otherwise None, which sees every namespace.

    Store with `owner=owner_of(ctx) or ""`.
    """
    request = ctx.request
    user = request.scope.get("user") if isinstance(request, Request) else None
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


class StdioClient:
    """The client on stdin/stdout: offprompt's own requests to it, with ids no client request uses."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._ids = itertools.count(1)
        self._pending: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self.capabilities: dict[str, Any] = {}
        #: The client connection (`ClientChannel.client`): the one on stdio. An attribute, not a property: every
        #: proxied call reads it twice (`Callers`), and a property is one more call each time.
        self.client: object = self
        self.owner = ""  # stdio has no tokens: everything is its one client's
        #: Whether the client has said `notifications/initialized`: nothing is told it before.
        self.initialized = False

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if not self.initialized:
            return
        try:
            await self._write({"jsonrpc": "2.0", "method": method, "params": params})
        except (TypeError, ValueError) as exc:  # a string JSON cannot carry: the notification, not the server, goes
            logger.warning("a %s could not be written to the client and was dropped: %s", method, exc)

    def supports(self, feature: str) -> bool:
        return feature in self.capabilities

    def declared(self, initialize: dict[str, Any]) -> None:
        """Remember what the client declared in its `initialize`."""
        params = initialize.get("params")
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}

    def take(self, message: dict[str, Any]) -> bool:
        """Whether `message` answers one of offprompt's requests (then it is taken here, not by the SDK)."""
        request_id = message.get("id")
        if "method" in message or not isinstance(request_id, str) or request_id not in self._pending:
            return False
        done, answer = self._pending[request_id]
        answer.append(message)
        done.set()
        return True

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        request_id = f"offprompt-{next(self._ids)}"
        done, answer = self._pending[request_id] = (anyio.Event(), [])
        try:
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            await self._write(message)
            await done.wait()
        finally:
            del self._pending[request_id]
        reply = answer[0]
        error = reply.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            raise MCPError(code if isinstance(code, int) else mt.INTERNAL_ERROR, str(error.get("message", "")))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}


class SessionChannel:
    """The client of one SDK request context: requests go on that request's stream, related to it."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx

    @property
    def client(self) -> object:
        # Each request has a session object of its own; the connection is the client's.
        return connection_of(self._ctx.session) or self._ctx.session

    @property
    def owner(self) -> str:
        return owner_of(self._ctx) or ""

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """On the client's own connection, which outlives the call (its answer may leave first: the boundary
        takes a moment); a log to a 2026-07-28 client on this request's stream, the only one allowed to carry it
        (and only if the request asked)."""
        session = self._ctx.session
        connection = connection_of(session)
        try:
            if connection is not None and session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await connection.notify(method, params)
            elif method == "notifications/message":
                with warnings.catch_warnings():  # deprecated at 2026-07-28 (opt-in per request)
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await session.send_log_message(
                        params.get("level", "info"),
                        params.get("data"),
                        params.get("logger"),
                        related_request_id=self._ctx.request_id,
                    )
        except Exception as exc:  # a client that went away, a value its stream cannot carry
            logger.debug("a %s could not be sent to its client: %r", method, exc)

    def supports(self, feature: str) -> bool:
        capabilities = self._ctx.session.client_capabilities
        return capabilities is not None and getattr(capabilities, feature, None) is not None

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        request_type, result_type = _TYPES[method]
        request = request_type.model_validate({"method": method, "params": params or {}})
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        result = await self._ctx.session.send_request(request, result_type, metadata=metadata)
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped


class ConnectionChannel:
    """One client connection's standalone stream (the GET stream of an HTTP session), not tied to a request."""

    def __init__(self, connection: Connection, owner: str = "") -> None:
        self._client = connection
        self.owner = owner

    @property
    def client(self) -> object:
        return self._client

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self._client.notify(method, params)
        except Exception as exc:  # a value its stream cannot carry
            logger.debug("a %s could not be sent to its client: %r", method, exc)

    def supports(self, feature: str) -> bool:
        capabilities = self._client.client_capabilities
        return capabilities is not None and getattr(capabilities, feature, None) is not None

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return dict(await self._client.send_raw_request(method, params))
