"""The reference the model gets instead of a stored result: where it is (`memory://`, the `⟦memory:…⟧` token
to pass it on), what it holds, and the outline and passages it may show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as mt

from offprompt.memory.catalog import BINARY, DUPLICATE_OF, NamespaceRecord
from offprompt.memory.outline import Entry
from offprompt.memory.outline import view as outline_view
from offprompt.memory.outline.passages import Passage

REFERENCE_TEMPLATE = (
    'Output of "{tool}" was stored in memory with memory_name "{memory_name}" '
    'and artifact_namespace "{artifact_namespace}".'
)
URI_SCHEME = "memory"
#: Every reference a model passes in a tool's argument starts with this (see `offprompt.arguments`).
MEMORY_MARK = "⟦memory:"


def memory_token(namespace: str, item: int = 0, option: str = "") -> str:
    """The reference a model puts in another tool's argument to hand it item `item` of `namespace` (`option`:
    `lines=A-B` or `select=<jq>`, the part to pass)."""
    return f"{MEMORY_MARK}{namespace}/{item}{' ' + option if option else ''}⟧"


@dataclass(frozen=True, slots=True)
class Reference:
    """What the model gets instead of a stored result: where it is, and, for a result that may be shown, the
    outline of its text and the passages that answer the caller's intent."""

    memory_name: str
    record: NamespaceRecord
    preview: str = ""
    outline: tuple[Entry, ...] = ()
    outline_item: int = 0
    #: How many tokens of the outline the text shows (0: no outline, in the text or in `_meta`).
    outline_tokens: int = 0
    intent: str = ""
    passages: tuple[tuple[int, Passage], ...] = ()  # (item, passage), best first

    @property
    def namespace(self) -> str:
        return self.record.namespace

    @property
    def distinct_tokens(self) -> int:
        """Tokens of the result counted once: an item that repeats another (structuredContent beside its text)
        is left out, as the model would read it once."""
        return sum(i.tokens for i in self.record.items if DUPLICATE_OF not in i.meta)

    @property
    def uri(self) -> str:
        return f"{URI_SCHEME}://{self.memory_name}/{self.namespace}"

    @property
    def token(self) -> str:
        """The reference to pass on: its first text item, else item 0."""
        return memory_token(self.namespace, self.record.first_text or 0)

    def summary(self) -> str:
        parts = []
        for item in self.record.items:
            if DUPLICATE_OF in item.meta:
                parts.append(f"item {item.item}: {item.kind}, a copy of item {item.meta[DUPLICATE_OF]}")
            elif BINARY in item.meta:
                parts.append(f"item {item.item}: {item.kind} holding base64 data, {item.bytes:,} bytes (not searched)")
            elif item.mime_type and item.tokens == 0:
                parts.append(f"item {item.item}: {item.kind} {item.mime_type}, {item.bytes:,} bytes")
            else:
                parts.append(f"item {item.item}: {item.kind}, {item.tokens:,} tokens")
        return "; ".join(parts)

    def to_result(self) -> mt.CallToolResult:
        text = REFERENCE_TEMPLATE.format(
            tool=self.record.tool, memory_name=self.memory_name, artifact_namespace=self.namespace
        )
        hint = (
            f"It holds {self.summary()}. Read it with memory_load (artifact_namespace, item, line or offset), "
            "or find the part you need with memory_query (by meaning) or memory_grep (by regex). "
            f"To pass it to another tool unread, put {self.token} in that tool's argument (a part: add "
            "lines=A-B or select=<jq> before the ⟧)."
        )
        content: list[mt.ContentBlock] = [mt.TextContent(text=f"{text}\n{hint}")]
        if self.preview:
            content.append(mt.TextContent(text=f"Preview of item 0:\n{self.preview}"))
        shown = self._outline_text()
        if shown:
            content.append(mt.TextContent(text=shown))
        if self.intent:
            content.append(mt.TextContent(text=self._passages_text()))
        content.append(
            mt.ResourceLink(
                uri=self.uri,
                name=self.namespace,
                title=f"Output of {self.record.tool}",
                description=self.summary(),
                size=self.record.bytes,
            )
        )
        return mt.CallToolResult(content=content, _meta={"offprompt": self.meta()})

    def _outline_text(self) -> str:
        if not self.outline or self.outline_tokens <= 0:
            return ""
        lines, left = outline_view.bounded(self.outline, self.outline_tokens)
        head = f"Outline of item {self.outline_item} (L = lines; load one with memory_load line=...):"
        if left:
            more = (
                f'{outline_view.left_out(left)}: memory_outline(artifact_namespace="{self.namespace}", '
                f"item={self.outline_item})."
            )
            lines.append(more)
        return "\n".join([head, *lines])

    def _passages_text(self) -> str:
        if not self.passages:
            return f"No passage matches the words of the intent {self.intent!r}; try memory_query or the outline."
        parts = [f"Best passages for the intent {self.intent!r}:"]
        for rank, (item, p) in enumerate(self.passages, start=1):
            parts.append(f"[{rank}] item {item} lines {p.line}-{p.end_line} (offset {p.offset})\n{p.text}")
        return "\n".join(parts)

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "memory_name": self.memory_name,
            "artifact_namespace": self.namespace,
            "tool": self.record.tool,
            "kinds": self.record.kinds,
            "tokens": self.record.tokens,
            "bytes": self.record.bytes,
            "pass_as": self.token,
        }
        if self.outline and self.outline_tokens > 0:
            meta["outline"] = [e.to_dict() for e in self.outline]
            meta["outline_item"] = self.outline_item
        if self.intent:
            meta["intent"] = {
                "intent": self.intent,
                "passages": [
                    {
                        "item": item,
                        "line": p.line,
                        "end_line": p.end_line,
                        "offset": p.offset,
                        "score": p.score,
                        "text": p.text,
                    }
                    for item, p in self.passages
                ],
            }
        return meta
