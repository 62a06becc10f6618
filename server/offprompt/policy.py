"""Inline or off-prompt: what happens to a tool result on its way back to the client."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as mt

from offprompt.artifacts import from_result
from offprompt.config import OffPrompt
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens, count_tokens_beyond

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When `auto` stores a result: more text tokens than `tokens`, or a blob over `blob_bytes`."""

    tokens: int = 4000
    blob_bytes: int = 256 * 1024


@dataclass(frozen=True, slots=True)
class Decision:
    store: bool
    reason: str


def result_text_size(result: mt.CallToolResult) -> tuple[int, str]:
    """Bytes of text the client would pass on to the model, and that text (blocks plus structured content)."""
    parts = [b.text for b in result.content if isinstance(b, mt.TextContent)]
    parts += [
        b.resource.text
        for b in result.content
        if isinstance(b, mt.EmbeddedResource) and isinstance(b.resource, mt.TextResourceContents)
    ]
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(parts)
    return len(text.encode("utf-8")), text


def _blob_bytes(block: mt.ContentBlock) -> int:
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        return len(block.data) * 3 // 4
    if isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.BlobResourceContents):
        return len(block.resource.blob) * 3 // 4
    return 0


def is_empty(result: mt.CallToolResult) -> bool:
    return result.structured_content is None and all(
        isinstance(b, mt.TextContent) and not b.text.strip() for b in result.content
    )


def decide(mode: OffPrompt, result: mt.CallToolResult, thresholds: Thresholds) -> Decision:
    """Whether to store the result; errors and empty results always pass through."""
    if result.is_error:
        return Decision(False, "the downstream reported an error")
    if mode == "never":
        return Decision(False, "off_prompt is never")
    if is_empty(result):
        return Decision(False, "the result is empty")
    if mode == "always":
        return Decision(True, "off_prompt is always")
    blob = sum(_blob_bytes(b) for b in result.content)  # twenty screenshots weigh as one big one
    if blob > thresholds.blob_bytes:
        return Decision(True, f"{blob:,} bytes of binaries is over {thresholds.blob_bytes:,} bytes")
    size, text = result_text_size(result)
    # A token is at least one byte: a text no longer than the threshold in bytes needs no counting.
    if size <= thresholds.tokens:
        return Decision(False, "small")
    tokens, over = count_tokens_beyond(text, thresholds.tokens)
    if over:
        return Decision(True, f"{tokens:,} tokens or more is over {thresholds.tokens:,}")
    return Decision(False, f"{tokens:,} tokens")


async def apply(
    memory: TaskMemory,
    result: mt.CallToolResult,
    mode: OffPrompt,
    thresholds: Thresholds,
    *,
    tool: str,
    arguments: Mapping[str, Any] | None,
    owner: str = "",
    preview_tokens: int = 0,
) -> mt.CallToolResult:
    """The result itself, or, when the policy says so, the reference to where it was stored."""
    decision = decide(mode, result, thresholds)
    if not decision.store:
        memory.usage.inline(tool, result_text_size(result)[0])
        return result
    reference = await anyio.to_thread.run_sync(
        functools.partial(
            memory.store,
            from_result(result),
            tool=tool,
            arguments=arguments,
            owner=owner,
            preview_tokens=0 if mode == "always" else preview_tokens,  # a sensitive result shows nothing
        )
    )
    logger.info("stored %s as %s: %s", tool, reference.namespace, decision.reason)
    answer = reference.to_result()
    memory.usage.stored(tool, reference.record.bytes, reference.distinct_tokens, count_tokens(model_text(answer)))
    return answer


def model_text(result: mt.CallToolResult) -> str:
    """The text of a result's content blocks: what a client puts in the prompt."""
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
