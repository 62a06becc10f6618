"""The one notification boundary: what a downstream says beside its results becomes what a client hears.

A downstream speaks during and between calls: log messages, progress, resource updates, task statuses, and
whatever the protocol adds. Each passes here, as a result passes `results.py`, for the SDK path, the stdio
fast lane and HTTP alike:

- its secrets become handles bound to the client that hears it (its owner) and to the server that said it,
  unless the server's `"secrets"` is `"pass"`; a resource update's URI gets the handles of the lists
  (`proxy/list_secrets.py`), so it names the URI the client listed and subscribed to;
- nothing of what an `always` server says, or says while a call to an `always` tool is in flight to it,
  reaches the client: a log message is dropped and said on stderr by its level and size, never stored (logs
  are not results the model asked for); a progress keeps its numbers and loses its words;
- `_meta` keys offprompt owns (`offprompt`, and a progress token: a progress goes out with the client's own)
  are never taken from a downstream, here or in a result (`without_owned_meta`).

Who hears it is settled before: the proxy names the client whose call it belongs to (`proxy/notification.py`;
nobody's when calls of several clients are in flight to a shared server), `serve/notices.py` sends resource
updates to their subscribers and task statuses to the task's client.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any, Final

import anyio.lowlevel
import anyio.to_thread
from mcp.shared.dispatcher import ProgressFnT

from offprompt.proxy.list_secrets import LISTS_OWNER, OWNED_META
from offprompt.proxy.notification import Notification
from offprompt.secrets import Redactor, json_may_hold_secret

logger = logging.getLogger(__name__)

LOG: Final = "notifications/message"
PROGRESS: Final = "notifications/progress"
UPDATED: Final = "notifications/resources/updated"
#: The words of a notification that is not a log, left out when its server is sensitive.
_WORDS: Final = {PROGRESS: "message", "notifications/tasks/status": "statusMessage"}
#: About the downstream's own requests to offprompt (their ids are not the client's): told to no client.
_OWN_AFFAIRS: Final = frozenset({"notifications/cancelled"})
#: How long an answer waits for the progress sent before it to be relayed.
SETTLE_SECONDS: Final = 5.0
_LEVELS: Final = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def without_owned_meta(message: dict[str, Any]) -> dict[str, Any]:
    """`message` (a result, a notification's params, a content block) without the `_meta` keys offprompt owns;
    `message` itself when it has none."""
    meta = message.get("_meta")
    if not isinstance(meta, dict) or OWNED_META.isdisjoint(meta):
        return message
    out = {key: value for key, value in message.items() if key != "_meta"}
    kept = {key: value for key, value in meta.items() if key not in OWNED_META}
    if kept:
        out["_meta"] = kept
    return out


def result_without_owned_meta(raw: dict[str, Any]) -> dict[str, Any]:
    """A downstream's result as JSON without offprompt's `_meta` keys, in itself or its content blocks; `raw`
    itself when it has none."""
    out = without_owned_meta(raw)
    content = out.get("content")
    if isinstance(content, list):
        blocks = [without_owned_meta(block) if isinstance(block, dict) else block for block in content]
        if any(a is not b for a, b in zip(blocks, content, strict=True)):
            out = {**out, "content": blocks}
    return out


class NotificationBoundary:
    """Turns downstream notifications into what each client hears; built once per server, on the result
    boundary's secrets table."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._explained: set[str] = set()  # servers whose dropped logs were explained once

    async def params_for(self, note: Notification, owner: str) -> dict[str, Any] | None:
        """What `owner`'s client hears of `note`: its params, or None when it hears nothing."""
        if note.method in _OWN_AFFAIRS:
            return None
        if note.sensitive and note.method == LOG:
            self._dropped(note)
            return None
        params = without_owned_meta(note.params)
        if note.method == LOG:
            name = params.get("logger")
            params = {**params, "logger": f"{note.server}.{name}" if name else note.server}
        words = _WORDS.get(note.method)
        if note.sensitive and words is not None and words in params:
            params = {key: value for key, value in params.items() if key != words}
        return await self._redacted(note, params, LISTS_OWNER if note.method == UPDATED else owner)

    async def progress(self, note: Notification, token: str | int, owner: str) -> dict[str, Any] | None:
        """A downstream's `notifications/progress` params for the client's call that gave `token`."""
        theirs = {key: value for key, value in note.params.items() if key != "progressToken"}
        params = await self.params_for(dataclasses.replace(note, method=PROGRESS, params=theirs), owner)
        return None if params is None else {**params, "progressToken": token}

    def progress_to(self, forward: ProgressFnT, note: Notification, owner: str) -> ProgressRelay:
        """`forward` (the SDK's progress to the caller's own token), its message passed through here first;
        `note` names the server and how sensitive its call is."""

        async def send(progress: float, total: float | None, message: str | None) -> None:
            if message is not None:
                params = await self.params_for(dataclasses.replace(note, params={"message": message}), owner)
                said = (params or {}).get("message")
                message = said if isinstance(said, str) else None
            await forward(progress, total, message)

        return ProgressRelay(send)

    async def _redacted(self, note: Notification, params: dict[str, Any], owner: str) -> dict[str, Any]:
        if note.secrets == "pass" or not json_may_hold_secret(params):
            return params
        if note.method == UPDATED:  # a URI: its handles percent-encoded, so it stays one
            return await anyio.to_thread.run_sync(self.redactor.redact_wire, params, owner, note.server)
        redacted: dict[str, Any] = await anyio.to_thread.run_sync(self.redactor.redact_json, params, owner, note.server)
        return redacted

    def _dropped(self, note: Notification) -> None:
        """Say a sensitive server's log was dropped: its level and size only, never its words."""
        level = note.params.get("level")
        shown = level if isinstance(level, str) and level in _LEVELS else "unknown"
        size = len(json.dumps(note.params))
        said = f'dropped a log message of "{note.server}" (level {shown}, {size:,} bytes)'
        if note.server in self._explained:
            logger.info("%s", said)
            return
        self._explained.add(note.server)
        logger.warning(
            '%s: it is marked sensitive ("off_prompt": "always"), or a call to a sensitive tool of it was in '
            "flight, so what it says goes to no client; its logs are not stored either",
            said,
        )


class ProgressRelay:
    """A call's progress relayed in the order it came, all of it before the call's answer.

    The SDK's client session runs each progress callback in a task of its own, and the answer's waiter wakes
    beside them: a message whose words are being redacted (in a thread) reached the client after the answer,
    where the client's request had ended and it was dropped, or after a later message. Each message here takes
    a fair lock in turn, and `settled()` takes it once more after them."""

    def __init__(self, send: ProgressFnT) -> None:
        self._send = send
        self._turn = anyio.Lock()
        self._unsent = 0  # messages begun and not yet relayed

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._unsent += 1
        try:
            async with self._turn:
                await self._send(progress, total, message)
        finally:
            self._unsent -= 1

    async def settled(self) -> None:
        """Wait for the messages the downstream sent before its answer (each started before the answer woke its
        waiter), at most `SETTLE_SECONDS`: a client that reads no progress must not hold the answer. A call with
        no progress pays one checkpoint, not a cancel scope and the lock."""
        await anyio.lowlevel.checkpoint()
        if not self._unsent:
            return
        with anyio.move_on_after(SETTLE_SECONDS):
            async with self._turn:
                pass
