"""Nothing but a proxied call waits for a server still starting: a log level is taken at once (and sent to each
server as it starts), and a running server's prompts are got while another is still on its first start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from offprompt.config import ServerConfig, parse_config
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.openers import Hooks, McpSession
from tests.proxy.inprocess import in_process

pytestmark = pytest.mark.anyio

fast = MCPServer("fast")


@fast.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@fast.prompt()
def hello(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}"


@asynccontextmanager
async def never_starts() -> AsyncIterator[McpSession]:
    """A server that never answers initialize (an `npx -y` one downloading itself)."""
    await anyio.Event().wait()
    yield  # type: ignore[misc]  # never reached


def connect(name: str, config: ServerConfig, hooks: Hooks) -> AbstractAsyncContextManager[McpSession]:
    return never_starts() if name == "slow" else in_process({"fast": fast})(name, config, hooks)


async def test_a_log_level_and_a_running_server_s_prompt_wait_for_no_server_still_starting() -> None:
    servers = {"fast": {"command": "fast"}, "slow": {"command": "slow"}}
    proxy = Proxy(parse_config({"mcpServers": servers}).servers, connect=connect)
    slow = proxy.downstreams["slow"]
    async with proxy.running():
        assert await proxy.route("fast__echo") is not None  # the fast server has started (a call waits for it)
        await proxy.set_logging_level("warning")
        server, got = await proxy.get_prompt("fast__hello", {"name": "Ada"})
        assert (server, "Ada" in str(got.messages[0].content)) == ("fast", True)
        # Still on its first start: neither answer waited for it (before, both waited for its start to time out).
        assert (slow.running, slow.error) == (False, None)
        assert slow.log_level == "warning"  # what it is sent when it starts


async def test_a_call_to_a_tool_its_server_does_not_list_waits_for_that_server_alone() -> None:
    servers = {"fast": {"command": "fast"}, "slow": {"command": "slow"}}
    proxy = Proxy(parse_config({"mcpServers": servers}).servers, connect=connect)
    slow = proxy.downstreams["slow"]
    async with proxy.running():
        assert await proxy.route("fast__echo") is not None
        assert await proxy.route("fast__gone") is None  # "Unknown tool", once fast has listed its tools
        assert (slow.running, slow.error) == (False, None)  # not waited for: the name is not its
