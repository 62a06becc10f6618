"""Secrets out of results, handles back into arguments: the two directions of one table.

`Redactor.redact_wire` walks a protocol result as JSON (a tool result, a read resource, a prompt) and replaces
each secret in every string a model may be shown by its handle: texts, URIs (the handle percent-encoded there,
so the URI stays valid), names, titles, descriptions, annotations, `_meta` and structured content. Binaries
(`data` of an image or audio block, a resource's `blob`), the protocol's own `_meta` keys and offprompt's own
`memory://` links are left alone. `redact_result`, `redact_resource`, `redact_prompt` and `redact_error` do the
same to the SDK's models. `Redactor.value_for` gives a handle's value back for a proxied call's arguments
(`offprompt.arguments` fills them in), for a server that may receive it: one whose output held the value, or
one its `share_with` names; `restore` does so leniently in a stored output passed on. The table opens on first
use, so a server that never meets a secret never creates it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import mcp_types as mt
from pydantic import BaseModel

from offprompt.errors import SecretNotSharedError, UnknownSecretError
from offprompt.secrets.detect import find_secrets
from offprompt.secrets.vault import HANDLE, Secret, SecretStore, SecretVault

__all__ = ["HANDLE_MARK", "VAULT_FILE", "Redactor", "holds_handle"]

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

#: Every handle starts with this; a string without it (or its percent-encoded form) needs no substitution.
HANDLE_MARK = "⟦secret:"
_QUOTED_MARK = "%E2%9F%A6SECRET%3A"

#: `_meta` keys of the protocol and of offprompt's own answers: never a downstream's secret, and rewriting them
#: would break what they point to.
PROTOCOL_META = frozenset({"progressToken", "io.modelcontextprotocol/related-task", "offprompt"})
#: offprompt's own links (`memory://{memory_name}/{namespace}`).
OWN_URI = "memory://"
_BINARY_BLOCKS = frozenset({"image", "audio"})

#: The secrets table's file in a memory's directory.
VAULT_FILE = "secrets.sqlite3"


def holds_handle(text: str) -> bool:
    """Whether `text` may hold a handle, as written or percent-encoded in a URI."""
    return HANDLE_MARK in text or ("%" in text and _QUOTED_MARK in text.upper())


class Redactor:
    """Redacts results and substitutes handles for one memory's secrets table.

    `directory` is where the table lives (`secrets.sqlite3`), or a function giving it (or the table itself: a
    shared memory's, in its database) on first use (the memory of `offprompt.wrap` opens late); None keeps the
    table in this process only. `sharing` maps a server to the
    servers its `share_with` names: they may receive the values of its handles too.
    """

    def __init__(
        self,
        directory: Path | Callable[[], Path | SecretStore | None] | None = None,
        sharing: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        self._directory = directory
        self._vault: SecretStore | None = None
        self._open_lock = threading.Lock()
        self.sharing: Mapping[str, Collection[str]] = sharing or {}

    @property
    def vault(self) -> SecretStore:
        with self._open_lock:
            if self._vault is None:
                source = self._directory() if callable(self._directory) else self._directory
                if source is None or isinstance(source, Path):
                    self._vault = SecretVault(None if source is None else source / VAULT_FILE)
                else:
                    self._vault = source
            return self._vault

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()

    # -- results -> handles ---------------------------------------------------------------------------------

    def redact_text(
        self, text: str, owner: str, server: str, *, in_uri: bool = False, allow: Collection[str] = ()
    ) -> str:
        """`text` with every secret replaced by its handle (the same text when it holds none); `server` produced
        it. `in_uri`: the handles go in percent-encoded. `allow`: kinds of secret left as they are (the
        tool's `secrets_allow`)."""
        findings = [f for f in find_secrets(text) if f.kind not in allow] if allow else find_secrets(text)
        if not findings:
            return text
        parts: list[str] = []
        at = 0
        for finding in findings:
            handle = self.vault.handle(finding.value, finding.kind, owner, server)
            parts += [text[at : finding.start], quote(handle, safe="") if in_uri else handle]
            at = finding.end
        parts.append(text[at:])
        logger.info("replaced %d secret(s) by handles: %s", len(findings), ", ".join(f.kind for f in findings))
        return "".join(parts)

    def redact_json(self, value: Any, owner: str, server: str, allow: Collection[str] = ()) -> Any:
        """Every string in a JSON value redacted; the very same object when nothing changed."""
        if isinstance(value, str):
            return self.redact_text(value, owner, server, allow=allow)
        if isinstance(value, dict):
            items = {key: self.redact_json(item, owner, server, allow) for key, item in value.items()}
            return value if all(items[key] is value[key] for key in value) else items
        if isinstance(value, list):
            redacted = [self.redact_json(item, owner, server, allow) for item in value]
            return value if all(a is b for a, b in zip(redacted, value, strict=True)) else redacted
        return value

    def redact_wire(self, raw: dict[str, Any], owner: str, server: str, allow: Collection[str] = ()) -> dict[str, Any]:
        """A protocol result as JSON (a tool result, a read resource, a prompt, an error's data) with every string
        a model may see redacted; `raw` itself when unchanged."""
        redacted: dict[str, Any] = self._protocol(raw, owner, server, None, allow)
        return redacted

    def _protocol(self, value: Any, owner: str, server: str, key: str | None, allow: Collection[str]) -> Any:
        """One value of a protocol message: its own fields by their meaning, a payload (structured content, a
        server's own `_meta` keys) as plain JSON."""
        if isinstance(value, str):
            if key == "uri":
                if value.startswith(OWN_URI):
                    return value
                return self.redact_text(value, owner, server, in_uri=True, allow=allow)
            return self.redact_text(value, owner, server, allow=allow)
        if isinstance(value, list):
            items = [self._protocol(item, owner, server, key, allow) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if not isinstance(value, dict):
            return value
        binary = value.get("type") in _BINARY_BLOCKS
        out: dict[str, Any] = {}
        for name, item in value.items():
            if name == "blob" or (binary and name == "data"):
                out[name] = item  # base64: no text to read a secret from
            elif name == "structuredContent":
                out[name] = self.redact_json(item, owner, server, allow)
            elif name == "_meta" and isinstance(item, dict):
                out[name] = self._meta(item, owner, server, allow)
            else:
                out[name] = self._protocol(item, owner, server, name, allow)
        return value if all(out[name] is value[name] for name in value) else out

    def _meta(self, meta: dict[str, Any], owner: str, server: str, allow: Collection[str]) -> dict[str, Any]:
        out = {
            key: item if key in PROTOCOL_META else self.redact_json(item, owner, server, allow)
            for key, item in meta.items()
        }
        return meta if all(out[key] is meta[key] for key in meta) else out

    def _redact_model(self, model: M, owner: str, server: str, allow: Collection[str] = ()) -> M:
        dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
        redacted = self.redact_wire(dumped, owner, server, allow)
        return model if redacted is dumped else type(model).model_validate(redacted)

    def redact_result(
        self, result: mt.CallToolResult, owner: str, server: str, allow: Collection[str] = ()
    ) -> mt.CallToolResult:
        """The result with its secrets replaced by handles; the very same object when it holds none."""
        return self._redact_model(result, owner, server, allow)

    def redact_resource(self, result: mt.ReadResourceResult, owner: str, server: str) -> mt.ReadResourceResult:
        """A proxied resource as read, every string of it redacted; the very same object when it holds none."""
        return self._redact_model(result, owner, server)

    def redact_prompt(self, result: mt.GetPromptResult, owner: str, server: str) -> mt.GetPromptResult:
        """A proxied prompt, every string of its messages redacted; the very same object when it holds none."""
        return self._redact_model(result, owner, server)

    def redact_error(self, error: mt.ErrorData, owner: str, server: str, allow: Collection[str] = ()) -> mt.ErrorData:
        """A downstream's protocol error, its message and data redacted; the very same object when unchanged."""
        message = self.redact_text(error.message, owner, server, allow=allow)
        data = self.redact_json(error.data, owner, server, allow)
        if message is error.message and data is error.data:
            return error
        return error.model_copy(update={"message": message, "data": data})

    # -- handles -> values ----------------------------------------------------------------------------------

    def may_receive(self, secret: Secret, server: str) -> bool:
        """Whether `server` may get this value: its output held it, or a server whose output did shares with it."""
        return server in secret.servers or any(server in self.sharing.get(p, ()) for p in secret.servers)

    def restore(self, text: str, owner: str, server: str, fit: Callable[[str], str] | None = None) -> tuple[str, int]:
        """A stored text with its handles put back where `server` may receive their values, for a call's arguments;
        the others (another owner's, or values `server` may not get) are left as handles, and counted. `fit`
        turns a value into what its place needs (inside a JSON string: escaped)."""
        if not holds_handle(text):
            return text, 0
        left = 0

        def value_of(match: Any) -> str:
            nonlocal left
            secret = self.vault.reveal(match.group("id"), owner)
            if secret is None or not self.may_receive(secret, server):
                left += 1
                return str(match.group(0))
            return fit(secret.value) if fit is not None else secret.value

        return HANDLE.sub(value_of, text), left

    def value_for(self, handle: str, secret_id: str, owner: str, server: str) -> str:
        """The value behind one handle (`handle` as written), for a call to `server`. Raises `UnknownSecretError`
        when it is not one of `owner`'s, `SecretNotSharedError` when its value may not go to `server`."""
        secret = self.vault.reveal(secret_id, owner)
        if secret is None:
            raise UnknownSecretError(
                f"{handle} is not a secret handle this caller received (unknown, or given to another "
                "token), so the call was not sent. Pass a handle from a result you received, or ask the user."
            )
        if not self.may_receive(secret, server):
            producers = " and ".join(f'"{name}"' for name in sorted(secret.servers)) or "no server"
            first = min(secret.servers) if secret.servers else "the server it came from"
            raise SecretNotSharedError(
                f"{handle} holds a secret from MCP server {producers}, which does not share its secrets with "
                f'"{server}", so the call was not sent. If "{server}" should receive it, add "share_with": '
                f'["{server}"] to the server "{first}" in the offprompt config.'
            )
        return secret.value
