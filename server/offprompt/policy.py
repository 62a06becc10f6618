"""Inline or off-prompt: what happens to a tool result on its way back to the client."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import mcp_types as mt

from offprompt.config import OffPrompt
from offprompt.tokens import count_tokens_beyond

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
    return len(text.encode("utf-8", "surrogatepass")), text  # a lone surrogate (from JSON) counts, not crashes


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
    """Whether to store the result; empty results always pass through, and errors unless the tool is `always`
    (a sensitive tool's error may quote what it guards: it is stored like its results)."""
    if mode == "never":
        return Decision(False, "off_prompt is never")
    if is_empty(result):
        return Decision(False, "the result is empty")
    if mode == "always":
        return Decision(True, "off_prompt is always")
    if result.is_error:
        return Decision(False, "the downstream reported an error")
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


def passes_by_size(mode: OffPrompt, is_error: bool, body_bytes: int, thresholds: Thresholds) -> bool:
    """Whether a result passes through on the size of its JSON alone, unread (the fast lane's shortcut).

    A token is at least one byte of text and a blob's base64 is longer than the blob, so a body no longer than
    both thresholds is small under every rule of `decide`. `never` always passes, and errors of other modes;
    `always` never does, errors included.
    """
    if mode == "always":
        return False
    if mode == "never" or is_error:
        return True
    return body_bytes <= min(thresholds.tokens, thresholds.blob_bytes)
