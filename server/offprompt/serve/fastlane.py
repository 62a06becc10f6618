"""The fast lane: proxied tool calls relayed as JSON, with no model validation on either side.

It takes one kind of message: a `tools/call` of a proxied tool on a local
(stdio) server, from a client on the handshake era of the protocol
(2025-11-25 and before: Claude Desktop, Cursor, Claude Code today). The
downstream's answer is checked for size on its bytes and, when small,
written back to the client as it came. Only a result that may go off the
prompt is parsed, and then it takes the same policy as every other call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp.shared.dispatcher import as_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp_types import PROTOCOL_VERSION_META_KEY

from offprompt.jsonrpc import dumps
from offprompt.notifications import PROGRESS, NotificationBoundary
from offprompt.proxy.client_features import ClientChannel
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.notification import Notification
from offprompt.proxy.routes import Route
from offprompt.results import CallSite, ResultBoundary
from offprompt.tools import TOOLS

logger = logging.getLogger(__name__)

Write = Callable[[dict[str, Any] | bytes], Awaitable[None]]
#: What became of a client's `tools/call` (`FastLane.take`).
Taken = Literal["taken", "sdk", "wait"]


def tool_name(message: dict[str, Any]) -> str | None:
    """The tool a `tools/call` names, if it names one."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def is_request_id(value: object) -> bool:
    return as_request_id(value) is not None  # the SDK's rule: a str or an int, never a bool


class FastLane:
    """Decides which client messages skip the SDK, and answers those through the result boundary."""

    def __init__(self, proxy: Proxy, results: ResultBoundary) -> None:
        self.proxy = proxy
        self.results = results
        self.notes = NotificationBoundary(results.redactor)  # what the downstreams say beside their results
        self.client: ClientChannel | None = None  # answers the downstreams' sampling, elicitation, roots
        self.initialized = False
        self.calls: dict[str | int, asyncio.Task[None]] = {}

    def knows(self, message: dict[str, Any]) -> bool:
        """Whether the tool a call names can be called now: a memory tool, or one whose server has started
        (whether or not all have)."""
        name = tool_name(message)
        return name is not None and (name in TOOLS or name in self.proxy.routes())

    def route(self, message: dict[str, Any]) -> Route | None:
        """The route of a call the fast lane can take, or None for the SDK (which also answers malformed ones)."""
        if not self.initialized or message.get("method") != "tools/call" or not is_request_id(message.get("id")):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return None
        meta = params.get("_meta", {})
        arguments = params.get("arguments", {})
        if not isinstance(meta, dict) or PROTOCOL_VERSION_META_KEY in meta or not isinstance(arguments, dict | None):
            return None
        if params.get("task") is not None:
            return None  # a task-augmented call creates a task: the SDK path relays those (serve/task_handlers.py)
        return self.proxy.raw_route(params["name"])

    def take(self, message: dict[str, Any], write: Write) -> Taken:
        """A client's `tools/call`: started here ("taken"), for the SDK ("sdk"), or to wait for its server ("wait": the
        servers are still starting and none lists its tool yet). One call per message, as the stdio loop reads."""
        if not self.proxy.is_ready and not self.knows(message):
            return "wait"
        route = self.route(message)
        if route is None:
            return "sdk"
        self.start(message, route, write)
        return "taken"

    def start(self, message: dict[str, Any], route: Route, write: Write) -> None:
        """Answer the call in a task of its own. A plain asyncio task: a task group's costs about five times as
        much (anyio wraps each in a cancel scope and an event), which every tiny call paid before it went out.
        The task is registered before it runs, so a cancellation read right after the call finds it."""
        request_id = message["id"]
        task = asyncio.get_running_loop().create_task(self._call(message, route, write))
        self.calls[request_id] = task
        task.add_done_callback(lambda done: self._ended(request_id, done))

    def _ended(self, request_id: str | int, task: asyncio.Task[None]) -> None:
        if self.calls.get(request_id) is task:
            del self.calls[request_id]
        if not task.cancelled() and (exc := task.exception()) is not None:  # relay answers every failure itself
            logger.error("a fast-lane call failed in offprompt", exc_info=exc)

    async def _call(self, message: dict[str, Any], route: Route, write: Write) -> None:
        request_id = message["id"]
        params: dict[str, Any] = message["params"]
        token = params.get("_meta", {}).get("progressToken")
        progress = None
        if is_request_id(token):

            async def progress(update: dict[str, Any]) -> None:
                note = Notification(route.server, PROGRESS, update, route.secrets, route.mode == "always")
                params = await self.notes.progress(note, token, "")  # the client's own token, stdio's one owner
                if params is not None:
                    await write({"jsonrpc": "2.0", "method": PROGRESS, "params": params})

        site = CallSite(
            route.server,
            route.tool,
            route.mode,
            params.get("arguments"),
            intent=route.intent,
            secrets=route.secrets,
            secrets_allow=route.secrets_allow,
            schema=route.schema,
            max_argument_bytes=route.max_argument_bytes,
            timeout=self.proxy.timeout(route),
        )

        async def fetch(arguments: dict[str, Any] | None) -> dict[str, Any]:
            return await self.proxy.call_raw(route, arguments, progress, self.client)

        try:
            answer = await self.results.relay(site, fetch)
        except MCPError as exc:
            await write({"jsonrpc": "2.0", "id": request_id, "error": exc.error.model_dump(exclude_none=True)})
            return
        except asyncio.CancelledError:
            return  # the client cancelled the call (or went away): nobody waits for its answer
        if isinstance(answer, bytes):
            await write(b'{"jsonrpc":"2.0","id":' + dumps(request_id) + b',"result":' + answer + b"}\n")
        else:
            await write({"jsonrpc": "2.0", "id": request_id, "result": answer})

    def cancel(self, message: dict[str, Any]) -> bool:
        """Cancel a fast-lane call the client gave up on; False when the SDK owns that request."""
        params = message.get("params")
        request_id = cancelled_request_id_from_params(params if isinstance(params, dict) else None)
        task = self.calls.get(request_id) if request_id is not None else None
        if task is None:
            return False
        task.cancel()
        return True

    def cancel_all(self) -> None:
        """Cancel the calls still in flight (the client has gone and the drain is over)."""
        for task in self.calls.values():
            task.cancel()
