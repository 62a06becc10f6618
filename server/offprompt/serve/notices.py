"""Who hears of what: changed lists, and what a downstream says beside its results.

2026-07-28 clients hear of changed lists through `subscriptions/listen` (the `bus`); 2025-era clients by a
plain notification on their connection. A downstream's notification goes through the notification boundary
(`offprompt.notifications`) to the client it belongs to: a resource update to the resource's subscribers, a
task status to the task's client, anything else (log messages first) to the client whose call it came during
(`Notification.client`), or to nobody. Connections are held weakly: a connection that closed is gone (a
registry whose values referred back to their keys kept every connection, ~20 MiB a 1,000).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Collection
from typing import Any

from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from offprompt.notifications import UPDATED, NotificationBoundary
from offprompt.proxy.downstream import Listing
from offprompt.proxy.list_secrets import LISTS_OWNER
from offprompt.proxy.notification import Notification
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

    def __init__(self, boundary: NotificationBoundary) -> None:
        self.boundary = boundary
        self.bus = InMemorySubscriptionBus()
        self._handshake_clients: weakref.WeakSet[Connection] = weakref.WeakSet()  # 2025-era clients
        self._subscribers: dict[str, weakref.WeakSet[Connection]] = {}  # a downstream resource's, by URI
        self._task_owners: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()
        self._owners: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()  # their tokens' ids

    def remember(self, caller: Caller) -> None:
        """Note a 2025-era client, to tell it of changed lists and log messages later."""
        if caller.connection is not None and not caller.is_modern:
            self._handshake_clients.add(caller.connection)

    def subscribe(self, uri: str, connection: Connection | None, owner: str = "") -> None:
        if connection is not None:
            self._subscribers.setdefault(uri, weakref.WeakSet()).add(connection)
            self._owners[connection] = owner

    def unsubscribe(self, uri: str, connection: Connection | None) -> bool:
        """Forget `connection`'s subscription to `uri`; whether no client is subscribed to it any more."""
        if connection is not None:
            self._subscribers.get(uri, weakref.WeakSet()).discard(connection)
        return not self._subscribers.get(uri)

    def own_task(self, task_id: str, connection: Connection | None, owner: str = "") -> None:
        """The client that created a task: its status notifications go there only."""
        if connection is not None:
            self._task_owners[task_id] = connection
            self._owners[connection] = owner

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

    async def relay(self, note: Notification) -> None:
        """A downstream's notification, to the clients it concerns, as the notification boundary makes it."""
        if note.method == UPDATED:
            params = await self.boundary.params_for(note, LISTS_OWNER)
            uri = params.get("uri") if params is not None else None  # as the clients listed it
            await self._tell(note, list(self._subscribers.get(str(uri), ())), params)
        elif note.method == "notifications/tasks/status":
            owner = self._task_owners.get(str(note.params.get("taskId")))
            await self._tell(note, [owner] if owner is not None else [])
        elif note.client is not None:
            params = await self.boundary.params_for(note, note.client.owner)
            if params is not None:
                await note.client.notify(note.method, params)
        else:
            logger.debug(
                'a %s of "%s" came with no call in flight, or during calls of several clients: told to no client',
                note.method,
                note.server,
            )

    async def _tell(self, note: Notification, targets: list[Connection], same: dict[str, Any] | None = None) -> None:
        """`note` to each connection in `targets`, made for each one's owner (`same`: made already, for all)."""
        for connection in targets:
            owner = self._owners.get(connection, "")
            params = same if same is not None else await self.boundary.params_for(note, owner)
            if params is None:
                continue
            try:
                await connection.notify(note.method, params)
            except Exception:  # a client that went away
                logger.debug("could not relay %s to a connection", note.method, exc_info=True)
