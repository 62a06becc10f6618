"""Secrets out of results, handles back into arguments: the two directions of one table.

`Redactor.redact_result` (a `CallToolResult`) and `Redactor.redact_wire` (the same as JSON, for the fast lane)
replace each secret in text blocks, text resources and structured content by its handle; binaries are left
alone. `redact_resource`, `redact_prompt` and `redact_error` do the same to a proxied resource's text contents, a
proxied prompt's messages and a downstream's protocol error. `Redactor.substitute` puts the values back into a
proxied call's arguments. The table opens on first use, so a server that never meets a secret never creates it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import mcp_types as mt

from offprompt.errors import UnknownSecretError
from offprompt.secrets.detect import find_secrets
from offprompt.secrets.vault import HANDLE, SecretVault

__all__ = ["HANDLE_MARK", "VAULT_FILE", "Redactor"]

logger = logging.getLogger(__name__)

#: Every handle starts with this; a string without it needs no substitution.
HANDLE_MARK = "⟦secret:"


#: A resource's contents, read or embedded in a result or a prompt.
Contents = mt.TextResourceContents | mt.BlobResourceContents

#: The secrets table's file in a memory's directory.
VAULT_FILE = "secrets.sqlite3"


class Redactor:
    """Redacts results and substitutes handles for one memory's secrets table.

    `directory` is where the table lives (`secrets.sqlite3`), or a function giving it on first use (the memory
    of `offprompt.wrap` opens late); None keeps the table in this process only.
    """

    def __init__(self, directory: Path | Callable[[], Path | None] | None = None) -> None:
        self._directory = directory
        self._vault: SecretVault | None = None
        self._open_lock = threading.Lock()

    @property
    def vault(self) -> SecretVault:
        with self._open_lock:
            if self._vault is None:
                directory = self._directory() if callable(self._directory) else self._directory
                self._vault = SecretVault(None if directory is None else directory / VAULT_FILE)
            return self._vault

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()

    # -- results -> handles ---------------------------------------------------------------------------------

    def redact_text(self, text: str, owner: str) -> str:
        """`text` with every secret replaced by its handle (the same text when it holds none)."""
        findings = find_secrets(text)
        if not findings:
            return text
        parts: list[str] = []
        at = 0
        for finding in findings:
            parts += [text[at : finding.start], self.vault.handle(finding.value, finding.kind, owner)]
            at = finding.end
        parts.append(text[at:])
        logger.info("replaced %d secret(s) by handles: %s", len(findings), ", ".join(f.kind for f in findings))
        return "".join(parts)

    def redact_json(self, value: Any, owner: str) -> Any:
        """Every string in a JSON value redacted; the very same object when nothing changed."""
        if isinstance(value, str):
            return self.redact_text(value, owner)
        if isinstance(value, dict):
            items = {key: self.redact_json(item, owner) for key, item in value.items()}
            return value if all(items[key] is value[key] for key in value) else items
        if isinstance(value, list):
            redacted = [self.redact_json(item, owner) for item in value]
            return value if all(a is b for a, b in zip(redacted, value, strict=True)) else redacted
        return value

    def redact_result(self, result: mt.CallToolResult, owner: str) -> mt.CallToolResult:
        """The result with its secrets replaced by handles; the very same object when it holds none."""
        content = [self._redact_block(block, owner) for block in result.content]
        structured = self.redact_json(result.structured_content, owner)
        if structured is result.structured_content and all(
            a is b for a, b in zip(content, result.content, strict=True)
        ):
            return result
        return result.model_copy(update={"content": content, "structured_content": structured})

    def _redact_block(self, block: mt.ContentBlock, owner: str) -> mt.ContentBlock:
        if isinstance(block, mt.TextContent):
            text = self.redact_text(block.text, owner)
            return block if text is block.text else block.model_copy(update={"text": text})
        if isinstance(block, mt.EmbeddedResource):
            resource = self._redact_contents(block.resource, owner)
            return block if resource is block.resource else block.model_copy(update={"resource": resource})
        return block  # images, audio, links: no text to read a secret from

    def _redact_contents(self, contents: Contents, owner: str) -> Contents:
        if isinstance(contents, mt.TextResourceContents):
            text = self.redact_text(contents.text, owner)
            return contents if text is contents.text else contents.model_copy(update={"text": text})
        return contents  # a blob

    def redact_resource(self, result: mt.ReadResourceResult, owner: str) -> mt.ReadResourceResult:
        """A proxied resource as read, its text contents redacted; the very same object when it holds none."""
        contents = [self._redact_contents(item, owner) for item in result.contents]
        if all(a is b for a, b in zip(contents, result.contents, strict=True)):
            return result
        return result.model_copy(update={"contents": contents})

    def redact_prompt(self, result: mt.GetPromptResult, owner: str) -> mt.GetPromptResult:
        """A proxied prompt, the text of its messages redacted; the very same object when it holds none."""
        messages = [self._redact_message(message, owner) for message in result.messages]
        if all(a is b for a, b in zip(messages, result.messages, strict=True)):
            return result
        return result.model_copy(update={"messages": messages})

    def _redact_message(self, message: mt.PromptMessage, owner: str) -> mt.PromptMessage:
        content = self._redact_block(message.content, owner)
        return message if content is message.content else message.model_copy(update={"content": content})

    def redact_error(self, error: mt.ErrorData, owner: str) -> mt.ErrorData:
        """A downstream's protocol error, its message and data redacted; the very same object when unchanged."""
        message = self.redact_text(error.message, owner)
        data = self.redact_json(error.data, owner)
        if message is error.message and data is error.data:
            return error
        return error.model_copy(update={"message": message, "data": data})

    def redact_wire(self, raw: dict[str, Any], owner: str) -> dict[str, Any]:
        """`redact_result` on a result as JSON (`content`, `structuredContent`); `raw` itself when unchanged."""
        update: dict[str, Any] = {}
        content = raw.get("content")
        if isinstance(content, list):
            blocks = [self._redact_wire_block(block, owner) for block in content]
            if any(a is not b for a, b in zip(blocks, content, strict=True)):
                update["content"] = blocks
        if "structuredContent" in raw:
            structured = self.redact_json(raw["structuredContent"], owner)
            if structured is not raw["structuredContent"]:
                update["structuredContent"] = structured
        return {**raw, **update} if update else raw

    def _redact_wire_block(self, block: Any, owner: str) -> Any:
        if not isinstance(block, dict):
            return block
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            text = self.redact_text(block["text"], owner)
            return block if text is block["text"] else {**block, "text": text}
        resource = block.get("resource")
        if block.get("type") == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
            text = self.redact_text(resource["text"], owner)
            return block if text is resource["text"] else {**block, "resource": {**resource, "text": text}}
        return block

    # -- handles -> values ----------------------------------------------------------------------------------

    def substitute(self, arguments: Mapping[str, Any] | None, owner: str) -> dict[str, Any] | None:
        """The arguments with every handle replaced by its value, for forwarding only (never log or store them).

        Raises `UnknownSecretError` when a handle is not one of `owner`'s: the call must not go out with it.
        """
        if arguments is None:
            return None
        return {key: self._substitute(value, owner) for key, value in arguments.items()}

    def _substitute(self, value: Any, owner: str) -> Any:
        if isinstance(value, str):
            return self._substitute_text(value, owner) if HANDLE_MARK in value else value
        if isinstance(value, dict):
            return {key: self._substitute(item, owner) for key, item in value.items()}
        if isinstance(value, list):
            return [self._substitute(item, owner) for item in value]
        return value

    def _substitute_text(self, text: str, owner: str) -> str:
        unknown: list[str] = []

        def value_of(match: Any) -> str:
            value = self.vault.reveal(match.group("id"), owner)
            if value is None:
                unknown.append(match.group(0))
                return ""
            return value

        replaced = HANDLE.sub(value_of, text)
        if unknown:
            raise UnknownSecretError(
                f"{', '.join(unknown)} is not a secret handle this caller received (unknown, or given to another "
                "token), so the call was not sent. Pass a handle from a result you received, or ask the user."
            )
        return replaced
