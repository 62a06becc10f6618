"""Every small result is the same asked directly or through offprompt (the mcp-proxy way), in one process.

The downstream is a real SDK server in this process; offprompt's proxy reaches it through an injected
`connect`, so these run in milliseconds and need no subprocess. The subprocess tests in test_proxy.py keep
the transports covered.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from ..support import meta
from .inprocess import in_process

pytestmark = pytest.mark.anyio

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(64)).decode()

demo = MCPServer("demo")


class Weather(BaseModel):
    city: str
    celsius: float


@demo.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@demo.tool()
def weather(city: str) -> Weather:
    """Structured output."""
    return Weather(city=city, celsius=21.5)


@demo.tool()
def picture() -> list[mt.ContentBlock]:
    """An image and a caption."""
    return [mt.ImageContent(data=PIXEL, mime_type="image/png"), mt.TextContent(text="a pixel")]


@demo.tool()
def document() -> list[mt.ContentBlock]:
    """An embedded resource and a link."""
    return [
        mt.EmbeddedResource(resource=mt.TextResourceContents(uri="file:///a.txt", text="ä b", mime_type="text/plain")),
        mt.ResourceLink(uri="file:///b.txt", name="b.txt"),
    ]


@demo.tool()
def refuse(reason: str) -> str:
    """A tool error."""
    raise ToolError(reason)


@demo.tool()
def log(lines: int) -> str:
    """A large text on demand."""
    return "".join(f"2026-11-30 INFO request {i} handled by worker {i % 7}\n" for i in range(lines))


Call = Callable[[str, dict[str, Any]], Awaitable[mt.CallToolResult]]
CASES: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": "héllo 🎉"}),
    ("weather", {"city": "Lyon"}),
    ("picture", {}),
    ("document", {}),
    ("refuse", {"reason": "not today"}),
    ("log", {"lines": 20}),
]


@asynccontextmanager
async def proxied(memory: TaskMemory, off_prompt: str = "auto") -> AsyncIterator[Call]:
    config = parse_config({"mcpServers": {"demo": {"command": "in-process", "off_prompt": off_prompt}}})
    proxy = Proxy(config.servers, connect=in_process({"demo": demo}))
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:

        async def call(tool: str, arguments: dict[str, Any]) -> mt.CallToolResult:
            return await client.call_tool(f"demo__{tool}", arguments)

        yield call


@asynccontextmanager
async def direct() -> AsyncIterator[Call]:
    async with Client(demo) as client:
        yield client.call_tool


def seen(result: mt.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude={"meta"})


@pytest.mark.parametrize(("tool", "arguments"), CASES, ids=[c[0] for c in CASES])
async def test_a_small_result_is_the_same_direct_and_through_offprompt(
    memory: TaskMemory, tool: str, arguments: dict[str, Any]
) -> None:
    async with direct() as call:
        expected = seen(await call(tool, arguments))
    async with proxied(memory) as call:
        assert seen(await call(tool, arguments)) == expected


async def test_a_large_result_becomes_a_reference_that_reads_back_exactly(memory: TaskMemory) -> None:
    async with direct() as call:
        original = await call("log", {"lines": 2000})
    async with proxied(memory) as call:
        reference = await call("log", {"lines": 2000})
    facts = meta(reference)
    assert facts["tool"] == "demo.log"
    stored = memory.load(facts["artifact_namespace"], 0)
    assert isinstance(original.content[0], mt.TextContent)
    assert stored.to_text() == original.content[0].text


async def test_a_sensitive_tool_never_answers_inline(memory: TaskMemory) -> None:
    async with proxied(memory, off_prompt="always") as call:
        result = await call("echo", {"text": "hunter2"})
    assert "hunter2" not in str(seen(result))
    assert memory.load(meta(result)["artifact_namespace"], 0).to_text() == "hunter2"
