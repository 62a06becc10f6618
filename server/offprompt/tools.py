"""The memory tools: their schemas, descriptions and handlers.

Every answer is written for the model in `content` (plain text) and repeats
its facts for programs in `_meta["offprompt"]`. No `structuredContent` and no
`outputSchema`: Claude Code shows the model only `structuredContent` when it
is present, so the model would never see the text.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as mt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from offprompt.artifacts import TEXT_KINDS, BlobArtifact, ResourceLinkArtifact, to_block
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.catalog import NamespaceRecord
from offprompt.memory.storage.base import SearchMode
from offprompt.memory.task_memory import TaskMemory

DEFAULT_WINDOW = 2000
MAX_WINDOW = 20000


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoadArgs(_Args):
    artifact_namespace: str = Field(description="The artifact_namespace from the reference.")
    memory_name: str | None = Field(default=None, description="The memory_name from the reference (optional).")
    item: int = Field(default=0, ge=0, description="Which artifact of the result: 0 is the first.")
    offset: int = Field(default=0, ge=0, description="First token to read: 0, or next_offset / a search hit's offset.")
    max_tokens: int = Field(default=DEFAULT_WINDOW, ge=1, le=MAX_WINDOW, description="How many tokens to read.")


class QueryArgs(_Args):
    query: str = Field(
        description="What you are looking for: a question, a description, or the exact names it involves."
    )
    artifact_namespace: str | None = Field(default=None, description="Search only this output; omit to search all.")
    top_k: int = Field(default=5, ge=1, le=50, description="How many passages to return.")
    mode: SearchMode = Field(
        default="hybrid",
        description="hybrid (best in general): meaning and exact words together; dense: by meaning only; "
        "lexical: by the query's words and identifiers only.",
    )
    queries: list[str] = Field(
        default_factory=list, max_length=8, description="More phrasings of the same need, fused with query."
    )


class GrepArgs(_Args):
    pattern: str = Field(description="A Python regular expression, matched against each line.")
    artifact_namespace: str | None = Field(default=None, description="Search only this output; omit to search all.")
    max_matches: int = Field(default=50, ge=1, le=1000, description="Stop after this many matching lines.")


class ListArgs(_Args):
    limit: int = Field(default=50, ge=1, le=1000, description="How many namespaces, newest first.")


class DeleteArgs(_Args):
    artifact_namespace: str = Field(description="The namespace to delete, with everything stored in it.")


Handler = Callable[[TaskMemory, Any, str | None], Awaitable[mt.CallToolResult]]


@dataclass(frozen=True, slots=True)
class MemoryTool:
    name: str
    description: str
    args: type[_Args]
    handler: Handler

    def definition(self) -> mt.Tool:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return mt.Tool(name=self.name, description=self.description, input_schema=schema)


def _answer(text: str | list[mt.ContentBlock], meta: dict[str, Any]) -> mt.CallToolResult:
    content: list[mt.ContentBlock] = [mt.TextContent(text=text)] if isinstance(text, str) else text
    return mt.CallToolResult(content=content, _meta={"offprompt": meta})


def _check_memory_name(memory: TaskMemory, name: str | None) -> None:
    if name is not None and name != memory.name:
        raise NotFoundError(
            f'memory_name "{name}" is not served here: this offprompt process holds memory "{memory.name}". A result '
            f'stored in "{name}" (by another window or session, or an earlier run) can be read only there: call the '
            "tool that made it again to have it here. Call memory_list to see what this memory holds."
        )


async def memory_load(memory: TaskMemory, args: LoadArgs, owner: str | None) -> mt.CallToolResult:
    _check_memory_name(memory, args.memory_name)
    ns = args.artifact_namespace
    record = await anyio.to_thread.run_sync(memory.get, ns, owner)
    item = memory.item(ns, args.item, owner)
    base = {"artifact_namespace": ns, "item": args.item, "items": len(record.items), "kind": item.kind}
    if item.kind not in TEXT_KINDS:
        artifact = await anyio.to_thread.run_sync(memory.load, ns, args.item, owner)
        if isinstance(artifact, BlobArtifact):
            meta = {**base, "mime_type": artifact.mime_type, "bytes": len(artifact.value)}
        else:
            assert isinstance(artifact, ResourceLinkArtifact)
            meta = {**base, "uri": artifact.value}
        return _answer([to_block(artifact)], meta)
    window = await anyio.to_thread.run_sync(memory.window, ns, args.item, args.offset, args.max_tokens, owner)
    end = window.next_offset if window.next_offset is not None else window.total_tokens
    where = f"Tokens {window.offset}-{end} of {window.total_tokens} (item {args.item} of {len(record.items)})."
    more = (
        f" Read on with offset={window.next_offset}."
        if window.next_offset is not None
        else " This is the end of the item."
    )
    meta = {
        **base,
        "offset": window.offset,
        "next_offset": window.next_offset,
        "total_tokens": window.total_tokens,
    }
    return _answer([mt.TextContent(text=window.text), mt.TextContent(text=where + more)], meta)


async def memory_query(memory: TaskMemory, args: QueryArgs, owner: str | None) -> mt.CallToolResult:
    hits, indexing = await anyio.to_thread.run_sync(
        memory.query, args.query, args.artifact_namespace, args.top_k, owner, args.mode, args.queries
    )
    lines = [
        f"[{rank}] artifact_namespace {h.namespace} item {h.item} offset {h.offset} (score {h.score:.2f})\n{h.text}"
        for rank, h in enumerate(hits, start=1)
    ]
    if not hits:
        lines.append("No passages found." if not indexing else "No passages found yet.")
    if indexing:
        missing = "passages that match by meaning" if args.mode == "hybrid" else "passages"
        lines.append(
            f"Still indexing: {', '.join(indexing)}. Its {missing} may be missing from these results; "
            "memory_grep and memory_load work on it already."
        )
    results = [
        {"artifact_namespace": h.namespace, "item": h.item, "offset": h.offset, "score": h.score, "text": h.text}
        for h in hits
    ]
    return _answer("\n\n".join(lines), {"results": results, "indexing": indexing})


async def memory_grep(memory: TaskMemory, args: GrepArgs, owner: str | None) -> mt.CallToolResult:
    matches, truncated = await anyio.to_thread.run_sync(
        memory.grep, args.pattern, args.artifact_namespace, args.max_matches, owner
    )
    lines = [f"{m.namespace} item {m.item} line {m.line} offset {m.offset}: {m.text}" for m in matches]
    if not matches:
        lines.append(f"No line matches {args.pattern!r}.")
    if truncated:
        lines.append(f"Stopped at {args.max_matches} matches; narrow the pattern or raise max_matches.")
    found = [
        {"artifact_namespace": m.namespace, "item": m.item, "line": m.line, "offset": m.offset, "text": m.text}
        for m in matches
    ]
    return _answer("\n".join(lines), {"matches": found, "truncated": truncated})


def _timestamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def describe(record: NamespaceRecord, memory_name: str) -> dict[str, Any]:
    return {
        "artifact_namespace": record.namespace,
        "memory_name": memory_name,
        "tool": record.tool,
        "arguments": record.arguments,
        "kinds": record.kinds,
        "tokens": record.tokens,
        "bytes": record.bytes,
        "created": _timestamp(record.created),
        "expires": _timestamp(record.expires),
    }


async def memory_list(memory: TaskMemory, args: ListArgs, owner: str | None) -> mt.CallToolResult:
    records = await anyio.to_thread.run_sync(memory.list, args.limit, owner)
    rows = [describe(r, memory.name) for r in records]
    lines = [
        f"{r['artifact_namespace']}  {r['tool']}({json.dumps(r['arguments'], ensure_ascii=False)[:200]})  "
        f"{'+'.join(r['kinds'])}  {r['tokens']:,} tokens  {r['bytes']:,} bytes  created {r['created']}"
        for r in rows
    ]
    if not rows:
        lines.append(f'Memory "{memory.name}" holds nothing yet.')
    return _answer("\n".join(lines), {"namespaces": rows})


async def memory_delete(memory: TaskMemory, args: DeleteArgs, owner: str | None) -> mt.CallToolResult:
    record = await anyio.to_thread.run_sync(memory.delete, args.artifact_namespace, owner)
    row = describe(record, memory.name)
    text = (
        f"Deleted artifact_namespace {record.namespace} (output of {record.tool}: "
        f"{len(record.items)} items, {record.tokens:,} tokens, {record.bytes:,} bytes)."
    )
    return _answer(text, {"deleted": row})


TOOLS: dict[str, MemoryTool] = {
    t.name: t
    for t in (
        MemoryTool(
            "memory_load",
            "Read back a tool output that was stored in memory. Text comes in token windows: start at offset 0 "
            "(or at the offset of a memory_query or memory_grep hit) and pass next_offset to read on. An image, "
            "audio or file item comes back as itself. Use it when you need the stored content itself.",
            LoadArgs,
            memory_load,
        ),
        MemoryTool(
            "memory_query",
            "Search stored tool outputs and get the passages that best answer a question, each with its "
            "artifact_namespace and token offset (read around one with memory_load). It matches by meaning and "
            "by exact words at once: a passage naming an identifier from the query (a function, error code, "
            "path) comes first. Use it to find a fact in a large stored output without reading all of it; use "
            "memory_grep to list every line that matches a pattern.",
            QueryArgs,
            memory_query,
        ),
        MemoryTool(
            "memory_grep",
            "Find the lines of stored tool outputs that match a regular expression, with line numbers and token "
            "offsets for memory_load. Use it for exact names, identifiers, error codes, or to count occurrences.",
            GrepArgs,
            memory_grep,
        ),
        MemoryTool(
            "memory_list",
            "List what is stored in memory, newest first: each artifact_namespace with the tool and arguments "
            "that produced it, its kinds, size and expiry. Use it to find an output you stored earlier.",
            ListArgs,
            memory_list,
        ),
        MemoryTool(
            "memory_delete",
            "Delete one stored tool output (an artifact_namespace) and everything in it, e.g. a sensitive "
            "result that is no longer needed.",
            DeleteArgs,
            memory_delete,
        ),
    )
}


def parse_args(tool: MemoryTool, arguments: dict[str, Any] | None) -> _Args:
    """Validated arguments, or an InvalidArgumentError that names each bad field."""
    try:
        return tool.args.model_validate(arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" and e["loc"] else "")
            for e in exc.errors()
        )
        raise InvalidArgumentError(f"invalid arguments for {tool.name}: {problems}. Fix them and call again.") from None
