"""One of the user's MCP servers as offprompt sees it: started once and reused for every call, restarted after
a crash or when hung (silent through 3 call timeouts in a row); its lists kept, redacted, and cached for the
next start.

Each downstream runs in its own task that holds the transport and the
`ClientSession` open until the proxy closes. Calls share that one session and
run concurrently. A downstream that fails to start, dies or times out fails
its own calls with a sentence that says so; the others are not affected, and
the next call to it starts it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as mt
from anyio.abc import TaskGroup, TaskStatus
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from offprompt.config import (
    ServerConfig,
    StdioServer,
    unknown_tool_entries,
    unknown_tool_message,
)
from offprompt.errors import DownstreamTimeoutError, DownstreamUnavailableError
from offprompt.proxy.client_features import Callers, ClientChannel
from offprompt.proxy.list_cache import CachedLists, ListCache, as_wire, entry_key
from offprompt.proxy.list_secrets import ListSecrets
from offprompt.proxy.notification import Notification, RelayFn
from offprompt.proxy.openers import Connect, Hooks, McpSession, open_session
from offprompt.proxy.stdio_session import ConnectionClosedError, RawProgress, StdioSession, connection_closed

logger = logging.getLogger(__name__)

START_TIMEOUT = 60.0
#: Calls past their timeout in a row, the server silent through each, that make a stdio server hung: killed.
HUNG_AFTER = 3

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

    async def apply_log_level(self, session: McpSession, applied: anyio.Event | None = None) -> None:
        """Send the clients' log level to the server, if it logs (a refusal is only logged); `applied` is set
        when the server has answered, or failed to."""
        level = self.log_level
        try:
            if level is not None and capable(session, "logging"):
                await session.set_logging_level(level)
        except MCPError as exc:
            logger.warning('"%s" refused logging level %s: %s', self.name, level, exc.message)
        except Exception as exc:  # a server that went away gets the level at its next start
            logger.debug('could not send logging level %s to "%s": %s', level, self.name, exc)
        finally:
            if applied is not None:
                applied.set()

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
    prompts = (await session.list_prompts()).prompts if capable(session, "prompts") else []
    resources: list[mt.Resource] = []
    templates: list[mt.ResourceTemplate] = []
    if capable(session, "resources"):
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


def capable(session: McpSession, feature: str) -> bool:
    capabilities = session.server_capabilities
    return capabilities is not None and getattr(capabilities, feature, None) is not None


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ConnectionClosedError):
        return exc.message
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


#: How long a client's log level waits for the running servers to take it.
LEVEL_WAIT_SECONDS = 5.0


async def apply_log_levels(tg: TaskGroup | None, downstreams: Sequence[Downstream], level: mt.LoggingLevel) -> None:
    """Give each server `level` (the ones not running as they start), waiting at most `LEVEL_WAIT_SECONDS` for
    the running ones to take it. Answered early, a client's next call could go in flight while a server still
    took it, and what the server said then (a line another client's call had left) reached that call's client."""
    applied: list[anyio.Event] = []
    for downstream in downstreams:
        downstream.log_level = level
        if (session := downstream.session) is not None and tg is not None:
            applied.append(done := anyio.Event())
            tg.start_soon(downstream.apply_log_level, session, done)
    with anyio.move_on_after(LEVEL_WAIT_SECONDS):
        for done in applied:
            await done.wait()
