"""Client features for the downstream servers: sampling, elicitation and roots, relayed to the right client.

offprompt tells every downstream it supports them. A request a downstream sends (`sampling/createMessage`,
`elicitation/create`, `roots/list`) goes to the client whose call the downstream is serving, and its answer
goes back. Downstreams are shared by every client of an HTTP server, so when calls of more than one client
are in flight to the same downstream, offprompt cannot tell whose request it is: it never guesses, it
refuses. Over stdio there is one client, and it answers even between calls.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as mt
from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)

#: What offprompt declares to each downstream at `initialize`.
CLIENT_CAPABILITIES: dict[str, Any] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}
#: The client capability each relayed request needs.
FEATURE_OF = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


class ClientChannel(Protocol):
    """One client session, as far as a downstream's requests are concerned."""

    def supports(self, feature: str) -> bool:
        """Whether the client declared `feature` ("sampling", "elicitation", "roots")."""
        ...

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Ask the client; its result as JSON, or an MCPError with its error."""
        ...

    @property
    def client(self) -> object:
        """The client connection this channel reaches: the channels of two calls of one client share it."""
        ...

    @property
    def owner(self) -> str:
        """Whose handles and namespaces the client's are: its bearer token's id, or "" (stdio, no tokens)."""
        ...

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Tell the client something (a downstream's log message, as `notifications.py` made it); never raises."""
        ...


@dataclass(frozen=True, slots=True)
class ClientSession:
    """One client session of an HTTP server, for the servers that run a process per session (`per_session`)."""

    key: str  # the session id
    channel: ClientChannel  # the session's own stream: its client answers between its calls too


def _uri(root: str) -> str:
    return root if "://" in root else f"file://{root}"


class Callers:
    """Which clients have calls in flight to one downstream, and where that downstream's requests go."""

    def __init__(self, server: str, roots: Sequence[str] = ()) -> None:
        self.server = server
        self.roots = [{"uri": _uri(r), "name": r.rstrip("/").rsplit("/", 1)[-1] or r} for r in roots]
        self.sole: ClientChannel | None = None  # the one client of a stdio server, answering between calls too
        self._in_flight: Counter[int] = Counter()  # calls in flight, by client
        self._channels: dict[int, list[ClientChannel]] = {}  # those calls' channels, by client

    def enter(self, channel: ClientChannel | None) -> None:
        """A call of `channel`'s client goes in flight to this downstream; `leave` when it has ended (in a
        `finally`). Two plain calls, not a context manager: every proxied call makes them."""
        if channel is None:
            return
        key = id(channel.client)  # one client's overlapping calls are no ambiguity
        self._channels.setdefault(key, []).append(channel)
        self._in_flight[key] += 1

    def leave(self, channel: ClientChannel | None) -> None:
        if channel is None:
            return
        key = id(channel.client)
        self._in_flight[key] -= 1
        self._channels[key].remove(channel)
        if not self._in_flight[key]:
            del self._in_flight[key], self._channels[key]

    def _channel(self, method: str) -> ClientChannel | None:
        if len(self._in_flight) > 1:
            raise MCPError(
                mt.INVALID_REQUEST,
                f"offprompt cannot tell which of its clients should answer {method} from "
                f'"{self.server}": calls of {len(self._in_flight)} clients are in flight to it, and it serves them all '
                "from one process. Call the tool again once the other client's call has ended, or give the server "
                f'a process per client session: "per_session": true in mcpServers.{self.server} of the offprompt '
                "config.",
            )
        if self._in_flight:
            return self._channels[next(iter(self._in_flight))][-1]  # a call still in flight: its stream is open
        return self.sole

    def listener(self) -> ClientChannel | None:
        """Where a notification of this downstream goes: the one client with calls in flight to it, else its sole
        client; None when calls of several clients are in flight (it is nobody's for sure) or nobody listens."""
        if len(self._in_flight) == 1:
            return self._channels[next(iter(self._in_flight))][-1]
        return self.sole

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a downstream's request, from the client it concerns."""
        feature = FEATURE_OF.get(method)
        if feature is None:
            raise MCPError(mt.METHOD_NOT_FOUND, f"offprompt does not relay {method}")
        channel = self._channel(method)
        if channel is None or not channel.supports(feature):
            if method == "roots/list" and (channel is None or self.roots):
                return {"roots": self.roots}  # the config's roots serve clients that send none
            who = "no client is connected" if channel is None else "the client did not declare it"
            raise MCPError(mt.METHOD_NOT_FOUND, f"{feature} is not available: {who}")
        logger.info('relaying %s from "%s" to its client', method, self.server)
        return await channel.request(method, params)
