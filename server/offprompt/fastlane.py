"""Serving MCP over stdio with a fast lane for proxied tool calls.

Every message goes to the SDK's `Server`, except one kind: a `tools/call` of a
proxied tool on a local (stdio) server, from a client on the handshake era of
the protocol (2025-11-25 and before: Claude Desktop, Cursor, Claude Code
today). That call is relayed as JSON: the downstream's answer is checked for
size on its bytes and, when small, written back to the client as it came,
with no model validation on either side. Only a result that may go off the
prompt is parsed, and then it takes the same policy as every other call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import PROTOCOL_VERSION_META_KEY

from offprompt.config import OffpromptSettings
from offprompt.errors import OffpromptError
from offprompt.memory import TaskMemory
from offprompt.policy import Thresholds, apply
from offprompt.proxy import Proxy, Route
from offprompt.stdio_session import dumps, loads

logger = logging.getLogger(__name__)

LINE_LIMIT = 1 << 30  # one JSON-RPC message may be this large (a screenshot, a big file)

Write = Callable[[dict[str, Any] | bytes], Awaitable[None]]


def _dumps(message: dict[str, Any]) -> bytes:
    return dumps(message) + b"\n"


class FastLane:
    """Decides which client messages skip the SDK, and answers those."""

    def __init__(self, proxy: Proxy, memory: TaskMemory, settings: OffpromptSettings) -> None:
        self.proxy = proxy
        self.memory = memory
        self.settings = settings
        self.thresholds = Thresholds(tokens=settings.threshold_tokens, blob_bytes=settings.blob_threshold_bytes)
        self.initialized = False
        self.calls: dict[Any, anyio.CancelScope] = {}

    def route(self, message: dict[str, Any]) -> Route | None:
        """The route of a call the fast lane can take, or None for the SDK."""
        if not self.initialized or message.get("method") != "tools/call" or "id" not in message:
            return None
        params = message.get("params")
        if not isinstance(params, dict) or PROTOCOL_VERSION_META_KEY in (params.get("_meta") or {}):
            return None
        route = self.proxy.routes().get(str(params.get("name")))
        if route is None or not self.proxy.downstreams[route.server].raw_capable:
            return None
        return route if self.proxy.policy(route) != "always" else None

    async def call(self, message: dict[str, Any], route: Route, write: Write) -> None:
        request_id = message["id"]
        params: dict[str, Any] = message["params"]
        token = (params.get("_meta") or {}).get("progressToken")
        progress = None
        if token is not None:

            async def progress(update: dict[str, Any]) -> None:
                update = {**update, "progressToken": token}  # the client's own token
                await write({"jsonrpc": "2.0", "method": "notifications/progress", "params": update})

        with anyio.CancelScope() as scope:
            self.calls[request_id] = scope
            try:
                answer = await self._answer(route, params.get("arguments"), progress)
            except MCPError as exc:
                await write({"jsonrpc": "2.0", "id": request_id, "error": exc.error.model_dump(exclude_none=True)})
                return
            finally:
                self.calls.pop(request_id, None)
            if isinstance(answer, bytes):
                await write(b'{"jsonrpc":"2.0","id":' + dumps(request_id) + b',"result":' + answer + b"}\n")
            else:
                await write({"jsonrpc": "2.0", "id": request_id, "result": answer})

    async def _answer(self, route: Route, arguments: Any, progress: Any) -> bytes | dict[str, Any]:
        try:
            raw = await self.proxy.call_raw(route, arguments, progress)
        except OffpromptError as exc:
            return _dump(mt.CallToolResult(content=[mt.TextContent(text=str(exc))], is_error=True))
        body = dumps(raw)
        mode = self.proxy.policy(route)
        # A token is at least one byte: a result no longer than the threshold in bytes is surely small.
        if mode == "never" or raw.get("isError") or len(body) <= self.thresholds.tokens:
            return body
        result = mt.CallToolResult.model_validate(raw)
        answer = await apply(
            self.memory,
            result,
            mode,
            self.thresholds,
            tool=f"{route.server}.{route.tool}",
            arguments=arguments,
            preview_tokens=self.settings.preview_tokens,
        )
        return body if answer is result else _dump(answer)

    def cancel(self, message: dict[str, Any]) -> bool:
        """Cancel a fast-lane call the client gave up on; False when the SDK owns that request."""
        request_id = (message.get("params") or {}).get("requestId")
        scope = self.calls.get(request_id)
        if scope is None:
            return False
        scope.cancel()
        return True


def _dump(result: mt.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _stdio_pipes() -> tuple[asyncio.StreamReader, asyncio.WriteTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    # Our own descriptors: nothing else in the process may read our stdin or write on the wire.
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout)
    return reader, transport


async def serve_stdio(server: Server[Any], lane: FastLane | None) -> None:
    """Serve `server` on stdin/stdout until the client closes stdin."""
    reader, transport = await _stdio_pipes()

    async def write(message: dict[str, Any] | bytes) -> None:
        transport.write(message if isinstance(message, bytes) else _dumps(message))

    to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](16)

    async def relay_sdk_output() -> None:
        async with from_sdk:
            async for session_message in from_sdk:
                transport.write(
                    session_message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                )

    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run, sdk_in, sdk_out, server.create_initialization_options())
        tg.start_soon(relay_sdk_output)
        await _read_client(reader, to_sdk, lane, write, tg)
        tg.cancel_scope.cancel()
    transport.close()


async def _read_client(
    reader: asyncio.StreamReader,
    to_sdk: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    lane: FastLane | None,
    write: Write,
    tg: TaskGroup,
) -> None:
    async with to_sdk:
        while line := await reader.readline():
            if not line.strip():
                continue
            try:
                message = loads(line)
            except ValueError as exc:
                await to_sdk.send(exc)
                continue
            if lane is not None and isinstance(message, dict):
                method = message.get("method")
                if method == "notifications/initialized":
                    lane.initialized = True
                elif method == "notifications/cancelled" and lane.cancel(message):
                    continue
                route = lane.route(message)
                if route is not None:
                    tg.start_soon(lane.call, message, route, write)
                    continue
            try:
                parsed = mt.jsonrpc_message_adapter.validate_python(message, by_name=False)
            except Exception as exc:
                await to_sdk.send(exc)
                continue
            await to_sdk.send(SessionMessage(parsed))
