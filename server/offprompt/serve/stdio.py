"""Serving MCP over stdio: the client's pipes, framing, and the split between the fast lane and the SDK.

Every message goes to the SDK's `Server` except the proxied tool calls the
fast lane (`fastlane.py`) takes; their answers are merged on one stdout.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

from offprompt.jsonrpc import MAX_LINE_BYTES, PARSE_ERROR, decode, dumps, invalid_request
from offprompt.serve.client_channels import StdioClient
from offprompt.serve.fastlane import FastLane, is_request_id, tool_name
from offprompt.serve.prelude import Handoff

logger = logging.getLogger(__name__)

#: After the client closes stdin, how long proxied calls in flight may still answer: a client that closes stdin is
#: stopping offprompt, and kills it soon (the SDK's stdio client after 2 s).
DRAIN_SECONDS = 0.15
#: ... and offprompt's own requests (memory tools, lists): a script that pipes a session in and closes stdin gets
#: their answers, however busy the machine (a grep's worker process may take seconds to start at a load of 20). A
#: client that is stopping offprompt cuts this short: Claude Code signals at once, the SDK's stdio client sends
#: SIGTERM after 2 s, and either ends the process cleanly.
OWN_DRAIN_SECONDS = 30.0


def _dumps(message: dict[str, Any]) -> bytes:
    return dumps(message) + b"\n"


def _model_line(message: mt.JSONRPCMessage) -> bytes:
    """The SDK's message as a line; a lone surrogate in it (which pydantic cannot write) becomes U+FFFD."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    except PydanticSerializationError:
        # Its params or result are plain JSON values (a dict), which `dumps` writes with U+FFFD for each.
        return _dumps(message.model_dump(by_alias=True, exclude_unset=True))


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


async def _stdio_pipes(already_read: bytes) -> tuple[asyncio.StreamReader, asyncio.WriteTransport, _WriteProtocol]:
    """The client's pipes; `already_read`: what the prelude read from stdin, read again first."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    if already_read:
        reader.feed_data(already_read)
    # Our own descriptors: nothing else in the process may read our stdin or write on the wire.
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(_WriteProtocol, stdout)
    return reader, transport, protocol


async def serve_stdio(server: Server[Any], lane: FastLane | None, handoff: Handoff | None = None) -> None:
    """Serve `server` on stdin/stdout until the client closes stdin; `handoff`: what the prelude read and
    answered before the server was imported (`serve.prelude`)."""
    options = server.create_initialization_options()
    if not (_is_pipe_like(sys.stdin.fileno()) and _is_pipe_like(sys.stdout.fileno())):
        # Redirected from or to a file: the SDK's thread-backed transport handles that; no fast lane.
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)
        return
    reader, transport, protocol = await _stdio_pipes(handoff.read if handoff is not None else b"")
    connection = _Connection(transport, protocol, lane, handoff)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run, connection.sdk_in, connection.sdk_out, options)
        tg.start_soon(connection.relay_sdk_output)
        await connection.read_client(reader, tg)
        # The client closed stdin: what it asked before that still gets its answer, for a while.
        async with anyio.create_task_group() as drain:
            drain.start_soon(_within, DRAIN_SECONDS, connection.proxied_answered)
            drain.start_soon(_within, OWN_DRAIN_SECONDS, connection.own_answered)
        await connection.to_sdk.aclose()
        if lane is not None:
            lane.cancel_all()
        tg.cancel_scope.cancel()
    with anyio.move_on_after(DRAIN_SECONDS):
        await connection.flushed()
    transport.close()


class _FrontAnswers:
    """The requests the prelude answered before the server was imported (`serve.prelude`): their replayed answers
    are dropped, and a list whose real answer differs from the one given is followed by its `list_changed`."""

    def __init__(self, handoff: Handoff | None) -> None:
        self._given: dict[str | int, dict[str, Any]] = dict(handoff.answered) if handoff is not None else {}

    def answered(self, request_id: str | int, result: dict[str, Any]) -> Literal["same"] | bytes | None:
        """None: not answered yet, send it; else the prelude answered it already (drop this one), and the
        notification to send when the list it gave was not the real one."""
        given = self._given.pop(request_id, None)
        if given is None:
            return None
        kind = _LIST_KINDS.get(given["method"])
        if kind is None or given.get("result") == result or "resultType" in result:
            return "same"  # a 2026-era client has no session to tell: its next list is the real one
        return _dumps({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})

    def refused(self, request_id: str | int) -> bool:
        """Whether the prelude answered a request the server refused (its error is not sent: one answer each)."""
        given = self._given.pop(request_id, None)
        if given is None:
            return False
        if "result" in given:
            logger.warning("%s, answered at start from data, failed when replayed", given["method"])
        return True


_LIST_KINDS = {"tools/list": "tools", "prompts/list": "prompts"}


async def _within(seconds: float, wait: Callable[[], Awaitable[None]]) -> None:
    with anyio.move_on_after(seconds):
        await wait()


class _Connection:
    """One client on stdio: its messages split between the fast lane and the SDK, their answers merged."""

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        protocol: _WriteProtocol,
        lane: FastLane | None,
        handoff: Handoff | None,
    ) -> None:
        self.transport = transport
        self.protocol = protocol
        self.lane = lane
        self.to_sdk, self.sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        self.sdk_out, self.from_sdk = anyio.create_memory_object_stream[SessionMessage](16)
        self.sdk_requests: set[str | int] = set()  # ids the SDK has yet to answer
        self.routing: set[str | int] = set()  # proxied calls waiting for their server to start
        self.initialize_seen = False
        self.front = _FrontAnswers(handoff)
        self.client = StdioClient(self.write)  # the downstreams' requests to our client go out here
        if lane is not None:
            lane.client = self.client
            lane.proxy.attach_client(self.client)

    async def write(self, message: dict[str, Any] | bytes) -> None:
        self.transport.write(message if isinstance(message, bytes) else _dumps(message))
        if not self.protocol.writable.is_set():
            await self.protocol.writable.wait()  # a client that reads slowly slows us down, not our memory

    async def relay_sdk_output(self) -> None:
        async with self.from_sdk:
            async for session_message in self.from_sdk:
                root = session_message.message
                if isinstance(root, mt.JSONRPCResponse | mt.JSONRPCError) and root.id is not None:
                    self.sdk_requests.discard(root.id)
                if isinstance(root, mt.JSONRPCResponse):
                    kept = self.front.answered(root.id, root.result)
                    if kept is not None:  # the prelude gave this answer already
                        if isinstance(kept, bytes):
                            await self.write(kept)  # the list it gave was not the real one
                        continue
                if isinstance(root, mt.JSONRPCError) and root.id is not None and self.front.refused(root.id):
                    continue  # the prelude answered it: the client has its one answer
                await self.write(_model_line(root))

    async def proxied_answered(self) -> None:
        """Until every proxied call read so far has its answer (the fast lane's, and those waiting to be routed)."""
        while self.routing or (self.lane is not None and self.lane.calls):  # noqa: ASYNC110 - two sources
            await anyio.sleep(0.01)

    async def own_answered(self) -> None:
        """Until the SDK has answered every request it was given (offprompt's own tools, lists, and proxied calls
        off the fast lane)."""
        while self.sdk_requests:  # noqa: ASYNC110 - answers leave through relay_sdk_output
            await anyio.sleep(0.01)

    async def flushed(self) -> None:
        """Until what was written has reached the client's pipe."""
        while self.transport.get_write_buffer_size():  # noqa: ASYNC110 - the transport has no event for it
            await anyio.sleep(0.01)

    async def to_sdk_send(self, message: Any) -> None:
        if isinstance(message, dict) and is_request_id(message.get("id")) and "method" in message:
            self.sdk_requests.add(message["id"])
        try:
            parsed = mt.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except Exception as exc:
            await self.to_sdk.send(exc)
            return
        await self.to_sdk.send(SessionMessage(parsed))

    async def _refused_before_initialize(self, message: dict[str, Any]) -> bool:
        """A request before `initialize` is answered here, saying so (the SDK answers -32602 "Invalid request
        parameters", which sends a client looking for a fault in its parameters)."""
        method = message.get("method")
        if method in ("initialize", "server/discover"):
            # Requests pipelined after it are served in order, as the SDK does. `server/discover` is how a
            # 2026-07-28 client starts (it sends no initialize): the SDK answers it, and what follows.
            self.initialize_seen = True
        if self.initialize_seen or method in (None, "ping") or not is_request_id(message.get("id")):
            return False
        error = {
            "code": mt.INVALID_REQUEST,
            "message": f"Server not initialized: send initialize (then notifications/initialized) before {method}",
        }
        await self.write({"jsonrpc": "2.0", "id": message["id"], "error": error})
        return True

    async def parse_error(self, reason: str) -> None:
        """Answer a line that is no JSON-RPC message, as JSON-RPC says (no id to answer to), and read on."""
        error = {"code": PARSE_ERROR, "message": f"Parse error: {reason}"}
        await self.write({"jsonrpc": "2.0", "id": None, "error": error})

    async def read_client(self, reader: asyncio.StreamReader, tg: TaskGroup) -> None:
        lane = self.lane
        while (line := await _read_line(reader)) != b"":
            if line is None:
                await self.parse_error(
                    f"a message longer than {MAX_LINE_BYTES:,} bytes was dropped (set OFFPROMPT_MAX_LINE_BYTES "
                    "to allow longer ones)"
                )
                continue
            if not line.strip():
                continue
            try:
                decoded = decode(line)
            except ValueError as exc:
                await self.parse_error(str(exc))
                continue
            message = decoded.value  # its lone surrogates U+FFFD, and where they were in `replaced`
            if (refusal := invalid_request(message, decoded.replaced)) is not None:
                await self.write(refusal)  # JSON-RPC's -32600: the SDK would drop it without an answer
                continue
            if (
                isinstance(message, dict)
                and not self.initialize_seen
                and await self._refused_before_initialize(message)
            ):
                continue
            if lane is not None and isinstance(message, dict):
                method = message.get("method")
                if method is None and self.client.take(message):
                    continue  # the client's answer to a downstream's request
                if method == "tools/call":
                    taken = lane.take(message, self.write)
                    if taken == "taken":
                        continue
                    if taken == "wait":
                        if is_request_id(message.get("id")):
                            self.routing.add(message["id"])  # in flight from now: a drain must wait for it
                        tg.start_soon(self._route_when_ready, message, tg)  # its server may be still starting
                        continue
                elif method == "initialize":
                    self.client.declared(message)
                elif method == "notifications/roots/list_changed":
                    tg.start_soon(lane.proxy.roots_changed)
                elif method == "notifications/initialized":
                    lane.initialized = self.client.initialized = True  # the downstreams' news may go to it now
                elif method == "notifications/cancelled" and lane.cancel(message):
                    continue
            if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
                self._given_up(message.get("params"))
            await self.to_sdk_send(message)

    def _given_up(self, params: Any) -> None:
        """A request the client cancelled may get no answer (the specification lets the server drop it): a drain
        after stdin closes waits for it no more."""
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        if is_request_id(cancelled):
            self.sdk_requests.discard(cancelled)

    async def _route_when_ready(self, message: dict[str, Any], tg: TaskGroup) -> None:
        assert self.lane is not None
        name = tool_name(message)
        if name is not None:
            await self.lane.proxy.route(name)  # until its server has started (or all have)
        else:
            await self.lane.proxy.ready()
        route = self.lane.route(message)
        if route is not None:
            self.lane.start(message, route, self.write)  # registered in lane.calls before the id leaves
            self.routing.discard(message["id"])
        else:
            await self.to_sdk_send(message)  # in sdk_requests before it leaves routing
            self.routing.discard(message.get("id"))


async def _read_line(reader: asyncio.StreamReader) -> bytes | None:
    """The next line; b"" when stdin has closed; None for a line longer than MAX_LINE_BYTES, which is dropped
    a limit's worth at a time (never held whole) up to its newline."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return exc.partial  # the last line had no newline (b"": stdin closed)
    except asyncio.LimitOverrunError:
        pass
    while True:
        try:
            await reader.readuntil(b"\n")
            return None
        except asyncio.LimitOverrunError as exc:
            # `consumed`: the bytes before the newline, or all buffered ones when none has come yet
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return b""
