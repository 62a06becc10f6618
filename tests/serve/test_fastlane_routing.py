"""Which calls the fast lane takes, decided in process against a real downstream (tests/servers/counter.py).

Only a 2025-era `tools/call` of a proxied tool on a running local server, well formed, takes it; everything else
(a 2026-07-28 request, a memory tool, a malformed call, a notification) goes to the SDK, which validates it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp_types import PROTOCOL_VERSION_META_KEY

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.results import ResultBoundary
from offprompt.serve.fastlane import FastLane, tool_name

from ..support import REPO

pytestmark = pytest.mark.anyio

COUNTER = str(REPO / "tests" / "servers" / "counter.py")


@pytest.fixture
async def lane(memory: TaskMemory) -> AsyncIterator[FastLane]:
    config = parse_config({"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}})
    proxy = Proxy(config.servers)
    async with proxy.running():
        with anyio.fail_after(60):
            # The proxy has no event for "this server is up": poll it, bounded.
            while "counter__echo" not in proxy.routes() or not proxy.downstreams["counter"].raw_capable:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        yield FastLane(proxy, ResultBoundary(memory))


def call(name: Any = "counter__echo", request_id: Any = 7, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": name, **params}}
    if request_id is not None:
        message["id"] = request_id
    return message


async def test_a_2025_call_of_a_proxied_tool_takes_the_fast_lane_once_initialized(lane: FastLane) -> None:
    assert lane.route(call()) is None  # before `initialized`, the SDK answers everything
    lane.initialized = True
    route = lane.route(call(arguments={"text": "hi"}))
    assert route is not None
    assert (route.server, route.tool) == ("counter", "echo")
    assert lane.route(call(request_id="a-string-id")) is not None
    assert lane.route(call(arguments=None)) is not None
    assert lane.route(call(_meta={"progressToken": 3})) is not None


MISROUTED = [
    call(_meta={PROTOCOL_VERSION_META_KEY: "2026-07-28"}),  # a 2026-07-28 request: the SDK path
    call(name="memory_list"),  # offprompt's own tools
    call(name="nosuch__tool"),
    call(name=3),
    call(request_id=None),  # a notification has no answer to relay
    call(request_id=True),  # a bool is not a JSON-RPC id
    call(request_id=1.5),
    call(arguments=["text"]),
    call(_meta="not an object"),
    {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"name": "counter__echo"}},
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "counter__echo"},
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call"},
]


async def test_anything_else_goes_to_the_sdk(lane: FastLane) -> None:
    lane.initialized = True
    for message in MISROUTED:
        assert lane.route(message) is None, message


def test_tool_name_reads_only_a_string_name() -> None:
    assert tool_name(call()) == "counter__echo"
    assert tool_name(call(name=5)) is None
    assert tool_name({"params": "x"}) is None
    assert tool_name({}) is None
