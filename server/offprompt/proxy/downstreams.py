"""Connections to the user's MCP servers: started once, reused for every call, restarted after a crash
or when hung (silent through 3 call timeouts in a row).

Each downstream runs in its own task that holds the transport and the
`ClientSession` open until the proxy closes. Calls share that one session and
run concurrently. A downstream that fails to start, dies or times out fails
its own calls with a sentence that says so; the others are not affected, and
the next call to it starts it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup, TaskStatus
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from offprompt.config import (
    OffPrompt,
    SecretsMode,
    ServerConfig,
    StdioServer,
    unknown_tool_entries,
    unknown_tool_message,
)
from offprompt.errors import DownstreamTimeoutError, DownstreamUnavailableError
from offprompt.logs import keep_message_content_out_of_logs
from offprompt.proxy.client_features import Callers, ClientChannel, ClientSession
from offprompt.proxy.intent import with_intent
from offprompt.proxy.list_cache import CachedLists, ListCache, as_wire, entry_key
from offprompt.proxy.list_secrets import ListSecrets
from offprompt.proxy.notification import Notification, RelayFn
from offprompt.proxy.openers import Connect, Hooks, McpSession, open_session
from offprompt.proxy.stdio_session import ConnectionClosedError, RawProgress, StdioSession, connection_closed
from offprompt.proxy.tasks import TaskBook, TaskRecord
from offprompt.secrets import Redactor

logger = logging.getLogger(__name__)
keep_message_content_out_of_logs()  # results of HTTP downstreams, `always` ones included

MAX_NAME = 64
SEPARATOR = "__"
START_TIMEOUT = 60.0
#: Calls past their timeout in a row, the server silent through each, that make a stdio server hung: killed.
HUNG_AFTER = 3
#: How long a listing waits for servers still starting that have no cached list (an `npx -y` server downloads
#: itself on its first run); Claude Code gives tools/list 5 s, so a later one is announced with list_changed.
LIST_WAIT_SECONDS = 3.0
RETRY_SECONDS = 30.0  # how often a server that never started is tried again, when the client lists tools

ProgressFn = ProgressFnT
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
#: Which of the lists a client holds have changed.
Listing = Literal["tools", "prompts", "resources"]
EVERY_LISTING: tuple[Listing, ...] = ("tools", "prompts", "resources")
TOOLS_LISTING: tuple[Listing, ...] = ("tools",)
ChangeFn = Callable[[Collection[Listing]], Awaitable[None]]
#: A downstream's own changed lists, announced as offprompt's (whose lists hold them).
_CHANGED_LISTINGS: dict[str, Listing] = {
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
#: Names offprompt keeps for its own tools (memory_load, ...): an unprefixed server's tool may not take one.
RESERVED_PREFIX = "memory_"


def public_name(server: str, tool: str, *, force_hash: bool = False) -> str:
    """`{server}__{tool}` with characters outside [A-Za-z0-9_-] made `_`, cut to 64 with a stable hash."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}{SEPARATOR}{tool}")
    if len(name) <= MAX_NAME and not force_hash:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def collision_message(server: str, kind: str, name: str, other: str | None) -> str:
    """One line: which unprefixed name clashes with what, that it is left out, and the fix."""
    clash = (
        f'names starting with "{RESERVED_PREFIX}" are offprompt\'s own tools'
        if other is None
        else f'MCP server "{other}" lists a {kind} under that name too'
    )
    fix = f'"prefix": true on "{server}"' if other is None else f'"prefix": true on "{server}" or "{other}"'
    return (
        f'MCP server "{server}" lists {kind} "{name}" under its own name ("prefix": false), but {clash}: '
        f'"{server}"\'s {kind} is left out. Set {fix} in the offprompt config (mcpServers.{server}.prefix).'
    )


def _where(config: ServerConfig) -> str:
    if isinstance(config, StdioServer):
        return f"command {' '.join([config.command, *config.args])!r}"
    return f"url {config.url}"


class Downstream:
    """One of the user's MCP servers, as offprompt sees it."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        on_tools_changed: ChangeFn,
        place: str = "",
        connect: Connect = open_session,
        tool_places: Mapping[str, str] | None = None,
        cache: ListCache | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self._connect = connect
        self._cache = cache
        self._cache_key = ""
        self.callers = Callers(name, config.roots)  # who answers the server's sampling, elicitation and roots
        self.tool_places = tool_places or {}  # where the config's `tools` entries are: "mcp.json:9: …tools.x"
        self._warned: set[str] = set()
        self.on_relay: RelayFn | None = None  # what the server says beside its results, for the clients
        self._timeouts = 0  # calls past their timeout since the server last answered one
        self._sensitive_calls = 0  # calls in flight to an `always` tool: what the server says meanwhile is theirs
        #: Its `always` tools, settled here: a call reads this set, not the config (one call less on the tiny call).
        self._always = frozenset(t for t in config.tools if config.policy_for(t) == "always")
        self.list_secrets: ListSecrets | None = None  # its lists' secrets become handles as they arrive
        self.log_level: mt.LoggingLevel | None = None  # the clients' last logging/setLevel, sent at each start
        self.tools_version = 0
        self._tools: list[mt.Tool] = []
        self.place = place  # where the config names its command or url: "mcp.json:7: mcpServers.fs.command"
        self.error: str | None = None
        self.starts = 0
        self.last_attempt = -float("inf")
        self._on_tools_changed = on_tools_changed
        self.died: str | None = None  # why a running server stopped, until a call has reported it
        self._session: McpSession | None = None
        self._stop: anyio.Event | None = None
        self._start_lock = anyio.Lock()
        #: What is listed before this server answers: its lists from the last run, until it runs.
        self.cached: CachedLists | None = None
        if cache is not None:
            command = config.command if isinstance(config, StdioServer) else None
            self._cache_key = entry_key(name, config.written, command)
            self.cached = cache.lists(self._cache_key)
            if self.cached is not None:
                self.tools = self.cached.tools

    async def redacted(self, items: Sequence[M]) -> list[M]:
        """Listed `items` as clients may see them and the cache may keep them: their secrets as handles."""
        if self.list_secrets is None or not items:
            return list(items)
        return await self.list_secrets.redacted(self.name, items)

    async def raw_uri(self, uri: str) -> str:
        """A URI this server listed, as it wrote it (`uri` as the clients were given it)."""
        return uri if self.list_secrets is None else await self.list_secrets.raw_uri(self.name, uri)

    @property
    def cached_tools(self) -> list[mt.Tool] | None:
        return None if self.cached is None else self.cached.tools

    @property
    def listable(self) -> bool:
        """Whether its lists can be given now: it runs, it failed (nothing to wait for), or they are cached."""
        return self.running or self.error is not None or self.cached is not None

    @property
    def tools(self) -> list[mt.Tool]:
        """The server's tools as it last listed them (kept while it is down, so its calls can say so)."""
        return self._tools

    @tools.setter
    def tools(self, tools: list[mt.Tool]) -> None:
        self._tools = tools
        self.tools_version += 1
        for entry, suggestion in unknown_tool_entries(self.config, {t.name for t in tools}):
            if entry not in self._warned:  # once per entry, not at every relisting
                self._warned.add(entry)
                place = self.tool_places.get(entry) or f"mcpServers.{self.name}.tools.{entry}"
                logger.warning("%s", unknown_tool_message(place, self.name, entry, suggestion))

    @property
    def running(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> McpSession | None:
        return self._session

    async def ensure_started(self, tg: TaskGroup) -> McpSession:
        """The live session, starting the server first if it is not running."""
        if self._session is not None:
            return self._session  # the common case, without the lock: anyio's yields to the loop at every acquire
        async with self._start_lock:
            if self._session is None:
                self.last_attempt = anyio.current_time()
                try:
                    with anyio.fail_after(START_TIMEOUT):
                        await tg.start(self._run)
                except TimeoutError:
                    self.error = f"it did not answer initialize within {START_TIMEOUT:.0f} s"
                    raise DownstreamUnavailableError(self._unavailable()) from None
                except Exception as exc:
                    self.error = _describe(exc)
                    raise DownstreamUnavailableError(self._unavailable()) from None
            assert self._session is not None
            return self._session

    def _unavailable(self) -> str:
        return (
            f'MCP server "{self.name}" could not be started ({self.place or _where(self.config)}): {self.error}. '
            "Check its entry in the offprompt config; offprompt tries again on the next call."
        )

    def _exited(self, reason: str | None) -> None:
        """The connection ended by itself; `reason` says why when no call has reported it yet."""
        if reason is not None and self._stop is not None and not self._stop.is_set():
            self.died = reason
            logger.warning('MCP server "%s" stopped: %s', self.name, reason)
        self.stop()

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        stop = anyio.Event()
        started = False
        try:
            hooks = Hooks(self._on_notification, self._exited, self.callers.answer)
            async with self._connect(self.name, self.config, hooks) as session:
                self.starts += 1
                live = await self.redacted(await _list_all_tools(session))
                previous, self.cached = self.cached, None
                changed = self._tools_changed(previous, live)
                self.tools = live
                self._session, self._stop, self.error, self.died = session, stop, None, None
                self._timeouts = 0
                started = True
                task_status.started()
                if self.log_level is not None:
                    await self.apply_log_level(session)
                if changed:
                    await self._on_tools_changed(TOOLS_LISTING)
                await self._keep_lists(session, previous, live)
                await stop.wait()
        except Exception as exc:
            if not started:
                raise
            logger.warning('MCP server "%s" stopped: %s', self.name, _describe(exc))
        finally:
            if self._stop is stop:
                self._session = self._stop = None

    def _tools_changed(self, previous: CachedLists | None, live: list[mt.Tool]) -> bool:
        """Whether the live tools differ from the cached ones the clients were given (a change is kept for the
        next start at once, so a server that dies right after listing still leaves its list)."""
        if self._cache is None:
            return False
        cached = None if previous is None else previous.tools
        changed = cached is None or as_wire(cached) != as_wire(live)  # dumped once each, not twice
        if changed:
            kept = previous or CachedLists(tools=live)
            self._cache.save(self._cache_key, CachedLists(live, kept.prompts, kept.resources, kept.templates))
        if cached is None:
            return False
        gone = sorted({t.name for t in cached} - {t.name for t in live})
        if gone:
            logger.warning(
                'MCP server "%s" no longer lists %s, which it listed last time; clients are told its new list',
                self.name,
                ", ".join(gone),
            )
        return changed

    async def _keep_lists(self, session: McpSession, previous: CachedLists | None, tools: list[mt.Tool]) -> None:
        """After the start: list the server's prompts, resources and templates, keep them for the next start,
        and tell the clients of those that differ from the cached ones they were given."""
        if self._cache is None:
            return
        try:
            prompts, resources, templates = await _list_the_rest(session)
            lists = CachedLists(
                tools, await self.redacted(prompts), await self.redacted(resources), await self.redacted(templates)
            )
        except Exception as exc:  # the lists go live from the session anyway; only the next start waits
            logger.info('listing the prompts and resources of "%s" to keep them failed: %s', self.name, exc)
            return
        if previous is not None and previous.wire() == lists.wire():
            return
        self._cache.save(self._cache_key, lists)
        if previous is None:
            return  # nothing was given from the cache: the proxy announces a late start itself
        changed: list[Listing] = []
        if as_wire(previous.prompts) != as_wire(lists.prompts):
            changed.append("prompts")
        if as_wire([*previous.resources, *previous.templates]) != as_wire([*lists.resources, *lists.templates]):
            changed.append("resources")
        if changed:
            await self._on_tools_changed(changed)

    async def apply_log_level(self, session: McpSession) -> None:
        """Send the clients' log level to the server, if it logs (a refusal is only logged)."""
        level = self.log_level
        if level is None or not _capable(session, "logging"):
            return
        try:
            await session.set_logging_level(level)
        except MCPError as exc:
            logger.warning('"%s" refused logging level %s: %s', self.name, level, exc.message)
        except Exception as exc:  # a server that went away gets the level at its next start
            logger.debug('could not send logging level %s to "%s": %s', level, self.name, exc)

    async def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        # Whose it is and how sensitive, as things stand when it arrives (before any wait).
        client = self.callers.listener()
        sensitive = self.config.off_prompt == "always" or self._sensitive_calls > 0
        if method == "notifications/tools/list_changed":
            if self._session is not None:
                self.tools = await self.redacted(await _list_all_tools(self._session))
                await self._on_tools_changed(TOOLS_LISTING)
        elif method in _CHANGED_LISTINGS:
            await self._on_tools_changed([_CHANGED_LISTINGS[method]])
        elif self.on_relay is not None:
            await self.on_relay(Notification(self.name, method, params, self.config.secrets, sensitive, client))

    async def call(
        self,
        tg: TaskGroup,
        tool: str,
        arguments: dict[str, Any] | None,
        limit: float | None,
        progress: ProgressFn | None = None,
        caller: ClientChannel | None = None,
    ) -> mt.CallToolResult:
        """Call a tool; the result as an SDK model. `caller` answers what the server asks its client meanwhile."""

        async def send(session: McpSession) -> mt.CallToolResult:
            return await session.call_tool(tool, arguments, progress_callback=progress)

        return await self._guarded(tg, tool, limit, send, caller)

    async def call_raw(
        self,
        tg: TaskGroup,
        tool: str,
        arguments: dict[str, Any] | None,
        limit: float | None,
        progress: RawProgress | None = None,
        caller: ClientChannel | None = None,
    ) -> dict[str, Any]:
        """Call a tool of a local server; the result exactly as the server wrote it (the fast lane)."""

        async def send(session: McpSession) -> dict[str, Any]:
            assert isinstance(session, StdioSession)
            return await session.request("tools/call", {"name": tool, "arguments": arguments or {}}, progress)

        return await self._guarded(tg, tool, limit, send, caller, native=True)

    async def request_raw(
        self,
        tg: TaskGroup,
        method: str,
        params: dict[str, Any],
        limit: float | None,
        caller: ClientChannel | None = None,
    ) -> dict[str, Any]:
        """Any request to a local server, its result as the server wrote it (tasks: a result the SDK can't type)."""

        async def send(session: McpSession) -> dict[str, Any]:
            if not isinstance(session, StdioSession):
                raise MCPError(
                    mt.INVALID_REQUEST,
                    f'offprompt relays tasks only for local (stdio) servers; "{self.name}" is remote. '
                    "Call the tool without task augmentation.",
                )
            return await session.request(method, params)

        return await self._guarded(tg, method, limit, send, caller)

    @property
    def raw_capable(self) -> bool:
        """Whether calls can take the fast lane: a live local server with no death left to report."""
        return isinstance(self._session, StdioSession) and self.died is None

    async def _guarded(
        self,
        tg: TaskGroup,
        tool: str,
        limit: float | None,
        send: Callable[[McpSession], Awaitable[T]],
        caller: ClientChannel | None,
        *,
        native: bool = False,
    ) -> T:
        """`send` for `caller`'s client, which is in flight to this downstream meanwhile (so that the server's
        requests during the call reach it): see `_send`."""
        self.callers.enter(caller)
        sensitive = tool in self._always
        self._sensitive_calls += sensitive
        try:
            return await self._send(tg, tool, limit, send, native)
        finally:
            self.callers.leave(caller)
            self._sensitive_calls -= sensitive

    async def _send(
        self, tg: TaskGroup, tool: str, limit: float | None, send: Callable[[McpSession], Awaitable[T]], native: bool
    ) -> T:
        """`send` to the running server within `limit` seconds, its failures told as offprompt's errors. `native`:
        `send` is asyncio's own code (the fast lane's StdioSession), so asyncio's timeout bounds it, at half the cost
        of anyio's on every call; anyio's respects the shielded scopes of the SDK's sessions."""
        if self.died is not None:
            reason, self.died = self.died, None
            raise DownstreamUnavailableError(
                f'MCP server "{self.name}" had stopped ({reason}). offprompt starts it again on the next call.'
            )
        session = await self.ensure_started(tg)
        try:
            if native:
                async with asyncio.timeout(limit):
                    answer = await send(session)
            else:
                with anyio.fail_after(limit):
                    answer = await send(session)
            self._timeouts = 0
            return answer
        except TimeoutError:
            raise self._timed_out(session, tool, limit) from None
        except MCPError as exc:
            if not connection_closed(exc, session):
                raise  # the server answered with a protocol error (-32000 included): it is alive
            self.stop()
            raise DownstreamUnavailableError(
                f'MCP server "{self.name}" stopped during the call ({exc.message}). '
                "offprompt starts it again on the next call."
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            self.stop()
            raise DownstreamUnavailableError(
                f'MCP server "{self.name}" stopped during the call ({_describe(exc)}). '
                "offprompt starts it again on the next call."
            ) from None

    def _timed_out(self, session: McpSession, tool: str, limit: float | None) -> DownstreamTimeoutError:
        """What a call past its timeout tells; a server wedged on an unfinished message, or silent through
        `HUNG_AFTER` timeouts in a row, is killed (every later call would wait out its timeout) and starts again."""
        self._timeouts += 1
        within = f'"{self.name}.{tool}" did not answer within {limit:.0f} s'
        reason = None
        if isinstance(session, StdioSession) and session.stalled_for() >= min(5.0, (limit or 0) / 2):
            if session.partial_line_bytes:
                # Wedged, not slow: every later answer would be glued to the unfinished message and lost.
                reason = (
                    f"left a message of {session.partial_line_bytes:,} bytes unfinished (no end of line) past the "
                    "call's timeout"
                )
            elif self._timeouts >= HUNG_AFTER:  # hung, not slow: it wrote nothing through each of them
                reason = f"answered none of its last {self._timeouts} calls in a row, silent past each one's timeout"
        if reason is None or not isinstance(session, StdioSession):
            return DownstreamTimeoutError(
                f"{within}; the call was abandoned. Try again, or raise timeout_seconds for this server in the "
                "offprompt config."
            )
        logger.warning('MCP server "%s" %s: stopping it; it starts again on the next call', self.name, reason)
        session.abandon(f"it {reason}")
        self.stop()
        self._timeouts = 0
        return DownstreamTimeoutError(
            f'{within}, and MCP server "{self.name}" {reason}: offprompt stopped it (its other calls in flight '
            "failed) and starts it again on the next call."
        )

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._session = None


async def _list_the_rest(
    session: McpSession,
) -> tuple[list[mt.Prompt], list[mt.Resource], list[mt.ResourceTemplate]]:
    """A server's prompts, resources and resource templates (first pages, as clients are given them)."""
    prompts = (await session.list_prompts()).prompts if _capable(session, "prompts") else []
    resources: list[mt.Resource] = []
    templates: list[mt.ResourceTemplate] = []
    if _capable(session, "resources"):
        resources = (await session.list_resources()).resources
        try:
            templates = (await session.list_resource_templates()).resource_templates
        except MCPError as exc:
            if exc.code != mt.METHOD_NOT_FOUND:
                raise
    return list(prompts), list(resources), list(templates)


async def _list_all_tools(session: McpSession) -> list[mt.Tool]:
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=mt.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _labels(server: str, tools: Sequence[mt.Tool]) -> tuple[list[str], list[str]]:
    """Each tool's name, the second and later of one name given `__2`, `__3`, … so no two are listed alike (a
    client keeps one of two tools of one name, or refuses the list); and a line for each name listed twice."""
    seen: dict[str, int] = {}
    labels: list[str] = []
    for tool in tools:
        seen[tool.name] = seen.get(tool.name, 0) + 1
        labels.append(tool.name if seen[tool.name] == 1 else f"{tool.name}{SEPARATOR}{seen[tool.name]}")
    repeated = [
        f'MCP server "{server}" lists tool "{name}" {count} times; offprompt lists them as "{name}", '
        + ", ".join(f'"{name}{SEPARATOR}{n}"' for n in range(2, count + 1))
        + f' (each calls "{name}"). Tell the server\'s authors.'
        for name, count in seen.items()
        if count > 1
    ]
    return labels, repeated


def _capable(session: McpSession, feature: str) -> bool:
    capabilities = session.server_capabilities
    return capabilities is not None and getattr(capabilities, feature, None) is not None


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ConnectionClosedError):
        return exc.message
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


@dataclass(frozen=True, slots=True)
class Route:
    """Where a public tool name goes, and what the config says of that tool: settled when the routes are built,
    so a call reads them here instead of asking the config each time. Two routes are equal by server and tool."""

    server: str
    tool: str
    mode: OffPrompt = field(default="auto", compare=False)
    secrets: SecretsMode = field(default="redact", compare=False)
    #: The tool's `intent` argument is offprompt's (added to its schema when listed): never forwarded.
    intent: bool = field(default=False, compare=False)
    secrets_allow: frozenset[str] = field(default=frozenset(), compare=False)
    #: The tool's input schema as its server lists it (without offprompt's `intent`).
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    max_argument_bytes: int | None = field(default=None, compare=False)


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
        routes: dict[str, Route] = {}
        listed: list[mt.Tool] = []
        collisions: list[str] = []
        duplicates: list[str] = []
        for name, downstream in self.downstreams.items():
            labels, repeated = _labels(name, downstream.tools)
            duplicates += repeated
            for tool, label in zip(downstream.tools, labels, strict=True):
                if downstream.config.prefix:
                    public = public_name(name, label)
                    if public in routes:  # "a__b"+"c" and "a"+"b__c" meet: keep both, apart
                        public = public_name(name, label, force_hash=True)
                else:
                    public = label
                    clash = self._clash(name, "tool", public, routes.get(public))
                    if clash is not None:
                        collisions.append(clash)
                        continue
                update: dict[str, Any] = {"name": public, "output_schema": None}
                schema = with_intent(tool.input_schema) if self.intent else None
                if schema is not None:
                    update["input_schema"] = schema
                config = downstream.config
                mode, secrets = config.policy_for(tool.name), config.secrets_for(tool.name)
                allow = config.secrets_allow_for(tool.name)
                routes[public] = Route(
                    name,
                    tool.name,
                    mode,
                    secrets,
                    schema is not None,
                    allow,
                    tool.input_schema,
                    config.max_argument_bytes,
                )
                listed.append(tool.model_copy(update=update))
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
            if _capable(session, feature):
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
        return session if _capable(session, feature) else None

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
        """Pass the client's log level on to every server that logs: at once to those running, and to each other
        one as it starts (never waiting for a start)."""
        self.log_level = level
        for downstream in [*self.downstreams.values(), *self._session_processes()]:
            downstream.log_level = level
            session = downstream.session
            if session is not None and self._tg is not None:
                self._tg.start_soon(downstream.apply_log_level, session)

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
                prompts = (await session.list_prompts()).prompts if _capable(session, "prompts") else []
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
        params = {"name": route.tool, "arguments": arguments or {}, "task": task}
        created = await downstream.request_raw(self._tg, "tools/call", params, self.timeout(route), caller)
        found = created.get("task")
        task_id = found.get("taskId") if isinstance(found, dict) else None
        if not isinstance(task_id, str):
            raise MCPError(mt.INTERNAL_ERROR, f'"{route.server}.{route.tool}" created no task: it answered {created}')
        self.tasks.add(task_id, TaskRecord(route, downstream, id(caller.client)))
        return created

    async def task_request(
        self, method: str, params: dict[str, Any], caller: ClientChannel
    ) -> tuple[TaskRecord, dict[str, Any]]:
        """`tasks/get`, `tasks/result` or `tasks/cancel`, sent to the server that runs the task. `tasks/result`
        waits for the task's end; what the server asks the client meanwhile (input_required) goes to `caller`."""
        assert self._tg is not None, "the proxy is not running"
        _, record = self.tasks.find(params, id(caller.client))
        limit = None if method == "tasks/result" else self.timeout(record.route)  # a task runs as long as it runs
        return record, await record.downstream.request_raw(self._tg, method, params, limit, caller)

    async def list_tasks(self, caller: ClientChannel) -> list[dict[str, Any]]:
        """The caller's tasks, as the servers that run them list them now."""
        assert self._tg is not None, "the proxy is not running"
        owned = self.tasks.owned(id(caller.client))
        listed: list[dict[str, Any]] = []
        for downstream in {id(r.downstream): r.downstream for r in owned.values()}.values():
            try:
                page = await downstream.request_raw(self._tg, "tasks/list", {}, self.default_timeout, caller)
            except (MCPError, DownstreamUnavailableError, DownstreamTimeoutError) as exc:
                logger.warning('listing the tasks of "%s" failed: %s', downstream.name, exc)
                continue
            tasks = page.get("tasks")
            listed += (
                [t for t in tasks if isinstance(t, dict) and t.get("taskId") in owned]
                if isinstance(tasks, list)
                else []
            )
        return listed

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
