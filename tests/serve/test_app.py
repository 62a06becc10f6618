"""The MCP server itself (serve/app.py): what it keeps per client."""

from __future__ import annotations

import gc

import pytest
from mcp import Client
from mcp.server.connection import Connection

from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

pytestmark = pytest.mark.anyio


def live_connections() -> int:
    gc.collect()
    return sum(isinstance(o, Connection) for o in gc.get_objects())


async def test_clients_that_came_and_went_leave_no_connection_behind(memory: TaskMemory) -> None:
    server = build_server(memory)
    before = live_connections()
    for _ in range(20):
        async with Client(server) as client:
            await client.list_tools()
            await client.call_tool("memory_list", {})
    # An HTTP server meets a new client (or, at 2026-07-28, a new connection per request) all day long.
    assert live_connections() - before <= 1
