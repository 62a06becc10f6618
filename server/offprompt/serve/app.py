"""Builds the one low-level MCP `Server`: the memory tools, `memory://` resources, and the proxied tools,
prompts, resources and tasks of the downstream servers."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import mcp_types as mt
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from offprompt import tool_args, tools
from offprompt._version import __version__
from offprompt.config import OffpromptSettings
from offprompt.errors import OffpromptError
from offprompt.memory.task_memory import TaskMemory
from offprompt.notifications import PROGRESS, NotificationBoundary, ProgressRelay
from offprompt.proxy.downstream import ProgressFn
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.notification import Notification
from offprompt.proxy.routes import Route
from offprompt.results import ResultBoundary, ResultSettings, error_result
from offprompt.secrets.exceptions import Row, set_user_rows
from offprompt.serve.caller import Caller, Ctx
from offprompt.serve.memory_resources import is_memory_uri, memory_resources, memory_templates, read_memory_uri
from offprompt.serve.notices import Notices
from offprompt.serve.rounds import Rounds, RoundTripChannel
from offprompt.serve.task_handlers import TaskHandlers
from offprompt.tools import TOOLS

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Large or sensitive tool outputs are stored in memory instead of being shown in full; you get a "
    "reference with a memory_name and an artifact_namespace. Use memory_query (by meaning) or memory_grep "
    "(by regex) to find what you need in it, and memory_load to read a token window or get an image back."
)

LIST_CHANGES = NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)


class OffpromptServer(Server[Any]):
    """The low-level server, advertising `listChanged` for tools, prompts and resources to whoever asks.

    Proxied tools, prompts and resources come and go with the downstream servers. The streamable HTTP session
    manager asks for the capabilities with no options, and the SDK's default says no.
    """

    relays_tasks = False  # set when there are proxied servers: their tasks pass through

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = super().create_initialization_options(
            notification_options or LIST_CHANGES, experimental_capabilities, extensions
        )
        if self.relays_tasks:
            options.capabilities = options.capabilities.model_copy(update={"tasks": TASKS_CAPABILITY})
        return options


#: What offprompt declares for tasks (2025-11-25): it relays task-augmented calls and every tasks/* request.
TASKS_CAPABILITY = mt.ServerTasksCapability(
    list=mt.TasksListCapability(),
    cancel=mt.TasksCancelCapability(),
    requests=mt.ServerTasksRequestsCapability(tools=mt.TasksToolsCapability(call=mt.TasksCallCapability())),
)


def build_server(
    memory: TaskMemory,
    proxy: Proxy | None = None,
    settings: OffpromptSettings | None = None,
    results: ResultBoundary | None = None,
) -> Server[Any]:
    """The MCP server: the memory tools and `memory://` resources, plus the proxied tools of `proxy`, whose
    results go through `results` (one built from `settings` when not given)."""
    if settings is not None:  # the config's own exceptions of the secrets rules
        set_user_rows(Row(row.id, row.value, key=row.key) for row in settings.secrets_allowlist)
    results = results if results is not None else _result_boundary(memory, proxy, settings or OffpromptSettings())
    notices = Notices(NotificationBoundary(results.redactor))
    if proxy is not None:
        if proxy.list_secrets is None:  # `offprompt serve` sets it before its servers start
            proxy.redact_lists_with(results.redactor)
        proxy.listeners.append(notices.announce)
        proxy.relays.append(notices.relay)
    handlers = Handlers(memory, proxy, results, notices)
    # Logging is deprecated at 2026-07-28 (SEP-2577) and current for the 2025-era clients offprompt serves.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The logging capability is deprecated", MCPDeprecationWarning)
        server = OffpromptServer(
            "offprompt",
            version=__version__,
            instructions=INSTRUCTIONS,
            get_tool_input_schema=handlers.input_schema,
            on_list_tools=handlers.list_tools,
            on_call_tool=handlers.call_tool,
            on_list_resources=handlers.list_resources,
            on_list_resource_templates=handlers.list_resource_templates,
            on_read_resource=handlers.read_resource,
            on_list_prompts=handlers.list_prompts,
            on_get_prompt=handlers.get_prompt,
            on_subscriptions_listen=ListenHandler(notices.bus),
            on_set_logging_level=handlers.set_logging_level,
            on_completion=handlers.complete,
            on_subscribe_resource=handlers.subscribe,
            on_unsubscribe_resource=handlers.unsubscribe,
        )
    if proxy is not None:  # proxied servers' tasks pass through
        server.relays_tasks = True
        TaskHandlers(proxy, results, notices).install(server)
    return server


def _result_boundary(memory: TaskMemory, proxy: Proxy | None, settings: OffpromptSettings) -> ResultBoundary:
    sharing, flows_to = (proxy.sharing(), proxy.flows_to()) if proxy is not None else (None, None)
    return ResultBoundary(memory, ResultSettings.of(settings), sharing=sharing, flows_to=flows_to)


def _unknown_tool(name: str) -> MCPError:
    return MCPError(mt.INVALID_PARAMS, f"Unknown tool: {name}. Call tools/list to see the tools.")


def _quiet(forward: ProgressFn) -> ProgressFn:
    """Progress to a request that may have ended (a 2026-07-28 call answered input-required): dropped then."""

    async def send(progress: float, total: float | None, message: str | None) -> None:
        try:
            await forward(progress, total, message)
        except Exception:
            logger.debug("dropped progress for a request that has ended", exc_info=True)

    return send


class Handlers:
    """One method per MCP request the server answers (tasks are `TaskHandlers`'); `proxy` None serves only the
    memory tools and resources."""

    def __init__(self, memory: TaskMemory, proxy: Proxy | None, results: ResultBoundary, notices: Notices) -> None:
        self.memory = memory
        self.proxy = proxy
        self.results = results
        self.notices = notices
        self.rounds = Rounds()  # 2026-07-28 calls waiting for the client's input

    async def list_tools(self, ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        self.notices.remember(Caller(ctx))
        listed = [tool.definition() for tool in TOOLS.values()]
        if self.proxy is not None:
            listed += await self.proxy.list_tools()
        return mt.ListToolsResult(tools=listed)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A tool's input schema, for the SDK's `Mcp-Param-*` header check of a 2026-07-28 call: without it the
        SDK ran the whole tools/list before every call with arguments. A proxied tool's schema is its server's
        (offprompt's `intent` carries no header); a tool whose server has not listed it yet has none to check."""
        tool = TOOLS.get(name)
        if tool is not None:
            return tool_args.input_schema(tool.args)
        route = self.proxy.routes().get(name) if self.proxy is not None else None
        return route.schema if route is not None else None

    async def call_tool(self, ctx: Ctx, params: mt.CallToolRequestParams) -> mt.CallToolResult | mt.InputRequiredResult:
        caller = Caller(ctx)
        self.notices.remember(caller)
        tool = TOOLS.get(params.name)
        if tool is not None:
            return await tools.call(self.memory, tool, params.arguments, caller.owner, over_http=caller.over_http)
        if self.proxy is None:
            raise _unknown_tool(params.name)
        return await self._call_proxied(caller, self.proxy, params)

    async def _call_proxied(
        self, caller: Caller, proxy: Proxy, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        route = await proxy.route(params.name)
        if route is None:
            failed = await proxy.start_failed_owners(params.name)
            if failed is not None:
                return error_result(failed)
            route = proxy.routes().get(params.name)
        if route is None:
            raise _unknown_tool(params.name)
        site = caller.call_site(route, params.arguments, proxy.timeout(route))
        session = caller.client_session(proxy, route)
        if caller.is_modern:  # a 2026-07-28 client: the downstream's requests become input-required rounds

            async def start(channel: RoundTripChannel) -> mt.CallToolResult:
                async def fetch(arguments: dict[str, Any] | None) -> mt.CallToolResult:
                    relay = self._progress(caller, route)
                    forward = _quiet(relay)  # the first request may have been answered
                    result = (await proxy.call(params.name, arguments, forward, channel, session))[1]
                    await relay.settled()
                    return result

                return await self.results.answer(site, fetch)

            return await self.rounds.call(params, caller.owner or "", caller.capabilities, start, proxy.spawn)

        async def fetch(arguments: dict[str, Any] | None) -> mt.CallToolResult:
            relay = self._progress(caller, route)
            result = (await proxy.call(params.name, arguments, relay, caller.channel(), session))[1]
            await relay.settled()
            return result

        return await self.results.answer(site, fetch)

    def _progress(self, caller: Caller, route: Route) -> ProgressRelay:
        """The downstream's progress to the caller's own token, its words through the notification boundary."""
        note = Notification(route.server, PROGRESS, {}, route.secrets, route.mode == "always")
        return self.notices.boundary.progress_to(caller.progress(), note, caller.owner or "")

    async def list_resources(self, ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        caller = Caller(ctx)
        self.notices.remember(caller)  # a client that lists resources hears when they change
        resources = await anyio.to_thread.run_sync(memory_resources, self.memory, caller.owner)
        if self.proxy is not None:
            resources += await self.proxy.list_resources()
        return mt.ListResourcesResult(resources=resources)

    async def list_resource_templates(
        self, ctx: Ctx, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        templates = memory_templates(self.memory)
        if self.proxy is not None:
            templates += await self.proxy.list_resource_templates()
        return mt.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(self, ctx: Ctx, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri, caller = str(params.uri), Caller(ctx)
        if self.proxy is not None and not is_memory_uri(uri):
            owner = caller.owner or ""
            try:
                server, result = await self.proxy.read_resource(uri)
            except MCPError as exc:  # its handles go back to no server: which one answered is not known here
                raise await self.results.error(exc, owner, "redact", self.proxy.resource_server(uri)) from None
            return await self.results.resource(result, owner, self.proxy.server_secrets(server), server)
        try:
            read = anyio.to_thread.run_sync
            return await read(read_memory_uri, self.memory, uri, caller.owner, caller.over_http)
        except OffpromptError as exc:
            raise MCPError(mt.INVALID_PARAMS, str(exc), data={"uri": uri}) from None

    async def list_prompts(self, ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListPromptsResult:
        self.notices.remember(Caller(ctx))  # a client that lists prompts hears when they change
        return mt.ListPromptsResult(prompts=await self.proxy.list_prompts() if self.proxy is not None else [])

    async def get_prompt(self, ctx: Ctx, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        owner = Caller(ctx).owner or ""
        try:
            if self.proxy is None:
                raise KeyError(params.name)
            server, result = await self.proxy.get_prompt(params.name, params.arguments)
        except KeyError:
            raise MCPError(
                mt.INVALID_PARAMS, f"Unknown prompt: {params.name}. Call prompts/list to see them."
            ) from None
        except MCPError as exc:  # its handles go back to no server: which one answered is not known here
            raise await self.results.error(exc, owner, "redact", "") from None
        return await self.results.prompt(result, owner, self.proxy.server_secrets(server), server)

    async def set_logging_level(self, ctx: Ctx, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        self.notices.remember(Caller(ctx))
        if self.proxy is not None:
            await self.proxy.set_logging_level(params.level)
        return mt.EmptyResult()

    async def complete(self, ctx: Ctx, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        if self.proxy is None:
            return mt.CompleteResult(completion=mt.Completion(values=[]))
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else {}
        return mt.CompleteResult(completion=await self.proxy.complete(params.ref, argument, context))

    async def subscribe(self, ctx: Ctx, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        if self.proxy is None or is_memory_uri(uri):
            raise MCPError(mt.INVALID_PARAMS, f"{uri} does not change: there is nothing to subscribe to")
        await self.proxy.subscribe(uri, subscribe=True)
        caller = Caller(ctx)
        self.notices.subscribe(uri, caller.connection, caller.owner or "")
        return mt.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        nobody_left = self.notices.unsubscribe(uri, Caller(ctx).connection)
        if self.proxy is not None and nobody_left:
            await self.proxy.subscribe(uri, subscribe=False)
        return mt.EmptyResult()
