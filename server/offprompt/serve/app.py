"""Builds the one low-level MCP `Server`: the memory tools, `memory://` resources, and (later) proxied tools."""

from __future__ import annotations

import base64
import json
import logging
import warnings
import weakref
from collections.abc import Awaitable, Collection
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlparse

import anyio.to_thread
import mcp_types as mt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from offprompt import tools
from offprompt._version import __version__
from offprompt.artifacts import TEXT_KINDS, BlobArtifact
from offprompt.config import OffpromptSettings
from offprompt.errors import InvalidArgumentError, NotFoundError, OffpromptError
from offprompt.memory.task_memory import URI_SCHEME, TaskMemory
from offprompt.proxy.client_features import ClientSession
from offprompt.proxy.downstreams import Listing, ProgressFn, Proxy, Route
from offprompt.proxy.tasks import MAX_TASKS, RELATED_TASK
from offprompt.results import CallSite, ResultBoundary, ResultSettings
from offprompt.serve.client_channels import ConnectionChannel, SessionChannel
from offprompt.serve.rounds import Rounds, RoundTripChannel
from offprompt.tools import PAYLOAD_LIMIT, TOOLS, base64_size, blob_too_big

logger = logging.getLogger(__name__)

Ctx = ServerRequestContext[Any, Any]
T = TypeVar("T")

INSTRUCTIONS = (
    "Large or sensitive tool outputs are stored in memory instead of being shown in full; you get a "
    "reference with a memory_name and an artifact_namespace. Use memory_query (by meaning) or memory_grep "
    "(by regex) to find what you need in it, and memory_load to read a token window or get an image back."
)


def owner_of(ctx: Ctx) -> str | None:
    """Whose namespaces a request may see and store under: over HTTP with bearer tokens, the id of the caller's
    token (`transports.RequestGuard` puts it on the request); otherwise None, which sees every namespace.

    Store with `owner=owner_of(ctx) or ""`.
    """
    request = ctx.request
    user = request.scope.get("user") if isinstance(request, Request) else None
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


def _progress_forwarder(ctx: Ctx) -> ProgressFn:
    """Relays a downstream's progress to the client; a no-op when the client asked for none."""

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)

    return forward


def _is_modern(ctx: Ctx) -> bool:
    """Whether the caller speaks 2026-07-28 (no server requests: input-required round trips instead)."""
    connection = getattr(ctx.session, "_connection", None)  # no public accessor in the SDK yet
    return connection is not None and connection.protocol_version in MODERN_PROTOCOL_VERSIONS


def _quiet(forward: ProgressFn) -> ProgressFn:
    """Progress to a request that may have ended (a 2026-07-28 call answered input-required): dropped then."""

    async def send(progress: float, total: float | None, message: str | None) -> None:
        try:
            await forward(progress, total, message)
        except Exception:
            logger.debug("dropped progress for a request that has ended", exc_info=True)

    return send


def _call_site(ctx: Ctx, route: Route, arguments: dict[str, Any] | None) -> CallSite:
    """A proxied call, as the result boundary sees it."""
    return CallSite(
        route.server,
        route.tool,
        route.mode,
        arguments,
        owner_of(ctx) or "",
        intent=route.intent,
        secrets=route.secrets,
        secrets_allow=route.secrets_allow,
        schema=route.schema,
        max_argument_bytes=route.max_argument_bytes,
    )


def _client_session(ctx: Ctx, proxy: Proxy) -> ClientSession | None:
    """The caller's HTTP session, for a `per_session` server; its processes stop when the session closes or
    expires. None without a session (stdio's one client, 2026-07-28 single requests): the shared process serves."""
    connection = getattr(ctx.session, "_connection", None)  # no public accessor in the SDK yet
    key = getattr(connection, "session_id", None)
    if connection is None or key is None:
        return None
    if not connection.state.get("offprompt.per_session"):
        connection.state["offprompt.per_session"] = True
        connection.exit_stack.callback(proxy.end_session, key)
    return ClientSession(key, ConnectionChannel(connection))


#: What each changed list is announced as: to 2026-07-28 listeners, and to older clients' sessions.
_CHANGED_EVENTS: dict[Listing, type[ToolsListChanged | PromptsListChanged | ResourcesListChanged]] = {
    "tools": ToolsListChanged,
    "prompts": PromptsListChanged,
    "resources": ResourcesListChanged,
}
_CHANGED_NOTIFICATIONS: dict[Listing, str] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
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
    settings = settings or OffpromptSettings()
    if results is None:
        sharing, flows_to = (proxy.sharing(), proxy.flows_to()) if proxy is not None else (None, None)
        results = ResultBoundary(memory, ResultSettings.of(settings), sharing=sharing, flows_to=flows_to)
    # The connections of 2025-era clients, to tell them of changed lists later. Weak: a connection that closed
    # is gone (a registry whose values referred back to their keys kept every connection, ~20 MiB a 1,000).
    connections: weakref.WeakSet[Any] = weakref.WeakSet()

    def remember(ctx: Ctx) -> None:
        connection = getattr(ctx.session, "_connection", None)  # no public accessor in the SDK yet
        if connection is not None and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connections.add(connection)

    # 2026-07-28 clients hear of changes through `subscriptions/listen`; older ones by a plain notification.
    bus = InMemorySubscriptionBus()

    async def announce(listings: Collection[Listing]) -> None:
        for listing in listings:
            await bus.publish(_CHANGED_EVENTS[listing]())
        for connection in list(connections):
            try:
                for listing in listings:
                    await connection.notify(_CHANGED_NOTIFICATIONS[listing], None)
            except Exception:  # a client that went away
                logger.debug("could not notify a connection of changed lists", exc_info=True)

    # Which connections subscribed to a downstream resource, by URI; which connection created each task.
    subscribers: dict[str, weakref.WeakSet[Any]] = {}
    task_owners: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()

    async def relay(server: str, method: str, params: dict[str, Any]) -> None:
        """A downstream's log message (its logger named by its server), resource update or task status, to the
        clients it concerns."""
        if method == "notifications/message":
            logger_name = params.get("logger")
            params = {**params, "logger": f"{server}.{logger_name}" if logger_name else server}
            targets = list(connections)
        elif method == "notifications/tasks/status":
            owner = task_owners.get(str(params.get("taskId")))
            targets = [owner] if owner is not None else []
        else:
            targets = list(subscribers.get(str(params.get("uri")), ()))
        for connection in targets:
            try:
                await connection.notify(method, params)
            except Exception:  # a client that went away
                logger.debug("could not relay %s to a connection", method, exc_info=True)

    if proxy is not None:
        proxy.listeners.append(announce)
        proxy.relays.append(relay)

    async def list_tools(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        remember(ctx)
        tools = [tool.definition() for tool in TOOLS.values()]
        if proxy is not None:
            tools += await proxy.list_tools()
        return mt.ListToolsResult(tools=tools)

    rounds = Rounds()  # 2026-07-28 calls waiting for the client's input

    async def call_proxied(ctx: Ctx, params: mt.CallToolRequestParams) -> mt.CallToolResult | mt.InputRequiredResult:
        assert proxy is not None
        route = await proxy.route(params.name)
        if route is None:
            raise MCPError(mt.INVALID_PARAMS, f"Unknown tool: {params.name}. Call tools/list to see the tools.")
        site = _call_site(ctx, route, params.arguments)
        session = _client_session(ctx, proxy) if proxy.per_session(route) else None
        if _is_modern(ctx):  # a 2026-07-28 client: the downstream's requests become input-required rounds

            async def start(channel: RoundTripChannel) -> mt.CallToolResult:
                async def fetch(arguments: dict[str, Any] | None) -> mt.CallToolResult:
                    forward = _quiet(_progress_forwarder(ctx))  # the first request may have been answered
                    return (await proxy.call(params.name, arguments, forward, channel, session))[1]

                return await results.answer(site, fetch)

            capabilities = ctx.session.client_capabilities
            return await rounds.call(params, owner_of(ctx) or "", capabilities, start, proxy.spawn)

        async def fetch(arguments: dict[str, Any] | None) -> mt.CallToolResult:
            forward = _progress_forwarder(ctx)
            return (await proxy.call(params.name, arguments, forward, SessionChannel(ctx), session))[1]

        return await results.answer(site, fetch)

    async def call_tool(ctx: Ctx, params: mt.CallToolRequestParams) -> mt.CallToolResult | mt.InputRequiredResult:
        remember(ctx)
        tool = TOOLS.get(params.name)
        if tool is not None:
            over_http = isinstance(ctx.request, Request)  # over stdio (and in process) nothing caps an answer
            return await tools.call(memory, tool, params.arguments, owner_of(ctx), over_http=over_http)
        if proxy is None:
            raise MCPError(mt.INVALID_PARAMS, f"Unknown tool: {params.name}. Call tools/list to see the tools.")
        return await call_proxied(ctx, params)

    async def list_resources(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        records = await anyio.to_thread.run_sync(memory.recent, 50, owner_of(ctx))
        resources = [
            mt.Resource(
                uri=f"{URI_SCHEME}://{memory.name}/{r.namespace}",
                name=r.namespace,
                title=f"Output of {r.tool}",
                description=f"{'+'.join(r.kinds)}, {r.tokens:,} tokens, {r.bytes:,} bytes",
                size=r.bytes,
            )
            for r in records
        ]
        if proxy is not None:
            resources += await proxy.list_resources()
        return mt.ListResourcesResult(resources=resources)

    async def list_templates(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListResourceTemplatesResult:
        templates = [
            mt.ResourceTemplate(
                uri_template=f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}",
                name="stored-output",
                description="A tool output offprompt stored, every item of it (text as its first window).",
            ),
            mt.ResourceTemplate(
                uri_template=f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}/{{item}}{{?offset}}",
                name="stored-output-window",
                description="One item of a stored output; text from token `offset` on, as much as one answer holds "
                "(_meta.offprompt.next_uri reads on).",
            ),
        ]
        if proxy is not None:
            templates += await proxy.list_resource_templates()
        return mt.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(ctx: Ctx, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        if proxy is not None and not uri.startswith(f"{URI_SCHEME}://"):
            owner = owner_of(ctx) or ""
            try:
                server, result = await proxy.read_resource(uri)
            except MCPError as exc:  # its handles go back to no server: which one answered is not known here
                raise await results.error(exc, owner, "redact", proxy.resource_server(uri)) from None
            return await results.resource(result, owner, proxy.server_secrets(server), server)
        try:
            over_http = isinstance(ctx.request, Request)
            return await anyio.to_thread.run_sync(_read_memory_uri, memory, uri, owner_of(ctx), over_http)
        except OffpromptError as exc:
            raise MCPError(mt.INVALID_PARAMS, str(exc), data={"uri": uri}) from None

    async def list_prompts(ctx: Ctx, params: mt.PaginatedRequestParams | None) -> mt.ListPromptsResult:
        return mt.ListPromptsResult(prompts=await proxy.list_prompts() if proxy is not None else [])

    async def get_prompt(ctx: Ctx, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        owner = owner_of(ctx) or ""
        try:
            if proxy is None:
                raise KeyError(params.name)
            server, result = await proxy.get_prompt(params.name, params.arguments)
        except KeyError:
            raise MCPError(
                mt.INVALID_PARAMS, f"Unknown prompt: {params.name}. Call prompts/list to see them."
            ) from None
        except MCPError as exc:  # its handles go back to no server: which one answered is not known here
            raise await results.error(exc, owner, "redact", "") from None
        return await results.prompt(result, owner, proxy.server_secrets(server), server)

    async def set_logging_level(ctx: Ctx, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        remember(ctx)
        if proxy is not None:
            await proxy.set_logging_level(params.level)
        return mt.EmptyResult()

    async def complete(ctx: Ctx, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        if proxy is None:
            return mt.CompleteResult(completion=mt.Completion(values=[]))
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else {}
        return mt.CompleteResult(completion=await proxy.complete(params.ref, argument, context))

    async def subscribe(ctx: Ctx, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        if proxy is None or uri.startswith(f"{URI_SCHEME}://"):
            raise MCPError(mt.INVALID_PARAMS, f"{uri} does not change: there is nothing to subscribe to")
        await proxy.subscribe(uri, subscribe=True)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None:
            subscribers.setdefault(uri, weakref.WeakSet()).add(connection)
        return mt.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        uri = str(params.uri)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None:
            subscribers.get(uri, weakref.WeakSet()).discard(connection)
        if proxy is not None and not subscribers.get(uri):
            await proxy.subscribe(uri, subscribe=False)
        return mt.EmptyResult()

    # Logging is deprecated at 2026-07-28 (SEP-2577) and current for the 2025-era clients offprompt serves.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The logging capability is deprecated", MCPDeprecationWarning)
        server = OffpromptServer(
            "offprompt",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_subscriptions_listen=ListenHandler(bus),
            on_set_logging_level=set_logging_level,
            on_completion=complete,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
        )
    if proxy is not None:
        serve_tasks(server, proxy, results, task_owners)
    return server


def serve_tasks(
    server: OffpromptServer, proxy: Proxy, results: ResultBoundary, owners: weakref.WeakValueDictionary[str, Any]
) -> None:
    """Tasks (2025-11-25): a task-augmented call to a proxied tool creates the task at its server; `tasks/*`
    go back there; a task's final result passes the result boundary like any call's (stored when large).
    `owners` learns which client connection created each task (its status notifications go there only)."""
    sites: dict[str, CallSite] = {}  # task id → the call that created it, to settle its result

    async def start_task(ctx: Ctx, call_next: Any) -> Any:
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, dict) or params.get("task") is None:
            return await call_next(ctx)
        call = mt.CallToolRequestParams.model_validate(params, by_name=False)
        route = await proxy.route(call.name) if call.name not in TOOLS else None
        if route is None or call.task is None:
            return await call_next(ctx)  # a memory tool runs at once; an unknown one gets its error there
        site = _call_site(ctx, route, call.arguments)
        try:
            arguments = (await results.forward(site)).arguments
        except OffpromptError as exc:  # a handle or reference refused: the task is not created, nothing is sent
            raise MCPError(mt.INVALID_PARAMS, str(exc)) from None
        session = _client_session(ctx, proxy) if proxy.per_session(route) else None
        task = call.task.model_dump(by_alias=True, exclude_none=True, mode="json")
        created = await _relayed(proxy.start_task(route, arguments, task, SessionChannel(ctx), session))
        task_id = created["task"]["taskId"]
        sites[task_id] = site
        connection = getattr(ctx.session, "_connection", None)  # no public accessor in the SDK yet
        if connection is not None:
            owners[task_id] = connection
        while len(sites) > MAX_TASKS:
            del sites[next(iter(sites))]
        return created

    async def get_task(ctx: Ctx, params: mt.GetTaskRequestParams) -> dict[str, Any]:
        return (await _relayed(proxy.task_request("tasks/get", _wire(params), SessionChannel(ctx))))[1]

    async def cancel_task(ctx: Ctx, params: mt.CancelTaskRequestParams) -> dict[str, Any]:
        return (await _relayed(proxy.task_request("tasks/cancel", _wire(params), SessionChannel(ctx))))[1]

    async def task_result(ctx: Ctx, params: mt.GetTaskPayloadRequestParams) -> dict[str, Any]:
        channel = SessionChannel(ctx)
        record, raw = await _relayed(proxy.task_request("tasks/result", _wire(params), channel))
        site = sites.get(params.task_id) or CallSite(record.route.server, record.route.tool, record.route.mode)

        async def fetch(arguments: dict[str, Any] | None) -> dict[str, Any]:
            return raw  # the task ran with the arguments of its call; this is its outcome

        answer = await results.relay(site, fetch)
        settled: dict[str, Any] = json.loads(answer) if isinstance(answer, bytes) else answer
        meta = dict(settled.get("_meta") or {})
        meta.setdefault(RELATED_TASK, {"taskId": params.task_id})  # a reference must still name its task
        return {**settled, "_meta": meta}

    async def list_tasks(ctx: Ctx, params: mt.PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": await proxy.list_tasks(SessionChannel(ctx))}

    server.relays_tasks = True
    server.middleware.append(start_task)
    server.add_request_handler("tasks/get", mt.GetTaskRequestParams, get_task)
    server.add_request_handler("tasks/cancel", mt.CancelTaskRequestParams, cancel_task)
    server.add_request_handler("tasks/result", mt.GetTaskPayloadRequestParams, task_result)
    server.add_request_handler("tasks/list", mt.PaginatedRequestParams, list_tasks)


def _wire(params: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = params.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def _relayed(pending: Awaitable[T]) -> T:
    """A tasks request's outcome; offprompt's own failure (a server that is down) as the client's error."""
    try:
        return await pending
    except OffpromptError as exc:
        raise MCPError(mt.INTERNAL_ERROR, str(exc)) from None


def _read_memory_uri(memory: TaskMemory, uri: str, owner: str | None, over_http: bool) -> mt.ReadResourceResult:
    """`memory://{memory_name}/{namespace}` (every item), `.../{namespace}/{item}` (one), and
    `.../{namespace}/{item}?offset=N` (a text item from token N).

    One answer stays under the 1 MiB HTTP clients accept: a text item comes as its first window (its share of the
    answer), with the URI that reads on in the contents' `_meta["offprompt"]["next_uri"]`; a blob comes whole,
    but over HTTP only when it fits (else the error says how to get it whole). Over stdio nothing caps a blob.
    """
    parsed = urlparse(uri)
    parts = [p for p in parsed.path.split("/") if p]
    if (
        parsed.scheme != URI_SCHEME
        or parsed.netloc != memory.name
        or len(parts) not in (1, 2)
        or (len(parts) == 2 and not parts[1].isdigit())
    ):
        raise NotFoundError(
            f"cannot read {uri}: this offprompt serves {URI_SCHEME}://{memory.name}/{{artifact_namespace}} and "
            f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}/{{item}}?offset=N"
        )
    record = memory.get(parts[0], owner)
    items = [int(parts[1])] if len(parts) == 2 else [i.item for i in record.items]
    offset = _offset(parse_qs(parsed.query), uri, single_item=len(parts) == 2)
    share = PAYLOAD_LIMIT // len(items)
    contents: list[mt.TextResourceContents | mt.BlobResourceContents] = []
    for item in items:
        found = memory.item(record.namespace, item, owner)
        item_uri = f"{URI_SCHEME}://{memory.name}/{record.namespace}/{item}"
        if found.kind in TEXT_KINDS:
            window = memory.window_within(record.namespace, item, offset, share, share, owner)
            end = window.next_offset if window.next_offset is not None else window.total_tokens
            facts = {
                "item": item,
                "offset": window.offset,
                "next_offset": window.next_offset,
                "total_tokens": window.total_tokens,
                "next_uri": f"{item_uri}?offset={window.next_offset}" if window.next_offset is not None else None,
                "window": f"tokens {window.offset}-{end} of {window.total_tokens}",
            }
            mime = "application/json" if found.kind == "json" else "text/plain"
            here = item_uri if offset == 0 else f"{item_uri}?offset={offset}"
            contents.append(
                mt.TextResourceContents(uri=here, mime_type=mime, text=window.text, _meta={"offprompt": facts})
            )
            continue
        if found.mime_type is not None and over_http and base64_size(found.bytes) > share:
            raise blob_too_big(memory.name, record.namespace, item, found.kind, found.bytes)
        artifact = memory.load(record.namespace, item, owner)
        if isinstance(artifact, BlobArtifact):
            contents.append(
                mt.BlobResourceContents(
                    uri=item_uri, mime_type=artifact.mime_type, blob=base64.b64encode(artifact.value).decode()
                )
            )
        else:
            contents.append(mt.TextResourceContents(uri=item_uri, mime_type="text/plain", text=artifact.to_text()))
    return mt.ReadResourceResult(contents=contents)


def _offset(query: dict[str, list[str]], uri: str, *, single_item: bool) -> int:
    values = query.get("offset")
    if values is None:
        return 0
    if not single_item or len(values) != 1 or not values[0].isdigit():
        raise InvalidArgumentError(
            f"cannot read {uri}: offset=N (a token offset, 0 or more) goes on one item's URI, "
            f"{URI_SCHEME}://{{memory_name}}/{{artifact_namespace}}/{{item}}?offset=N"
        )
    return int(values[0])
