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
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import PROTOCOL_VERSION_META_KEY
from pydantic import ValidationError

from offprompt.config import OffpromptSettings
from offprompt.errors import OffpromptError
from offprompt.memory import TaskMemory
from offprompt.policy import Thresholds, apply
from offprompt.proxy import Proxy, Route
from offprompt.stdio_session import dumps, loads
from offprompt.tools import TOOLS

logger = logging.getLogger(__name__)

LINE_LIMIT = 1 << 30  # one JSON-RPC message may be this large (a screenshot, a big file)
DRAIN_SECONDS = 10.0  # after the client closes stdin, how long calls in flight may still answer

Write = Callable[[dict[str, Any] | bytes], Awaitable[None]]


def _dumps(message: dict[str, Any]) -> bytes:
    return dumps(message) + b"\n"


def _tool_name(message: dict[str, Any]) -> str | None:
    """The tool a `tools/call` names, if it names one."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def _is_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


class FastLane:
    """Decides which client messages skip the SDK, and answers those."""

    def __init__(self, proxy: Proxy, memory: TaskMemory, settings: OffpromptSettings) -> None:
        self.proxy = proxy
        self.memory = memory
        self.settings = settings
        self.thresholds = Thresholds(tokens=settings.threshold_tokens, blob_bytes=settings.blob_threshold_bytes)
        # A body no longer than this many bytes is small under every rule: a token is at least one byte.
        self.inline_bytes = min(self.thresholds.tokens, self.thresholds.blob_bytes)
        self.initialized = False
        self.calls: dict[str | int, anyio.CancelScope] = {}
        self._call_ended = anyio.Event()

    def knows(self, message: dict[str, Any]) -> bool:
        """Whether the tool a call names can be called now: a memory tool, or one whose server has started
        (whether or not all have)."""
        name = _tool_name(message)
        return name is not None and (name in TOOLS or name in self.proxy.routes())

    def route(self, message: dict[str, Any]) -> Route | None:
        """The route of a call the fast lane can take, or None for the SDK (which also answers malformed ones)."""
        if not self.initialized or message.get("method") != "tools/call" or not _is_id(message.get("id")):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return None
        meta = params.get("_meta", {})
        arguments = params.get("arguments", {})
        if not isinstance(meta, dict) or PROTOCOL_VERSION_META_KEY in meta or not isinstance(arguments, dict | None):
            return None
        route = self.proxy.routes().get(params["name"])
        if route is None or not self.proxy.downstreams[route.server].raw_capable:
            return None
        return route if self.proxy.policy(route) != "always" else None

    def start(self, message: dict[str, Any], route: Route, write: Write, tg: TaskGroup) -> None:
        # The scope is registered before the task runs, so a cancellation read right after the call finds it.
        scope = anyio.CancelScope()
        self.calls[message["id"]] = scope
        tg.start_soon(self._call, message, route, write, scope)

    async def _call(self, message: dict[str, Any], route: Route, write: Write, scope: anyio.CancelScope) -> None:
        request_id = message["id"]
        params: dict[str, Any] = message["params"]
        token = params.get("_meta", {}).get("progressToken")
        progress = None
        if _is_id(token):

            async def progress(update: dict[str, Any]) -> None:
                update = {**update, "progressToken": token}  # the client's own token
                await write({"jsonrpc": "2.0", "method": "notifications/progress", "params": update})

        with scope:
            try:
                answer = await self._answer(route, params.get("arguments"), progress)
            except MCPError as exc:
                await write({"jsonrpc": "2.0", "id": request_id, "error": exc.error.model_dump(exclude_none=True)})
                return
            except Exception as exc:  # the one boundary of a fast-lane call: the server must not go down
                logger.exception("relaying %s.%s failed", route.server, route.tool)
                answer = _error(f"{route.server}.{route.tool} failed in offprompt ({type(exc).__name__}: {exc}).")
            finally:
                self.calls.pop(request_id, None)
                self._call_ended.set()
            if isinstance(answer, bytes):
                await write(b'{"jsonrpc":"2.0","id":' + dumps(request_id) + b',"result":' + answer + b"}\n")
            else:
                await write({"jsonrpc": "2.0", "id": request_id, "result": answer})

    async def _answer(self, route: Route, arguments: dict[str, Any] | None, progress: Any) -> bytes | dict[str, Any]:
        try:
            raw = await self.proxy.call_raw(route, arguments, progress)
        except OffpromptError as exc:
            return _error(str(exc))
        if not isinstance(raw, dict):
            return _error(f"{route.server}.{route.tool} answered with a result that is not an object.")
        body = dumps(raw)
        mode = self.proxy.policy(route)
        if mode == "never" or raw.get("isError") is True or len(body) <= self.inline_bytes:
            return body
        try:
            result = mt.CallToolResult.model_validate(raw)
        except ValidationError as exc:
            return _error(
                f"{route.server}.{route.tool} answered with a malformed tool result: {exc.errors()[0]['msg']}."
            )
        try:
            answer = await apply(
                self.memory,
                result,
                mode,
                self.thresholds,
                tool=f"{route.server}.{route.tool}",
                arguments=arguments,
                preview_tokens=self.settings.preview_tokens,
            )
        except OffpromptError as exc:
            return _error(f"The result of {route.server}.{route.tool} could not be stored off the prompt: {exc}")
        return body if answer is result else _dump(answer)

    def cancel(self, message: dict[str, Any]) -> bool:
        """Cancel a fast-lane call the client gave up on; False when the SDK owns that request."""
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        scope = self.calls.get(request_id) if _is_id(request_id) else None  # type: ignore[arg-type]
        if scope is None:
            return False
        scope.cancel()
        return True

    async def drain(self, grace: float) -> None:
        """Give calls in flight up to `grace` seconds to answer (the client closed stdin after sending them)."""
        with anyio.move_on_after(grace):
            while self.calls:
                self._call_ended = anyio.Event()
                await self._call_ended.wait()


def _error(text: str) -> dict[str, Any]:
    return _dump(mt.CallToolResult(content=[mt.TextContent(text=text)], is_error=True))


def _dump(result: mt.CallToolResult) -> dict[str, Any]:
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.pop("resultType", None)  # a 2026-era field; the fast lane serves 2025-era clients
    return dumped


def _is_pipe_like(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _WriteProtocol(asyncio.Protocol):
    """Tells writers to wait while the client's pipe is full."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()


async def _stdio_pipes() -> tuple[asyncio.StreamReader, asyncio.WriteTransport, _WriteProtocol]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    # Our own descriptors: nothing else in the process may read our stdin or write on the wire.
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(_WriteProtocol, stdout)
    return reader, transport, protocol


async def serve_stdio(server: Server[Any], lane: FastLane | None) -> None:
    """Serve `server` on stdin/stdout until the client closes stdin."""
    options = server.create_initialization_options()
    if not (_is_pipe_like(sys.stdin.fileno()) and _is_pipe_like(sys.stdout.fileno())):
        # Redirected from or to a file: the SDK's thread-backed transport handles that; no fast lane.
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)
        return
    reader, transport, protocol = await _stdio_pipes()
    connection = _Connection(transport, protocol, lane)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run, connection.sdk_in, connection.sdk_out, options)
        tg.start_soon(connection.relay_sdk_output)
        await connection.read_client(reader, tg)
        # The client closed stdin: what it asked before that still gets its answer, for a while.
        with anyio.move_on_after(DRAIN_SECONDS):
            await connection.drained()
        await connection.to_sdk.aclose()
        tg.cancel_scope.cancel()
    with anyio.move_on_after(DRAIN_SECONDS):
        await connection.flushed()
    transport.close()


class _Connection:
    """One client on stdio: its messages split between the fast lane and the SDK, their answers merged."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _WriteProtocol, lane: FastLane | None) -> None:
        self.transport = transport
        self.protocol = protocol
        self.lane = lane
        self.to_sdk, self.sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        self.sdk_out, self.from_sdk = anyio.create_memory_object_stream[SessionMessage](16)
        self.sdk_requests: set[str | int] = set()  # ids the SDK has yet to answer

    async def write(self, message: dict[str, Any] | bytes) -> None:
        self.transport.write(message if isinstance(message, bytes) else _dumps(message))
        await self.protocol.writable.wait()  # a client that reads slowly slows us down, not our memory

    async def relay_sdk_output(self) -> None:
        async with self.from_sdk:
            async for session_message in self.from_sdk:
                root = session_message.message
                if isinstance(root, mt.JSONRPCResponse | mt.JSONRPCError) and root.id is not None:
                    self.sdk_requests.discard(root.id)
                await self.write(root.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async def drained(self) -> None:
        """Until every request read so far is answered, by the fast lane or by the SDK."""
        while self.sdk_requests or (self.lane is not None and self.lane.calls):  # noqa: ASYNC110 - two sources
            await anyio.sleep(0.01)
        await self.flushed()

    async def flushed(self) -> None:
        """Until what was written has reached the client's pipe."""
        while self.transport.get_write_buffer_size():  # noqa: ASYNC110 - the transport has no event for it
            await anyio.sleep(0.01)

    async def to_sdk_send(self, message: Any) -> None:
        if isinstance(message, dict) and _is_id(message.get("id")) and "method" in message:
            self.sdk_requests.add(message["id"])
        try:
            parsed = mt.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except Exception as exc:
            await self.to_sdk.send(exc)
            return
        await self.to_sdk.send(SessionMessage(parsed))

    async def read_client(self, reader: asyncio.StreamReader, tg: TaskGroup) -> None:
        lane = self.lane
        while line := await reader.readline():
            if not line.strip():
                continue
            try:
                message = loads(line)
            except ValueError as exc:
                await self.to_sdk.send(exc)
                continue
            if lane is not None and isinstance(message, dict):
                method = message.get("method")
                if method == "notifications/initialized":
                    lane.initialized = True
                elif method == "notifications/cancelled" and lane.cancel(message):
                    continue
                elif method == "tools/call" and not lane.proxy.is_ready and not lane.knows(message):
                    if _is_id(message.get("id")):
                        self.sdk_requests.add(message["id"])  # in flight from now: a drain must wait for it
                    tg.start_soon(self._route_when_ready, message, tg)  # its server may be still starting
                    continue
                route = lane.route(message)
                if route is not None:
                    lane.start(message, route, self.write, tg)
                    continue
            await self.to_sdk_send(message)

    async def _route_when_ready(self, message: dict[str, Any], tg: TaskGroup) -> None:
        assert self.lane is not None
        name = _tool_name(message)
        if name is not None:
            await self.lane.proxy.route(name)  # until its server has started (or all have)
        else:
            await self.lane.proxy.ready()
        route = self.lane.route(message)
        if route is not None:
            self.lane.start(message, route, self.write, tg)  # registered in lane.calls before the id leaves
            self.sdk_requests.discard(message["id"])
        else:
            self.sdk_requests.discard(message.get("id"))
            await self.to_sdk_send(message)
