"""All of the user's MCP servers behind one `Proxy`: each a `Downstream` (`downstream.py`) that fails only its
own calls; their tools under public names (`routes.py`), their prompts and resources passed through, and each
call routed to the server that lists it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup
from mcp.shared.exceptions import MCPError

from offprompt.config import SecretsMode, ServerConfig
from offprompt.errors import DownstreamUnavailableError
from offprompt.logs import keep_message_content_out_of_logs
from offprompt.proxy.client_features import ClientChannel, ClientSession
from offprompt.proxy.downstream import (
    EVERY_LISTING,
    START_TIMEOUT,
    ChangeFn,
    Downstream,
    Listing,
    ProgressFn,
    apply_log_levels,
    capable,
)
from offprompt.proxy.list_cache import CachedLists, ListCache
from offprompt.proxy.list_secrets import ListSecrets
from offprompt.proxy.notification import Notification, RelayFn
from offprompt.proxy.openers import Connect, McpSession, open_session
from offprompt.proxy.routes import (
    MAX_NAME,
    RESERVED_PREFIX,
    SEPARATOR,
    Route,
    collision_message,
    public_name,
    route_tools,
)
from offprompt.proxy.stdio_session import RawProgress
from offprompt.proxy.tasks import TaskBook, TaskRecord, create_task, list_owned_tasks, relay_task_request
from offprompt.secrets import Redactor

logger = logging.getLogger(__name__)
keep_message_content_out_of_logs()  # results of HTTP downstreams, `always` ones included

#: How long a listing waits for servers still starting that have no cached list (an `npx -y` server downloads
#: itself on its first run); Claude Code gives tools/list 5 s, so a later one is announced with list_changed.
LIST_WAIT_SECONDS = 3.0
RETRY_SECONDS = 30.0  # how often a server that never started is tried again, when the client lists tools


class Proxy:
    """All downstream servers, their tools under public names, and calls routed to them."""

    def __init__(
        self,
        servers: Mapping[str, ServerConfig],
        default_timeout: float | None = 120.0,
        places: Mapping[str, str] | None = None,
        list_wait: float = LIST_WAIT_SECONDS,
        connect: Connect = open_session,
        intent: bool = False,
        tool_places: Mapping[str, Mapping[str, str]] | None = None,
        cache: ListCache | None = None,
    ) -> None:
        """`connect` opens a session to one server (`openers.open_session` by default: a subprocess or HTTP);
        tests pass one that connects to servers in the same process. `cache` keeps each server's tool list for
        the next start (`offprompt serve` passes the user's; None: every start waits for the servers)."""
        places = places or {}
        tool_places = tool_places or {}
        self.downstreams = {
            name: Downstream(name, cfg, self._changed, places.get(name, ""), connect, tool_places.get(name), cache)
            for name, cfg in servers.items()
        }
        self.default_timeout = default_timeout
        self.list_wait = list_wait
        self._listed_early = False  # a listing went out while servers were still starting
        self._started_at = 0.0
        self.listeners: list[ChangeFn] = []
        self.relays: list[RelayFn] = []  # who hears the downstreams' log messages and resource updates
        for downstream in self.downstreams.values():
            downstream.on_relay = self._relay
        self._template_owner: dict[str, str] = {}
        self._tg: TaskGroup | None = None
        self._first_start: anyio.Event = anyio.Event()
        self._one_started = anyio.Event()  # set, and replaced, each time a server's first start ends
        self._resource_owner: dict[str, str] = {}
        self.intent = intent  # each tool gets offprompt's `intent` argument (see intent.py)
        self.log_level: mt.LoggingLevel | None = None  # the clients' last logging/setLevel
        self._routes: dict[str, Route] = {}
        self._listed: list[mt.Tool] = []
        self._routes_version: tuple[int, ...] = ()
        self.collisions: list[str] = []  # unprefixed names that clash, each a line naming both sides
        self.duplicates: list[str] = []  # tools a server lists more than once, each a line naming the names given
        # The processes of `per_session` servers, by client session id, then server name.
        self.session_downstreams: dict[str, dict[str, Downstream]] = {}
        self.tasks = TaskBook()  # task-augmented calls: which process runs each task, for whom
        self._places = places
        self._tool_places = tool_places
        self._connect = connect
        self._reported: set[str] = set()
        self.list_secrets: ListSecrets | None = None  # set by `redact_lists_with`

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Proxy]:
        """Start every downstream in the background; stop them all on exit."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._started_at = anyio.current_time()
            tg.start_soon(self._start_all, tg)
            try:
                yield self
            finally:
                for downstream in self.downstreams.values():
                    downstream.stop()
                for key in list(self.session_downstreams):
                    self.end_session(key)
                tg.cancel_scope.cancel()
                self._tg = None

    async def _start_all(self, tg: TaskGroup) -> None:
        async def start(downstream: Downstream) -> None:
            try:
                await downstream.ensure_started(tg)
            except DownstreamUnavailableError as exc:
                logger.error("%s", exc)
                return
            finally:
                self._one_started.set()
                self._one_started = anyio.Event()
            self._refresh()  # a name an unprefixed server clashes on is an error at start, not at the first listing
            if self._listed_early:
                logger.info('MCP server "%s" started after the lists were sent', downstream.name)
                await self._changed(EVERY_LISTING)

        async with anyio.create_task_group() as starting:
            for downstream in self.downstreams.values():
                starting.start_soon(start, downstream)
        self._first_start.set()
        self._one_started.set()  # wakes a `route()` that waited past the last server's start

    def _retry_failed(self) -> None:
        """Try again, in the background, to start servers that never started (one may have been fixed since)."""
        if self._tg is None:
            return
        now = anyio.current_time()
        for downstream in self.downstreams.values():
            if downstream.running or downstream.error is None or now - downstream.last_attempt < RETRY_SECONDS:
                continue
            downstream.last_attempt = now
            self._tg.start_soon(self._retry, downstream)

    async def _retry(self, downstream: Downstream) -> None:
        assert self._tg is not None
        try:
            await downstream.ensure_started(self._tg)
        except DownstreamUnavailableError as exc:
            logger.info("%s", exc)
            return
        logger.info('MCP server "%s" started on a later try', downstream.name)
        await self._changed(EVERY_LISTING)

    async def _changed(self, listings: Collection[Listing]) -> None:
        for listener in self.listeners:
            await listener(listings)

    async def _relay(self, notification: Notification) -> None:
        for relay in self.relays:
            await relay(notification)

    def redact_lists_with(self, redactor: Redactor) -> None:
        """Take the downstreams' lists through `redactor`'s table from now on (before the proxy runs, so that
        nothing of theirs is listed or cached raw)."""
        self.list_secrets = ListSecrets(redactor)
        for downstream in self.downstreams.values():
            downstream.list_secrets = self.list_secrets

    def routes(self) -> dict[str, Route]:
        """Public tool name → server and tool; rebuilt when a downstream's tool list changes."""
        self._refresh()
        return self._routes

    def _refresh(self) -> None:
        version = tuple(d.tools_version for d in self.downstreams.values())
        if version == self._routes_version:
            return
        routes, listed, collisions, duplicates = route_tools(self.downstreams, self.intent, self._clash)
        self._routes, self._listed, self._routes_version = routes, listed, version
        self.collisions = collisions
        for message in duplicates:
            if message not in self._reported:
                self._reported.add(message)
                logger.warning("%s", message)
        self.duplicates = duplicates

    def _clash(self, server: str, kind: str, name: str, taken: Route | str | None) -> str | None:
        """The message when an unprefixed `name` of `server` is taken (by `taken`'s server, or is offprompt's);
        logged as an error once."""
        if taken is None and not name.startswith(RESERVED_PREFIX):
            return None
        other = None if taken is None else taken.server if isinstance(taken, Route) else taken
        message = collision_message(server, kind, name, other)
        if message not in self._reported:
            self._reported.add(message)
            logger.error("%s", message)
        return message

    def _public(self, server: str, name: str) -> str:
        """A prompt's or resource's public name: its own for a server with `"prefix": false`."""
        return public_name(server, name) if self.downstreams[server].config.prefix else name

    def raw_route(self, public: str) -> Route | None:
        """The route of a call that can take the fast lane now (its server is a live local one), else None."""
        route = self.routes().get(public)
        return route if route is not None and self.downstreams[route.server].raw_capable else None

    @property
    def is_ready(self) -> bool:
        """Whether every downstream has had its first start."""
        return self._first_start.is_set()

    async def ready(self) -> None:
        """Wait until every downstream has had its first start (or START_TIMEOUT passed)."""
        with anyio.move_on_after(START_TIMEOUT):
            await self._first_start.wait()

    async def ready_to_list(self) -> None:
        """Wait for the servers still starting, up to `list_wait` after the proxy started; the tools, prompts
        and resources of those that start later are announced."""
        assert self._tg is not None, "the proxy is not running"
        with anyio.move_on_after(self._started_at + self.list_wait - anyio.current_time()):
            await self._first_start.wait()
        if not self._first_start.is_set():
            self._listed_early = True

    async def route(self, public: str) -> Route | None:
        """Where a public tool name goes; while the servers it may belong to are still starting, it waits until
        one lists the name (or all of them have started)."""
        assert self._tg is not None, "the proxy is not running"
        with anyio.move_on_after(START_TIMEOUT):
            while public not in self.routes() and not self.is_ready and not self._owners_started(public):
                await self._one_started.wait()
        return self.routes().get(public)

    def _owners(self, public: str) -> list[Downstream]:
        """The servers that may list `public`: those whose prefix it bears, and every server that lists its tools
        unprefixed."""
        return [
            d
            for d in self.downstreams.values()
            if not d.config.prefix or public.startswith(public_name(d.name, "")[: MAX_NAME - 9])  # as a cut name
        ]

    def _owners_started(self, public: str) -> bool:
        """Whether every server that may list `public` has had its first start."""
        return all(d.running or d.error is not None for d in self._owners(public))

    async def start_failed_owners(self, public: str) -> str | None:
        """For a name no server lists: start again the servers that may list it and failed to start (a client
        calls a tool it knows from an earlier start, or from the start-up cache). Why one still fails, or None
        when none did (the name is then routed, or unknown)."""
        assert self._tg is not None, "the proxy is not running"
        for downstream in self._owners(public):
            if downstream.error is None or downstream.running:
                continue
            try:
                await downstream.ensure_started(self._tg)
            except DownstreamUnavailableError as exc:
                if downstream.config.prefix:  # a name of its own: its failure is the answer
                    return str(exc)
        return None

    async def list_tools(self) -> list[mt.Tool]:
        """Every downstream tool under its public name, without `outputSchema` (a reference can't match it): at
        once when every server runs, failed or has its list cached, else after `ready_to_list`."""
        if not all(d.listable for d in self.downstreams.values()):
            await self.ready_to_list()
        self._retry_failed()
        self._refresh()
        return list(self._listed)

    def _running(self) -> list[Downstream]:
        return [d for d in self.downstreams.values() if d.running]

    async def _gather(
        self,
        feature: str,
        fetch: Callable[[McpSession], Awaitable[Sequence[Any]]],
        cached: Callable[[CachedLists], Sequence[Any]],
        publish: Callable[[Downstream, Sequence[Any]], list[Any]],
    ) -> list[Any]:
        """Each downstream's list, in config order, as `publish` makes it public: from its live session when it
        runs (`fetch`), else from its lists of the last run (`cached`). It waits for servers still starting, as
        tools/list does, only when one has no cached lists."""
        if not all(d.listable for d in self.downstreams.values()):
            await self.ready_to_list()
        live = {downstream.name: session for downstream, session in await self._sessions(feature)}
        out: list[Any] = []
        for downstream in self.downstreams.values():
            try:
                if downstream.name in live:
                    out.extend(publish(downstream, await downstream.redacted(await fetch(live[downstream.name]))))
                elif downstream.cached is not None and not downstream.running:
                    out.extend(publish(downstream, await downstream.redacted(cached(downstream.cached))))
            except MCPError as exc:
                if exc.code != mt.METHOD_NOT_FOUND:
                    logger.warning('listing from "%s" failed: %s', downstream.name, exc.message)
            except (DownstreamUnavailableError, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
                logger.warning('listing from "%s" failed: %s', downstream.name, exc)
        return out

    async def list_prompts(self) -> list[mt.Prompt]:
        """Every downstream prompt, renamed `{server}__{prompt}` like the tools."""

        async def fetch(session: McpSession) -> Sequence[mt.Prompt]:
            return (await session.list_prompts()).prompts

        def publish(downstream: Downstream, prompts: Sequence[mt.Prompt]) -> list[Any]:
            name = downstream.name
            return [(name, p.model_copy(update={"name": self._public(name, p.name)})) for p in prompts]

        owners: dict[str, str] = {}
        listed: list[mt.Prompt] = []
        for server, prompt in await self._gather("prompts", fetch, lambda c: c.prompts, publish):
            unprefixed = not self.downstreams[server].config.prefix
            if unprefixed and self._clash(server, "prompt", prompt.name, owners.get(prompt.name)) is not None:
                continue
            owners.setdefault(prompt.name, server)
            listed.append(prompt)
        return listed

    async def get_prompt(self, public: str, arguments: dict[str, str] | None) -> tuple[str, mt.GetPromptResult]:
        """The prompt of that public name, and the name of its server."""
        for downstream in self._candidates():
            if (session := await self._session_of(downstream, "prompts")) is None:
                continue
            for prompt in (await session.list_prompts()).prompts:
                if self._public(downstream.name, prompt.name) == public:
                    return downstream.name, await session.get_prompt(prompt.name, arguments)
        raise KeyError(public)

    async def _sessions(self, feature: str) -> list[tuple[Downstream, McpSession]]:
        """The live sessions of servers that offer `feature`, waiting for none (a listing has waited as it needs
        to); a dead one is skipped."""
        assert self._tg is not None, "the proxy is not running"
        found: list[tuple[Downstream, McpSession]] = []
        for downstream in self._running():
            try:
                session = await downstream.ensure_started(self._tg)
            except DownstreamUnavailableError:
                continue
            if capable(session, feature):
                found.append((downstream, session))
        return found

    def _candidates(self, first: str | None = None) -> list[Downstream]:
        """The servers a get or read may go to, `first` at the front: the running ones, then those still on their
        first start, whose start it waits for only when no running one has answered it (a server whose start
        failed is left out; the next call to one of its tools starts it again)."""
        ordered = sorted(self.downstreams.values(), key=lambda d: (not d.running, d.name != first))
        return [d for d in ordered if d.running or (d.error is None and not self.is_ready)]

    async def _session_of(self, downstream: Downstream, feature: str) -> McpSession | None:
        """`downstream`'s session once it runs, if it offers `feature`; None if it does not or could not start."""
        assert self._tg is not None, "the proxy is not running"
        try:
            session = await downstream.ensure_started(self._tg)
        except DownstreamUnavailableError:
            return None
        return session if capable(session, feature) else None

    async def list_resources(self) -> list[mt.Resource]:
        """Every downstream resource, URI unchanged, its name prefixed with its server's."""

        async def fetch(session: McpSession) -> Sequence[mt.Resource]:
            return (await session.list_resources()).resources

        def publish(downstream: Downstream, resources: Sequence[mt.Resource]) -> list[Any]:
            for resource in resources:
                self._resource_owner[resource.uri] = downstream.name
            return [r.model_copy(update={"name": self._resource_name(downstream.name, r.name)}) for r in resources]

        return await self._gather("resources", fetch, lambda c: c.resources, publish)

    async def list_resource_templates(self) -> list[mt.ResourceTemplate]:
        async def fetch(session: McpSession) -> Sequence[mt.ResourceTemplate]:
            return (await session.list_resource_templates()).resource_templates

        def publish(downstream: Downstream, templates: Sequence[mt.ResourceTemplate]) -> list[Any]:
            for template in templates:
                self._template_owner[template.uri_template] = downstream.name
            return [t.model_copy(update={"name": self._resource_name(downstream.name, t.name)}) for t in templates]

        return await self._gather("resources", fetch, lambda c: c.templates, publish)

    def _resource_name(self, server: str, name: str) -> str:
        return f"{server}{SEPARATOR}{name}" if self.downstreams[server].config.prefix else name

    async def read_resource(self, uri: str) -> tuple[str, mt.ReadResourceResult]:
        """Read `uri` from the server that listed it, else from the first server that has it; and that server's
        name."""
        last: MCPError | None = None
        for downstream in self._candidates(first=self._resource_owner.get(uri)):
            if (session := await self._session_of(downstream, "resources")) is None:
                continue
            try:
                read = await session.read_resource(await downstream.raw_uri(uri))
                return downstream.name, mt.ReadResourceResult.model_validate(read, from_attributes=True)
            except MCPError as exc:
                last = exc
        raise last or MCPError(mt.INVALID_PARAMS, f"no MCP server behind offprompt serves {uri}", data={"uri": uri})

    async def set_logging_level(self, level: mt.LoggingLevel) -> None:
        """Pass the client's log level on to every server that logs: to those running before the request is
        answered (`apply_log_levels`), to others as they start."""
        self.log_level = level
        await apply_log_levels(self._tg, [*self.downstreams.values(), *self._session_processes()], level)

    def _session_processes(self) -> list[Downstream]:
        return [d for own in self.session_downstreams.values() for d in own.values()]

    async def complete(
        self, ref: mt.PromptReference | mt.ResourceTemplateReference, argument: dict[str, str], context: dict[str, str]
    ) -> mt.Completion:
        """Completions from the server that owns the prompt (by its public name) or the resource template."""
        for downstream in self._candidates():
            if (session := await self._session_of(downstream, "completions")) is None:
                continue
            if isinstance(ref, mt.PromptReference):
                prompts = (await session.list_prompts()).prompts if capable(session, "prompts") else []
                own = [p.name for p in prompts if self._public(downstream.name, p.name) == ref.name]
                if not own:
                    continue
                ref = mt.PromptReference(name=own[0])
            elif self._template_owner.get(ref.uri) not in (None, downstream.name):
                continue
            else:  # the template as its server wrote it
                ref = ref.model_copy(update={"uri": await downstream.raw_uri(ref.uri)})
            return (await session.complete(ref, argument, context or None)).completion
        return mt.Completion(values=[])

    async def subscribe(self, uri: str, subscribe: bool) -> str:
        """Subscribe to (or unsubscribe from) a resource at the server that listed it; that server's name."""
        owner = self._resource_owner.get(uri)
        for downstream in self._candidates(first=owner):
            if owner not in (None, downstream.name):
                continue
            if (session := await self._session_of(downstream, "resources")) is None:
                continue
            raw = await downstream.raw_uri(uri)
            await (session.subscribe_resource(raw) if subscribe else session.unsubscribe_resource(raw))
            return downstream.name
        raise MCPError(mt.INVALID_PARAMS, f"no MCP server behind offprompt serves {uri}", data={"uri": uri})

    def sharing(self) -> dict[str, frozenset[str]]:
        """Each server's `share_with`: the other servers its secrets' values and sensitive outputs may go to."""
        return {name: frozenset(d.config.share_with) for name, d in self.downstreams.items() if d.config.share_with}

    def flows_to(self) -> dict[str, frozenset[str] | None]:
        """Each server's `flows_to`: the servers its stored outputs may be passed to (absent: any)."""
        return {
            name: frozenset(d.config.flows_to) for name, d in self.downstreams.items() if d.config.flows_to is not None
        }

    def resource_server(self, uri: str) -> str:
        """The server that listed `uri`, or "" when none did."""
        return self._resource_owner.get(uri, "")

    def server_secrets(self, server: str) -> SecretsMode:
        """The server's own `secrets`, for what is not a tool's: its resources and prompts."""
        return self.downstreams[server].config.secrets

    def timeout(self, route: Route) -> float | None:
        return self.downstreams[route.server].config.timeout_seconds or self.default_timeout

    def per_session(self, route: Route) -> bool:
        """Whether the route's server runs a process for each client session (`"per_session": true`)."""
        return self.downstreams[route.server].config.per_session

    def _serving(self, server: str, session: ClientSession | None) -> Downstream:
        """The process that serves `session`'s calls to `server`: its own for a `per_session` server (made on the
        session's first call, started by it), else the one every client shares."""
        shared = self.downstreams[server]
        if session is None or not shared.config.per_session:
            return shared
        own = self.session_downstreams.setdefault(session.key, {})
        downstream = own.get(server)
        if downstream is None:
            tool_places = self._tool_places.get(server)
            downstream = Downstream(
                server,
                shared.config,
                self._tools_of_a_session,
                self._places.get(server, ""),
                self._connect,
                tool_places,
            )
            downstream.on_relay = self._relay
            downstream.list_secrets = self.list_secrets
            downstream.log_level = self.log_level
            downstream.callers.sole = session.channel  # its roots are this client's, asked between calls too
            own[server] = downstream
            logger.info('MCP server "%s" gets a process of its own for a client session', server)
        return downstream

    async def _tools_of_a_session(self, listings: Collection[Listing]) -> None:
        """The tools clients see are the shared process's: a session's own process changes none of them."""

    def end_session(self, key: str) -> None:
        """Stop the processes of `per_session` servers that served client session `key` (it closed or expired)."""
        for downstream in self.session_downstreams.pop(key, {}).values():
            logger.info('stopping the process of "%s" for a client session that ended', downstream.name)
            downstream.stop()

    async def call(
        self,
        public: str,
        arguments: dict[str, Any] | None,
        progress: ProgressFn | None = None,
        caller: ClientChannel | None = None,
        session: ClientSession | None = None,
    ) -> tuple[Route, mt.CallToolResult]:
        """Call a proxied tool by its public name; `session` picks a `per_session` server's process."""
        route = self.routes().get(public)
        if route is None:
            raise KeyError(public)
        assert self._tg is not None, "the proxy is not running"
        downstream = self._serving(route.server, session)
        result = await downstream.call(self._tg, route.tool, arguments, self.timeout(route), progress, caller)
        return route, result

    async def call_raw(
        self,
        route: Route,
        arguments: dict[str, Any] | None,
        progress: RawProgress | None = None,
        caller: ClientChannel | None = None,
    ) -> dict[str, Any]:
        assert self._tg is not None, "the proxy is not running"
        downstream = self.downstreams[route.server]
        return await downstream.call_raw(self._tg, route.tool, arguments, self.timeout(route), progress, caller)

    async def start_task(
        self,
        route: Route,
        arguments: dict[str, Any] | None,
        task: dict[str, Any],
        caller: ClientChannel,
        session: ClientSession | None = None,
    ) -> dict[str, Any]:
        """A task-augmented call: the server's CreateTaskResult as it wrote it; the task is the caller's."""
        assert self._tg is not None, "the proxy is not running"
        downstream = self._serving(route.server, session)
        return await create_task(self._tg, self.tasks, downstream, route, arguments, task, caller, self.timeout(route))

    async def task_request(
        self, method: str, params: dict[str, Any], caller: ClientChannel
    ) -> tuple[TaskRecord, dict[str, Any]]:
        """`tasks/get`, `tasks/result` or `tasks/cancel`, sent to the server that runs the task (see
        `tasks.relay_task_request`)."""
        assert self._tg is not None, "the proxy is not running"
        return await relay_task_request(self._tg, self.tasks, method, params, caller, self.timeout)

    async def list_tasks(self, caller: ClientChannel) -> list[dict[str, Any]]:
        """The caller's tasks, as the servers that run them list them now."""
        assert self._tg is not None, "the proxy is not running"
        return await list_owned_tasks(self._tg, self.tasks, caller, self.default_timeout)

    def spawn(self, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `run` in the proxy's task group: a call that outlives the client request that started it (a
        2026-07-28 client's input-required round trip)."""
        assert self._tg is not None, "the proxy is not running"
        self._tg.start_soon(run)

    def attach_client(self, channel: ClientChannel) -> None:
        """The one client of a stdio server: it answers the downstreams' requests between calls too."""
        for downstream in self.downstreams.values():
            downstream.callers.sole = channel

    async def roots_changed(self) -> None:
        """Tell every running downstream that the client's roots changed, so they ask again."""
        for downstream in self._running():
            session = downstream.session
            if session is None:
                continue
            try:
                await session.send_roots_list_changed()
            except Exception as exc:  # a server that went away hears it on its next start
                logger.debug('could not tell "%s" the roots changed: %s', downstream.name, exc)
