"""Opening a session to one downstream server: the seam where the outside world plugs into the proxy.

A `Connect` is "an async context manager that yields an initialized session" for a server's config (the
python-sdk's transport idea). `open_session` is the real one: the lean `StdioSession` over a subprocess's
pipes for local servers, the SDK's `ClientSession` over streamable HTTP or SSE for remote ones. Tests
connect to servers in the same process instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as mt
from mcp import ClientSession
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from offprompt.config import HttpServer, ServerConfig, StdioServer
from offprompt.proxy.client_features import CLIENT_CAPABILITIES
from offprompt.proxy.stdio_session import Process, RequestHandler, StdioSession, close_process, open_process

logger = logging.getLogger(__name__)


class McpSession(Protocol):
    """What the proxy needs of a session: the SDK's `ClientSession` (HTTP, SSE) or the lean `StdioSession`."""

    @property
    def server_capabilities(self) -> mt.ServerCapabilities | None: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, progress_callback: Any = None
    ) -> mt.CallToolResult: ...

    async def list_tools(self, *, params: mt.PaginatedRequestParams | None = None) -> mt.ListToolsResult: ...

    async def list_prompts(self) -> mt.ListPromptsResult: ...

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> mt.GetPromptResult: ...

    async def list_resources(self) -> mt.ListResourcesResult: ...

    async def list_resource_templates(self) -> mt.ListResourceTemplatesResult: ...

    async def read_resource(self, uri: str) -> Any: ...

    async def send_roots_list_changed(self) -> None: ...

    async def set_logging_level(self, level: mt.LoggingLevel) -> Any: ...

    async def complete(
        self,
        ref: mt.ResourceTemplateReference | mt.PromptReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> mt.CompleteResult: ...

    async def subscribe_resource(self, uri: str) -> Any: ...

    async def unsubscribe_resource(self, uri: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class Hooks:
    """What a session reports back to the proxy."""

    #: A server notification (`notifications/tools/list_changed`, ...), by method and params.
    on_notification: Callable[[str, dict[str, Any]], Awaitable[None]]
    #: The connection ended by itself; the argument says why, or is None when a call already reported it.
    on_exit: Callable[[str | None], None]
    #: A request the server sends its client (sampling, elicitation, roots): the result, or an MCPError.
    on_request: RequestHandler | None = None


Connect = Callable[[str, ServerConfig, Hooks], AbstractAsyncContextManager[McpSession]]


@asynccontextmanager
async def open_session(name: str, config: ServerConfig, hooks: Hooks) -> AsyncIterator[McpSession]:
    """An initialized session to the server `config` describes: a subprocess (stdio) or a URL."""
    if isinstance(config, StdioServer):
        async with _stdio(config, hooks) as session:
            yield session
        return
    assert isinstance(config, HttpServer)

    async def on_message(message: IncomingMessage) -> None:
        # Every notification but progress and logs, which the session hands to their own callbacks.
        if isinstance(message, mt.ProgressNotification | mt.LoggingMessageNotification):
            return
        method, params = getattr(message, "method", None), getattr(message, "params", None)
        if isinstance(method, str) and method.startswith("notifications/"):
            if params is not None and not isinstance(params, dict):
                params = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            await hooks.on_notification(method, params or {})

    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(_http_transport(config))
        client = await stack.enter_async_context(
            ClientSession(read, write, message_handler=on_message, **client_callbacks(hooks))
        )
        await client.initialize()
        yield client


def client_callbacks(hooks: Hooks) -> dict[str, Any]:
    """The SDK ClientSession's callbacks for sampling, elicitation and roots, relayed through `hooks`."""
    if hooks.on_request is None:
        return {}
    ask = hooks.on_request

    async def relay(method: str, params: Any, result_type: type[Any]) -> Any:
        try:
            dumped = params.model_dump(mode="json", by_alias=True, exclude_none=True) if params is not None else {}
            return result_type.model_validate(await ask(method, dumped))
        except MCPError as exc:
            return exc.error

    async def sampling(context: Any, params: mt.CreateMessageRequestParams) -> Any:
        return await relay("sampling/createMessage", params, mt.CreateMessageResult)

    async def elicitation(context: Any, params: mt.ElicitRequestParams) -> Any:
        return await relay("elicitation/create", params, mt.ElicitResult)

    async def roots(context: Any) -> Any:
        return await relay("roots/list", None, mt.ListRootsResult)

    async def log(params: mt.LoggingMessageNotificationParams) -> None:
        await hooks.on_notification("notifications/message", params.model_dump(mode="json", exclude_none=True))

    return {
        "sampling_callback": sampling,
        "elicitation_callback": elicitation,
        "list_roots_callback": roots,
        "logging_callback": log,
    }


@asynccontextmanager
async def _stdio(config: StdioServer, hooks: Hooks) -> AsyncIterator[StdioSession]:
    process = await open_process(
        config.command, list(config.args), _child_env(config.env), str(config.cwd) if config.cwd else None
    )
    try:
        async with anyio.create_task_group() as tg:
            session = StdioSession(process, hooks.on_notification, hooks.on_request, CLIENT_CAPABILITIES)
            tg.start_soon(_watch, session, process, hooks)
            await session.initialize()
            yield session
            tg.cancel_scope.cancel()
    finally:
        await close_process(process)


async def _watch(session: StdioSession, process: Process, hooks: Hooks) -> None:
    """Notice at once when a local server exits, so its next call can say so and restart it."""
    await session.read_loop()
    if session.failed_requests:  # a death that cut off a request was reported by that request
        hooks.on_exit(None)
        return
    with anyio.move_on_after(1):
        await process.wait()
    hooks.on_exit(f"exit code {process.returncode}" if process.returncode is not None else "it closed stdout")


def _child_env(extra: Mapping[str, str]) -> dict[str, str]:
    # The downstream gets the user's environment (PATH, HOME for npx/uvx) but none of offprompt's secrets.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFPROMPT_")}
    env.update(extra)
    return env


def _http_transport(config: HttpServer) -> AbstractAsyncContextManager[Any]:
    from offprompt.proxy.http_text import unicode_client  # its answers read as Unicode text, lone surrogates too

    if config.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(str(config.url), headers=dict(config.headers), httpx_client_factory=unicode_client)
    from mcp.client.streamable_http import streamable_http_client

    # The SDK's way to send headers is a client of one's own.
    return streamable_http_client(str(config.url), http_client=unicode_client(dict(config.headers)))
