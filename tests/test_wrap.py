"""`offprompt.wrap`: the same policy inside a Python MCPServer, no proxy hop."""

from __future__ import annotations

from typing import Any

import mcp_types as mt
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

import offprompt
from offprompt.memory.task_memory import TaskMemory

pytestmark = pytest.mark.anyio


def build(memory: TaskMemory) -> MCPServer:
    server = MCPServer("logs")

    @server.tool()
    def tail(lines: int) -> str:
        """The last lines of the log."""
        return "".join(f"12:00:{i % 60:02d} ERROR disk {i} is full\n" for i in range(lines))

    @server.tool()
    def password() -> str:
        """A secret."""
        return "correct horse battery staple"

    offprompt.wrap(server, memory=memory, tools={"password": "always"}, threshold_tokens=500)
    return server


def meta(result: mt.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    return dict(result.meta["offprompt"])


async def test_wrapped_server_stores_large_and_sensitive_results(memory: TaskMemory) -> None:
    async with Client(build(memory)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"memory_load", "memory_query", "tail", "password"} <= set(tools)
        assert tools["tail"].output_schema is None

        small = await client.call_tool("tail", {"lines": 3})
        assert small.structured_content == {
            "result": "".join(f"12:00:{i:02d} ERROR disk {i} is full\n" for i in range(3))
        }

        big = await client.call_tool("tail", {"lines": 2000})
        ref = meta(big)
        block = big.content[0]
        assert isinstance(block, mt.TextContent)
        assert block.text.startswith('Output of "logs.tail" was stored in memory')
        grep = await client.call_tool(
            "memory_grep", {"pattern": "disk 1999 ", "artifact_namespace": ref["artifact_namespace"]}
        )
        assert meta(grep)["matches"][0]["text"] == "12:00:19 ERROR disk 1999 is full"

        secret = await client.call_tool("password", {})
        assert "horse" not in str(secret.model_dump())
        loaded = await client.call_tool("memory_load", {"artifact_namespace": meta(secret)["artifact_namespace"]})
        first = loaded.content[0]
        assert isinstance(first, mt.TextContent)
        assert first.text == "correct horse battery staple"


async def test_a_result_bigger_than_the_quota_is_an_error_that_says_how_to_raise_it(memory: TaskMemory) -> None:
    memory.max_bytes = 20_000
    async with Client(build(memory)) as client:
        big = await client.call_tool("tail", {"lines": 2000})  # ~62 KB of log, over the whole quota
        assert big.is_error
        block = big.content[0]
        assert isinstance(block, mt.TextContent)
        assert "more than this memory's whole quota (max_bytes 20,000)" in block.text
        assert '"max_bytes": N' in block.text
        listed = await client.call_tool("memory_list", {})
        assert meta(listed)["namespaces"] == []  # no reference was handed out, none can die


async def test_a_sensitive_output_is_searched_only_when_named(memory: TaskMemory) -> None:
    # `password` is stored under `always`: a query or grep across the memory must not read it back to the model.
    async with Client(build(memory)) as client:
        secret = meta(await client.call_tool("password", {}))["artifact_namespace"]
        await client.call_tool("tail", {"lines": 2000})
        query = await client.call_tool("memory_query", {"query": "correct horse battery staple"})
        assert "horse" not in str(query.model_dump())
        assert meta(query)["sensitive_left_out"] == 1
        grep = await client.call_tool("memory_grep", {"pattern": "horse"})
        assert meta(grep)["matches"] == []
        assert f"Left out 1 sensitive output (of an always-stored tool: {secret})" in str(grep.content)
        named = await client.call_tool("memory_grep", {"pattern": "horse", "artifact_namespace": secret})
        assert meta(named)["matches"][0]["text"] == "correct horse battery staple"
