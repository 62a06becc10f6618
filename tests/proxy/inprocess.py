"""Downstream servers in the test's own process: a `Connect` for `Proxy(connect=...)`, no subprocess."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import mcp_types as mt
from mcp import ClientSession
from mcp.client._memory import InMemoryTransport
from mcp.client.session import IncomingMessage
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from offprompt.config import ServerConfig
from offprompt.proxy.openers import Connect, Hooks, McpSession, client_callbacks


def in_process(servers: Mapping[str, MCPServer | Server[Any]]) -> Connect:
    """Connects the proxy's server `name` to `servers[name]` over memory streams, with the SDK's ClientSession."""

    def connect(name: str, config: ServerConfig, hooks: Hooks) -> AbstractAsyncContextManager[McpSession]:
        return _session(servers[name], hooks)

    return connect


@asynccontextmanager
async def _session(server: MCPServer | Server[Any], hooks: Hooks) -> AsyncIterator[McpSession]:
    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            await hooks.on_notification("notifications/tools/list_changed", {})

    async with (
        InMemoryTransport(server) as (read, write),
        ClientSession(read, write, message_handler=on_message, **client_callbacks(hooks)) as session,
    ):
        await session.initialize()
        yield session
