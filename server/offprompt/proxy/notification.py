"""A downstream's notification as the proxy hands it to the serving side: which server said what, how sensitive
it is, and the client whose call it belongs to (`notifications.py` decides what that client hears of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from offprompt.config import SecretsMode
from offprompt.proxy.client_features import ClientChannel


@dataclass(frozen=True, slots=True)
class Notification:
    """One notification of a downstream (`notifications/message`, `notifications/resources/updated`, ...)."""

    server: str
    method: str
    params: dict[str, Any]
    #: The server's `"secrets"`: "pass" leaves its secrets as they are.
    secrets: SecretsMode = "redact"
    #: Said by an `always` server, or while a call to an `always` tool was in flight to it.
    sensitive: bool = False
    #: The client whose call it belongs to: the one client with calls in flight to the server, else the server's
    #: sole client (stdio's one client, a `per_session` process's session); None: nobody's.
    client: ClientChannel | None = None


#: Hands a downstream's notification on, towards the clients.
RelayFn = Callable[[Notification], Awaitable[None]]
