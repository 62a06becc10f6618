"""A downstream's lists (tools, prompts, resources, templates) with their secrets as handles, taken so as they
arrive, before they are cached or listed.

A description, a title, a resource's name or URI reaches the model like a result does, and the lists are kept
on disk for the next start (`list_cache.py`, and the front answer of `serve/prelude.py`, made from what is
listed). The names of tools and prompts stay as written: they are how a call finds its tool. A URI's handles are
percent-encoded, so it stays a URI, and `raw_uri` puts the values back when a client reads or subscribes to it,
for the server that listed it only. Lists are every client's: their handles belong to `LISTS_OWNER`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar

import anyio.to_thread
from pydantic import BaseModel

from offprompt.secrets import Redactor, json_may_hold_secret
from offprompt.secrets.vault import QUOTED_HANDLE

__all__ = ["LISTS_OWNER", "OWNED_META", "ListSecrets"]

M = TypeVar("M", bound=BaseModel)

#: The owner of the handles in listed names and URIs: lists are every client's.
LISTS_OWNER: Final = ""
#: `_meta` keys a downstream may not set, in a list, a result or a notification: offprompt's own answers' facts,
#: and the progress token (offprompt gives a progress the client's own).
OWNED_META: Final = frozenset({"offprompt", "progressToken"})
_IDENTIFIERS: Final = frozenset({"name"})  # of a tool or prompt: how a call finds it
_URIS: Final = frozenset({"uri", "uriTemplate"})


class ListSecrets:
    """Redacts one memory's downstream lists with its secrets table, and reads their URIs back."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    async def redacted(self, server: str, items: Sequence[M]) -> list[M]:
        """`items` as `server` listed them, their secrets as handles (the same objects when they hold none)."""
        wire = [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
        if not json_may_hold_secret(wire) and not any(_owned_meta(w) for w in wire):
            return list(items)
        return await anyio.to_thread.run_sync(self._redact, server, items, wire)

    def _redact(self, server: str, items: Sequence[M], wire: list[dict[str, Any]]) -> list[M]:
        out: list[M] = []
        for item, dumped in zip(items, wire, strict=True):
            named = isinstance(dumped.get("name"), str) and not _URIS.intersection(dumped)  # a tool or a prompt
            fields = {key: self._field(server, key, value, keep=named) for key, value in dumped.items()}
            changed = any(fields[key] is not dumped[key] for key in dumped)
            out.append(type(item).model_validate(fields) if changed else item)
        return out

    def _field(self, server: str, key: str, value: Any, *, keep: bool) -> Any:
        if keep and key in _IDENTIFIERS:
            return value
        if key in _URIS and isinstance(value, str):
            return self.redactor.redact_text(value, LISTS_OWNER, server, in_uri=True)
        if key == "_meta" and isinstance(value, dict) and not OWNED_META.isdisjoint(value):
            value = {k: v for k, v in value.items() if k not in OWNED_META}
        return self.redactor.redact_json(value, LISTS_OWNER, server)

    async def raw_uri(self, server: str, uri: str) -> str:
        """A listed URI as `server` wrote it: its handles' values back, where `server`'s output held them."""
        if "%" not in uri or QUOTED_HANDLE.search(uri) is None:
            return uri
        return await anyio.to_thread.run_sync(self._raw_uri, server, uri)

    def _raw_uri(self, server: str, uri: str) -> str:
        def value(match: Any) -> str:
            secret = self.redactor.vault.reveal(match.group("id"), LISTS_OWNER)
            if secret is None or not self.redactor.may_receive(secret, server):
                return str(match.group(0))
            return secret.value

        return QUOTED_HANDLE.sub(value, uri)


def _owned_meta(dumped: dict[str, Any]) -> bool:
    meta = dumped.get("_meta")
    return isinstance(meta, dict) and not OWNED_META.isdisjoint(meta)
