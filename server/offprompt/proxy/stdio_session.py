"""A lean MCP client session over a subprocess's stdin and stdout.

The proxy's hot path: a tool call relayed to a local server should cost
little more than the pipe. This session frames JSON-RPC lines itself and hands
results back as plain dicts (`request`) or, where offprompt needs to look
inside, as SDK models (`call_tool`, `list_tools`, ...): the same methods the
proxy uses on the SDK's `ClientSession`, which still serves HTTP and SSE.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as mt
from mcp.shared.exceptions import MCPError

from offprompt._version import __version__
from offprompt.jsonrpc import MAX_LINE_BYTES, dumps, loads
from offprompt.proxy import watchdog

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "offprompt", "version": __version__}
READ_CHUNK = 1 << 16
#: A line to a server longer than this is written a chunk of this size at a time.
_CHUNK_BYTES = 1 << 20

RawProgress = Callable[[dict[str, Any]], Awaitable[None]]
"""Gets the `params` of each `notifications/progress` for a request."""
NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
RequestHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers a request the server sends (`sampling/createMessage`, ...): its result, or an MCPError."""


Process = asyncio.subprocess.Process


class ConnectionClosedError(MCPError):
    """The server's pipes closed (it exited, or offprompt stopped it): the SDK's CONNECTION_CLOSED code, raised by
    this session alone. A server's own error answer with code -32000, the usual generic server error, is a plain
    `MCPError`: the server is alive and said something."""

    def __init__(self, reason: str = "it exited, or closed its output") -> None:
        super().__init__(mt.CONNECTION_CLOSED, reason)


def connection_closed(exc: MCPError, session: object) -> bool:
    """Whether `exc`, raised by `session`, says the connection closed rather than carrying the server's answer.
    The SDK's sessions (HTTP and SSE downstreams) raise CONNECTION_CLOSED with exactly this message and no data."""
    if isinstance(session, StdioSession) or isinstance(exc, ConnectionClosedError):
        return isinstance(exc, ConnectionClosedError)
    return exc.code == mt.CONNECTION_CLOSED and exc.message == "Connection closed" and exc.error.data is None


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = asyncio.Event()  # asyncio's own primitives: the relay runs on asyncio, and each is cheaper
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None


class StdioSession:
    """One initialized MCP session with a subprocess; requests may run concurrently."""

    def __init__(
        self,
        process: Process,
        on_notification: NotificationHandler,
        on_request: RequestHandler | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> None:
        self._process = process
        self._on_notification = on_notification
        self._on_request = on_request
        self._capabilities = dict(capabilities or {})  # what offprompt declares at initialize
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._progress: dict[str | int, RawProgress] = {}
        self._closed: BaseException | None = None
        self.server_capabilities: mt.ServerCapabilities | None = None
        self.failed_requests = 0  # requests cut off by the server going away; each reports that itself
        self._buffer = bytearray()  # what the server has written of its next message
        self._big_line = asyncio.Lock()  # held while a line longer than _CHUNK_BYTES is written in chunks
        self._last_read = time.monotonic()
        self.initialize_result: dict[str, Any] = {}

    # -- the wire ----------------------------------------------------------------

    async def _send(self, message: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        line = dumps(message)
        if len(line) <= _CHUNK_BYTES and not self._big_line.locked():
            # One line's writes have no await between them: lines never interleave, however many are sent.
            stdin.write(line)
            stdin.write(b"\n")
        else:
            # A big line (a stored output passed on) goes a chunk at a time, each written before the next is
            # copied into the transport's buffer: one more whole copy of it would be the call's peak. A line
            # sent meanwhile waits for it under the same lock.
            async with self._big_line:
                view = memoryview(line)
                sent = 0
                try:
                    while sent < len(line):
                        stdin.write(view[sent : sent + _CHUNK_BYTES])
                        sent += _CHUNK_BYTES
                        await stdin.drain()
                finally:
                    if sent < len(line):  # cancelled mid-line: the rest goes out whole, or the next line would
                        stdin.write(view[sent:])  # glue onto half of this one and the server read neither
                    stdin.write(b"\n")
        await stdin.drain()

    async def read_loop(self) -> None:
        """Read the server's lines until it closes stdout; then every waiting request fails."""
        try:
            async with anyio.create_task_group() as self._handlers:
                await self._read()
                self._handlers.cancel_scope.cancel()
        finally:
            self._fail(anyio.EndOfStream())

    @property
    def partial_line_bytes(self) -> int:
        """Bytes of a message the server has begun and not ended with a newline."""
        return len(self._buffer)

    def stalled_for(self) -> float:
        """Seconds since the server last wrote anything (a message still arriving is not stalled)."""
        return time.monotonic() - self._last_read

    def abandon(self, reason: str) -> None:
        """Give up on this server: every waiting request fails saying `reason`, and the process is killed (its
        next call starts it again)."""
        logger.error("a downstream server: %s; stopping it", reason)
        self._fail(ConnectionClosedError(reason), reason)
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    async def _read(self) -> None:
        assert self._process.stdout is not None
        buffer = self._buffer
        try:
            while chunk := await self._process.stdout.read(READ_CHUNK):
                self._last_read = time.monotonic()
                start = len(buffer)
                buffer += chunk
                # Search only the new bytes: a 10 MB line arrives in many chunks.
                end = buffer.find(b"\n", start)
                while end != -1:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    if line.strip():
                        await self._dispatch(line)
                    end = buffer.find(b"\n")
                if len(buffer) > MAX_LINE_BYTES:
                    self._overlong()
                    return
        except (ConnectionError, OSError) as exc:
            self._fail(exc)

    def _overlong(self) -> None:
        """A line past MAX_LINE_BYTES: its answer is lost, so the calls waiting fail and the server is stopped
        (its next call starts it again, as after a crash) instead of being buffered without end."""
        reason = (
            f"it wrote a message longer than {MAX_LINE_BYTES:,} bytes, which offprompt does not read; "
            "set OFFPROMPT_MAX_LINE_BYTES to allow longer ones"
        )
        logger.error("a downstream server: %s; stopping it", reason)
        self._fail(ConnectionClosedError(reason), reason)
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    async def _handle(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self._on_notification(method, params)
        except Exception:
            logger.exception("handling %s from a downstream failed", method)

    def _fail(self, exc: BaseException, reason: str = "it exited, or closed its output") -> None:
        if self._closed is None:
            self._closed = exc
        for pending in self._pending.values():
            if not pending.done.is_set():
                self.failed_requests += 1
                pending.error = ConnectionClosedError(reason)
                pending.done.set()

    async def _dispatch(self, line: bytes) -> None:
        try:
            message = loads(line)
        except ValueError:
            logger.warning("a downstream wrote a line of %d bytes that is not JSON; it was dropped", len(line))
            return
        if not isinstance(message, dict):
            return
        if "method" in message:
            if "id" in message:
                self._handlers.start_soon(self._answer_request, message)
            else:
                await self._notification(message["method"], message.get("params") or {})
            return
        pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if pending is None:
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {"message": str(message["error"])}
            code = error.get("code")
            pending.error = MCPError(
                code if isinstance(code, int) else mt.INTERNAL_ERROR, str(error.get("message", "")), error.get("data")
            )
        else:
            pending.result = message.get("result") or {}
        pending.done.set()

    async def _answer_request(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "ping":
            reply["result"] = {}
        elif self._on_request is None:
            reply["error"] = {"code": mt.METHOD_NOT_FOUND, "message": f"offprompt does not offer {method}"}
        else:
            try:
                reply["result"] = await self._on_request(method, params if isinstance(params, dict) else {})
            except MCPError as exc:
                reply["error"] = exc.error.model_dump(mode="json", exclude_none=True)
            except Exception as exc:  # the server must hear back, whatever went wrong on the way
                logger.exception("relaying %s from a downstream failed", method)
                reply["error"] = {"code": mt.INTERNAL_ERROR, "message": f"{method} failed in offprompt: {exc}"}
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self._send(reply)

    async def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress":
            token = params.get("progressToken")
            callback = self._progress.get(token) if isinstance(token, str | int) else None
            if callback is not None:
                try:
                    await callback(params)
                except Exception:  # a client that went away must not stop this reader
                    logger.debug("relaying progress failed", exc_info=True)
            return
        # Handled beside the reader: a handler that sends a request must not wait on its own reader.
        self._handlers.start_soon(self._handle, method, params)

    # -- requests ----------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None = None, progress: RawProgress | None = None
    ) -> dict[str, Any]:
        """Send a request and wait for its result, as the server wrote it."""
        if self._closed is not None:
            raise ConnectionClosedError()
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        params = dict(params or {})
        token: str | int | None = None
        if progress is not None:
            meta = dict(params.get("_meta") or {})
            token = meta.setdefault("progressToken", f"offprompt-{request_id}")
            params["_meta"] = meta
            self._progress[token] = progress
        if params:
            message["params"] = params
        pending = self._pending[request_id] = _Pending()
        try:
            await self._send(message)
            await pending.done.wait()
        except anyio.get_cancelled_exc_class():
            # Bounded: a server that stopped reading its stdin must not hold up a timeout or a shutdown.
            with anyio.move_on_after(1, shield=True):
                await self._cancel(request_id)
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise ConnectionClosedError() from None
        finally:
            del self._pending[request_id]
            if token is not None:
                self._progress.pop(token, None)
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    async def _cancel(self, request_id: int) -> None:
        if self._closed is None:
            params = {"requestId": request_id, "reason": "the client cancelled the call"}
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})

    async def initialize(self) -> None:
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": self._capabilities, "clientInfo": CLIENT_INFO}
        self.initialize_result = await self.request("initialize", params)
        self.server_capabilities = mt.ServerCapabilities.model_validate(
            self.initialize_result.get("capabilities") or {}
        )
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    # -- the ClientSession methods the proxy uses ------------------------------

    async def send_roots_list_changed(self) -> None:
        await self._send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})

    async def set_logging_level(self, level: mt.LoggingLevel) -> dict[str, Any]:
        return await self.request("logging/setLevel", {"level": level})

    async def complete(
        self,
        ref: mt.ResourceTemplateReference | mt.PromptReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> mt.CompleteResult:
        params: dict[str, Any] = {"ref": ref.model_dump(mode="json", by_alias=True), "argument": argument}
        if context_arguments:
            params["context"] = {"arguments": context_arguments}
        return mt.CompleteResult.model_validate(await self.request("completion/complete", params))

    async def subscribe_resource(self, uri: str) -> dict[str, Any]:
        return await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> dict[str, Any]:
        return await self.request("resources/unsubscribe", {"uri": uri})

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, progress_callback: Any = None
    ) -> mt.CallToolResult:
        progress: RawProgress | None = None
        if progress_callback is not None:

            async def progress(params: dict[str, Any]) -> None:
                await progress_callback(params.get("progress", 0), params.get("total"), params.get("message"))

        raw = await self.request("tools/call", {"name": name, "arguments": arguments or {}}, progress)
        return mt.CallToolResult.model_validate(raw)

    async def list_tools(self, *, params: mt.PaginatedRequestParams | None = None) -> mt.ListToolsResult:
        cursor = {"cursor": params.cursor} if params and params.cursor else None
        return mt.ListToolsResult.model_validate(await self.request("tools/list", cursor))

    async def list_prompts(self) -> mt.ListPromptsResult:
        return mt.ListPromptsResult.model_validate(await self.request("prompts/list"))

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> mt.GetPromptResult:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        return mt.GetPromptResult.model_validate(await self.request("prompts/get", params))

    async def list_resources(self) -> mt.ListResourcesResult:
        return mt.ListResourcesResult.model_validate(await self.request("resources/list"))

    async def list_resource_templates(self) -> mt.ListResourceTemplatesResult:
        return mt.ListResourceTemplatesResult.model_validate(await self.request("resources/templates/list"))

    async def read_resource(self, uri: str) -> mt.ReadResourceResult:
        return mt.ReadResourceResult.model_validate(await self.request("resources/read", {"uri": uri}))


async def open_process(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> Process:
    """Start the server with its stderr on ours (the client's log), as the other MCP clients do, in a process group
    of its own that the watchdog kills if offprompt is killed (`watchdog.py`)."""
    # A session of its own (uvloop takes no `process_group`): its group is the one the watchdog kills.
    own_group: dict[str, Any] = {} if sys.platform == "win32" else {"start_new_session": True}
    process = await asyncio.create_subprocess_exec(
        command,
        *args,
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        limit=READ_CHUNK,
        **own_group,
    )
    if own_group:
        watchdog.watch(process.pid)
    return process


#: How long a server gets to exit after its stdin closes, and again after SIGTERM, before it is killed: offprompt's
#: own client kills offprompt if it is slow to stop (Claude Code within half a second).
EXIT_GRACE_SECONDS = 0.2


async def close_process(process: Process, grace: float = EXIT_GRACE_SECONDS) -> None:
    """Close stdin, give the server `grace` seconds to exit, then terminate, then kill."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            with contextlib.suppress(ConnectionError, OSError):
                process.stdin.close()
        try:
            with anyio.move_on_after(grace):
                await process.wait()
                return
            try:
                _signal_group(process, signal.SIGTERM)
                with anyio.move_on_after(grace):
                    await process.wait()
                    return
                _signal_group(process, signal.SIGKILL)
                await process.wait()
            except ProcessLookupError:
                pass
        finally:
            _end_group(process)


def _signal_group(process: Process, stop: signal.Signals) -> None:
    """`stop` to the server and what it started (`npx` → node), or to the server alone on Windows."""
    if sys.platform == "win32":
        process.terminate() if stop == signal.SIGTERM else process.kill()
    else:
        os.killpg(process.pid, stop)


def _end_group(process: Process) -> None:
    """What the server started and left behind goes with it; the watchdog forgets the group."""
    if sys.platform == "win32":
        return
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    watchdog.forget(process.pid)
