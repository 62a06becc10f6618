"""Each path that relays a tool result goes through the one result boundary exactly once per call.

The SDK path (`serve/app.py`), the stdio fast lane (`serve/fastlane.py`) and `offprompt.wrap`
(`middleware.py`) each make one call against a real server while a spy on their `ResultBoundary` instance
records what they asked of it: a second pass would store a result twice (two references, one of them
dead to the model) or count it twice in `offprompt stats`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

import offprompt
from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.results import ResultBoundary
from offprompt.serve.app import build_server
from offprompt.serve.fastlane import FastLane

from .support import REPO

pytestmark = pytest.mark.anyio

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
CONFIG = {"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}}
STORED = 3000  # log lines of `counter__lines`: ~12,000 tokens, over the 4,000 threshold
INLINE = 3


def spy(boundary: ResultBoundary) -> list[str]:
    """Record each call of the boundary's entry points (`answer`, `relay`) and of its decision (`settle`)."""
    seen: list[str] = []

    def recording(name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return await method(*args, **kwargs)

        return call

    for name in ("answer", "relay", "settle"):
        setattr(boundary, name, recording(name, getattr(boundary, name)))
    return seen


async def stored_then_inline(client: Client, tool: str, seen: list[str]) -> mt.CallToolResult:
    """Call `tool` for a result over the threshold, then for a small one; each call asks the boundary once for
    an answer and once for its decision. The small one's result, for the caller's own checks."""
    stored = await client.call_tool(tool, {"count": STORED})
    assert stored.meta is not None
    assert "offprompt" in stored.meta
    assert seen == ["answer", "settle"]
    seen.clear()
    inline = await client.call_tool(tool, {"count": INLINE})
    assert seen == ["answer", "settle"]
    return inline


def is_reference(result: dict[str, Any]) -> bool:
    return "offprompt" in (result.get("_meta") or {})


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    proxy = Proxy(parse_config(CONFIG).servers)
    async with proxy.running():
        with anyio.fail_after(60):
            # The proxy has no event for "this server is up": poll it, bounded.
            while proxy.raw_route("counter__lines") is None:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        yield proxy


async def test_the_sdk_path_settles_each_call_once(memory: TaskMemory, proxy: Proxy) -> None:
    boundary = ResultBoundary(memory)
    seen = spy(boundary)
    async with Client(build_server(memory, proxy, results=boundary)) as client:
        inline = await stored_then_inline(client, "counter__lines", seen)
        assert inline.meta is None or "offprompt" not in inline.meta
    assert len(memory.catalog.newest()) == 1


async def test_the_fast_lane_settles_each_call_once(memory: TaskMemory, proxy: Proxy) -> None:
    boundary = ResultBoundary(memory)
    seen = spy(boundary)
    lane = FastLane(proxy, boundary)
    lane.initialized = True
    written: list[dict[str, Any] | bytes] = []

    async def write(message: dict[str, Any] | bytes) -> None:
        written.append(message)

    async def call(request_id: int, count: int) -> dict[str, Any] | bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
        message["params"] = {"name": "counter__lines", "arguments": {"count": count}}
        assert lane.take(message, write) == "taken"
        with anyio.fail_after(30):
            while lane.calls:  # noqa: ASYNC110 - the lane's calls are plain asyncio tasks, with no event to wait on
                await anyio.sleep(0.01)
        return written.pop()

    stored = await call(1, STORED)
    assert isinstance(stored, dict)
    assert is_reference(stored["result"])
    assert seen == ["relay", "settle"]
    seen.clear()
    inline = await call(2, INLINE)  # relayed as the downstream's bytes: the byte shortcut decides, no settle
    assert isinstance(inline, bytes)
    assert b"handled request 2" in inline
    assert seen == ["relay"]
    assert len(memory.catalog.newest()) == 1


async def test_wrap_settles_each_call_once(memory: TaskMemory) -> None:
    server = MCPServer("logs")

    @server.tool()
    def lines(count: int) -> str:
        """`count` log lines."""
        return "".join(f"12:00:{i % 60:02d} INFO handled request {i}\n" for i in range(count))

    middleware = offprompt.wrap(server, memory=memory)
    seen = spy(middleware.results)
    async with Client(server) as client:
        inline = await stored_then_inline(client, "lines", seen)
        assert isinstance(inline.content[0], mt.TextContent)
        assert "handled request 2" in inline.content[0].text
    assert len(memory.catalog.newest()) == 1
