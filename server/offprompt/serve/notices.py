"""Who hears of what: changed lists, and a downstream's log messages, resource updates and task statuses.

2026-07-28 clients hear of changed lists through `subscriptions/listen` (the `bus`); 2025-era clients by a
plain notification on their connection. Connections are held weakly: a connection that closed is gone (a
registry whose values referred back to their keys kept every connection, ~20 MiB a 1,000).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Collection, Iterable
from typing import Any

from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from offprompt.proxy.downstreams import Listing
from offprompt.serve.caller import Caller

logger = logging.getLogger(__name__)

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


class Notices:
    """The clients to tell, and the telling."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._handshake_clients: weakref.WeakSet[Connection] = weakref.WeakSet()  # 2025-era clients
        self._subscribers: dict[str, weakref.WeakSet[Connection]] = {}  # a downstream resource's, by URI
        self._task_owners: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()

    def remember(self, caller: Caller) -> None:
        """Note a 2025-era client, to tell it of changed lists and log messages later."""
        if caller.connection is not None and not caller.is_modern:
            self._handshake_clients.add(caller.connection)

    def subscribe(self, uri: str, connection: Connection | None) -> None:
        if connection is not None:
            self._subscribers.setdefault(uri, weakref.WeakSet()).add(connection)

    def unsubscribe(self, uri: str, connection: Connection | None) -> bool:
        """Forget `connection`'s subscription to `uri`; whether no client is subscribed to it any more."""
        if connection is not None:
            self._subscribers.get(uri, weakref.WeakSet()).discard(connection)
        return not self._subscribers.get(uri)

    def own_task(self, task_id: str, connection: Connection | None) -> None:
        """The client that created a task: its status notifications go there only."""
        if connection is not None:
            self._task_owners[task_id] = connection

    async def announce(self, listings: Collection[Listing]) -> None:
        """Tell every client that these lists changed."""
        for listing in listings:
            await self.bus.publish(_CHANGED_EVENTS[listing]())
        for connection in list(self._handshake_clients):
            try:
                for listing in listings:
                    await connection.notify(_CHANGED_NOTIFICATIONS[listing], None)
            except Exception:  # a client that went away
                logger.debug("could not notify a connection of changed lists", exc_info=True)

    async def relay(self, server: str, method: str, params: dict[str, Any]) -> None:
        """A downstream's log message (its logger named by its server), resource update or task status, to the
        clients it concerns."""
        if method == "notifications/message":
            logger_name = params.get("logger")
            params = {**params, "logger": f"{server}.{logger_name}" if logger_name else server}
            targets: Iterable[Connection] = list(self._handshake_clients)
        elif method == "notifications/tasks/status":
            owner = self._task_owners.get(str(params.get("taskId")))
            targets = [owner] if owner is not None else []
        else:
            targets = list(self._subscribers.get(str(params.get("uri")), ()))
        for connection in targets:
            try:
                await connection.notify(method, params)
            except Exception:  # a client that went away
                logger.debug("could not relay %s to a connection", method, exc_info=True)
