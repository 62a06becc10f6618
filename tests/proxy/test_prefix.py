"""`"prefix": false`: a server's tools, prompts and resources under their own names, and the clashes that refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from ..support import text_of
from .inprocess import in_process

pytestmark = pytest.mark.anyio


def server(name: str, *tools: str) -> MCPServer:
    """A server whose tools each answer with the server's name, with one prompt and one resource."""
    built = MCPServer(name)
    for tool in tools:
        built.add_tool(lambda tool=tool: f"{name}.{tool}", name=tool, description=f"{tool} of {name}")

    @built.prompt(name="greet")
    def greet(who: str) -> str:
        return f"{name} greets {who}"

    @built.resource(f"test://{name}/static", name="static")
    def static() -> str:
        return f"static of {name}"

    return built


@asynccontextmanager
async def proxied(
    memory: TaskMemory, servers: dict[str, tuple[MCPServer, bool]]
) -> AsyncIterator[tuple[Client, Proxy]]:
    blocks = {name: {"command": "in-process", "prefix": prefix} for name, (_, prefix) in servers.items()}
    config = parse_config({"mcpServers": blocks})
    proxy = Proxy(config.servers, connect=in_process({name: s for name, (s, _) in servers.items()}))
    async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
        yield client, proxy


async def test_an_unprefixed_server_is_listed_and_called_under_its_own_names(memory: TaskMemory) -> None:
    servers = {"plain": (server("plain", "echo"), False), "other": (server("other", "echo"), True)}
    async with proxied(memory, servers) as (client, _):
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"echo", "other__echo"} <= tools
        assert text_of(await client.call_tool("echo", {})) == "plain.echo"
        assert text_of(await client.call_tool("other__echo", {})) == "other.echo"

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"greet", "other__greet"}
        got = await client.get_prompt("greet", {"who": "Ada"})
        assert isinstance(got.messages[0].content, mt.TextContent)
        assert got.messages[0].content.text == "plain greets Ada"

        resources = {(str(r.uri), r.name) for r in (await client.list_resources()).resources}
        assert {("test://plain/static", "static"), ("test://other/static", "other__static")} <= resources


async def test_a_clash_between_two_unprefixed_servers_leaves_the_second_out_and_names_both(
    memory: TaskMemory, caplog: pytest.LogCaptureFixture
) -> None:
    servers = {"first": (server("first", "echo", "solo"), False), "second": (server("second", "echo"), False)}
    async with proxied(memory, servers) as (client, proxy):
        await proxy.ready()
        # Reported when the servers start, before any client lists anything.
        errors = errors_of(caplog)
        assert any('"second"' in e and '"first"' in e and '"echo"' in e for e in errors), errors
        assert 'Set "prefix": true on "second" or "first"' in proxy.collisions[0]
        assert "mcpServers.second.prefix" in proxy.collisions[0]

        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools.count("echo") == 1
        assert text_of(await client.call_tool("echo", {})) == "first.echo"  # never the other server's

        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert prompts == ["greet"]  # second's greet clashes with first's
        got = await client.get_prompt("greet", {"who": "Ada"})
        assert isinstance(got.messages[0].content, mt.TextContent)
        assert got.messages[0].content.text == "first greets Ada"
    assert any('prompt "greet"' in e and '"second"' in e and '"first"' in e for e in errors_of(caplog))


def errors_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


async def test_an_unprefixed_tool_may_not_take_a_memory_tool_s_name(memory: TaskMemory) -> None:
    servers = {"notes": (server("notes", "memory_load", "note"), False)}
    async with proxied(memory, servers) as (client, proxy):
        await proxy.ready()
        assert proxy.collisions == [
            'MCP server "notes" lists tool "memory_load" under its own name ("prefix": false), but names starting '
            'with "memory_" are offprompt\'s own tools: "notes"\'s tool is left out. Set "prefix": true on "notes" '
            "in the offprompt config (mcpServers.notes.prefix)."
        ]
        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools.count("memory_load") == 1
        assert "note" in tools
        result = await client.call_tool("memory_load", {"artifact_namespace": "nothere"})
        assert result.is_error  # offprompt's own memory_load answered, not the server's
        assert "notes.memory_load" not in text_of(result)


def test_a_prefix_that_is_not_a_boolean_names_the_field() -> None:
    config = parse_config({"mcpServers": {"fs": {"command": "npx", "prefix": "nope"}}})
    assert "mcpServers.fs.prefix" in config.problems["fs"]
    assert config.problems["fs"] == '<config>: mcpServers.fs.prefix: should be true or false (got "nope")'


def test_prefix_defaults_to_true() -> None:
    config: Any = parse_config({"mcpServers": {"fs": {"command": "npx"}, "gh": {"url": "https://x.invalid/mcp"}}})
    assert config.servers["fs"].prefix
    assert config.servers["gh"].prefix
