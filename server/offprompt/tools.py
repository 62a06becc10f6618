"""The memory tools: their schemas, descriptions and handlers.

Every answer is written for the model in `content` (plain text) and repeats
its facts for programs in `_meta["offprompt"]`. No `structuredContent` and no
`outputSchema`: Claude Code shows the model only `structuredContent` when it
is present, so the model would never see the text.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as mt
from pydantic import ValidationError

from offprompt.artifacts import TEXT_KINDS, BlobArtifact, ResourceLinkArtifact, to_block
from offprompt.errors import InvalidArgumentError, NotFoundError, OffpromptError
from offprompt.images import downscale_to_fit
from offprompt.memory.answers import Answer
from offprompt.memory.catalog import Flow, NamespaceRecord
from offprompt.memory.outline import view as outline_view
from offprompt.memory.outline.passages import terms as passage_terms
from offprompt.memory.records import Summary
from offprompt.memory.reference import URI_SCHEME, memory_token
from offprompt.memory.select import page
from offprompt.memory.shown import ANSWER_TOKENS, distinct
from offprompt.memory.task_memory import TaskMemory
from offprompt.query_answer import DEFAULT_SHOWN, answer_text, candidate_lines, candidates, passage_token
from offprompt.tokens import count_tokens
from offprompt.tool_args import (
    Args,
    DeleteArgs,
    GrepArgs,
    ListArgs,
    LoadArgs,
    OutlineArgs,
    QueryArgs,
    SelectArgs,
    input_schema,
)

logger = logging.getLogger(__name__)

#: The most one answer may carry on the wire: the SDK's HTTP client refuses a server-sent event over 1 MiB (and
#: an SSE client loses its session), so every answer offprompt writes stays under it, base64 included.
WIRE_LIMIT = 1024 * 1024
#: What a text window or a blob may take of an answer; the rest is for the envelope and `_meta`.
PAYLOAD_LIMIT = WIRE_LIMIT - 64 * 1024


#: What a blob may take of this call's answer: PAYLOAD_LIMIT over HTTP, None (no cap) over stdio; set by `call`.
ANSWER_LIMIT: ContextVar[int | None] = ContextVar("ANSWER_LIMIT", default=PAYLOAD_LIMIT)


def base64_size(raw_bytes: int) -> int:
    return 4 * ((raw_bytes + 2) // 3)


def blob_too_big(memory_name: str, namespace: str, item: int, kind: str, raw_bytes: int) -> InvalidArgumentError:
    """The error for a blob that no single answer can carry: its size, and the ways to get it whole."""
    return InvalidArgumentError(
        f"item {item} of {namespace} is {kind} of {raw_bytes:,} bytes ({base64_size(raw_bytes):,} as base64), more "
        f"than one answer may carry ({PAYLOAD_LIMIT:,} bytes: HTTP clients refuse events over 1 MiB). Get it whole "
        f"with the command line on the machine offprompt runs on: `offprompt memory cat {namespace} --item {item} "
        f"-o FILE` (with --memory-name {memory_name}), or read the resource {URI_SCHEME}://{memory_name}/{namespace}/"
        f"{item} through a client that talks to offprompt over stdio."
    )


Handler = Callable[[TaskMemory, Any, str | None], Awaitable[mt.CallToolResult]]


@dataclass(frozen=True, slots=True)
class MemoryTool:
    name: str
    description: str
    args: type[Args]
    handler: Handler

    def definition(self) -> mt.Tool:
        return mt.Tool(name=self.name, description=self.description, input_schema=input_schema(self.args))


def _answer(text: str | list[mt.ContentBlock], meta: dict[str, Any]) -> mt.CallToolResult:
    content: list[mt.ContentBlock] = [mt.TextContent(text=text)] if isinstance(text, str) else text
    return mt.CallToolResult(content=content, _meta={"offprompt": meta})


async def _downscaled(memory_name: str, base: dict[str, Any], image: BlobArtifact, limit: int) -> mt.CallToolResult:
    """An image too big for this answer, downscaled to fit it, with a line saying so and how to get the original."""
    namespace, item = base["artifact_namespace"], base["item"]
    fitted = await anyio.to_thread.run_sync(downscale_to_fit, image.value, limit)
    if fitted is None:  # not an image Pillow reads: nothing to show smaller
        raise blob_too_big(memory_name, namespace, item, "image", len(image.value))
    said = (
        f"This image was downscaled to fit one answer over HTTP: {fitted.width}x{fitted.height} {fitted.mime_type} "
        f"from the original {fitted.original_width}x{fitted.original_height} {image.mime_type} of "
        f"{len(image.value):,} bytes. The original comes whole from memory://{memory_name}/{namespace}/{item} "
        f"through a client that talks to offprompt over stdio, or with `offprompt memory cat {namespace} --item "
        f"{item} -o FILE` on the machine offprompt runs on."
    )
    block = mt.ImageContent(data=base64.b64encode(fitted.data).decode("ascii"), mime_type=fitted.mime_type)
    meta = {
        **base,
        "mime_type": image.mime_type,
        "bytes": len(image.value),
        "downscaled": {"width": fitted.width, "height": fitted.height, "mime_type": fitted.mime_type},
    }
    return _answer([block, mt.TextContent(text=said)], meta)


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
        limit = ANSWER_LIMIT.get()
        too_big = limit is not None and item.mime_type is not None and base64_size(item.bytes) > limit
        if too_big and item.kind != "image":
            raise blob_too_big(memory.name, ns, args.item, item.kind, item.bytes)
        artifact = await anyio.to_thread.run_sync(memory.load, ns, args.item, owner)
        if too_big:
            assert limit is not None
            assert isinstance(artifact, BlobArtifact)
            return await _downscaled(memory.name, base, artifact, limit)
        if isinstance(artifact, BlobArtifact):
            meta = {**base, "mime_type": artifact.mime_type, "bytes": len(artifact.value)}
        else:
            assert isinstance(artifact, ResourceLinkArtifact)
            meta = {**base, "uri": artifact.value}
        return _answer([to_block(artifact)], meta)
    if args.line is not None:
        if args.offset:
            raise InvalidArgumentError("pass line or offset, not both: line reads from a line's start")
        window = await anyio.to_thread.run_sync(memory.window_at_line, ns, args.item, args.line, args.max_tokens, owner)
    else:
        window = await anyio.to_thread.run_sync(
            memory.window_within, ns, args.item, args.offset, args.max_tokens, PAYLOAD_LIMIT, owner
        )
    end = window.next_offset if window.next_offset is not None else window.total_tokens
    where = (
        f"Tokens {window.offset}-{end} of {window.total_tokens}, lines {window.line}-{window.end_line} "
        f"(item {args.item} of {len(record.items)})."
    )
    if window.next_line is not None:
        more = f" Read on with line={window.next_line} (or offset={window.next_offset})."
    elif window.next_offset is not None:
        more = f" Read on with offset={window.next_offset}."
    else:
        more = " This is the end of the item."
    meta = {
        **base,
        "offset": window.offset,
        "next_offset": window.next_offset,
        "total_tokens": window.total_tokens,
        "line": window.line,
        "end_line": window.end_line,
        "next_line": window.next_line,
    }
    return _answer([mt.TextContent(text=window.text), mt.TextContent(text=where + more)], meta)


async def memory_query(memory: TaskMemory, args: QueryArgs, owner: str | None) -> mt.CallToolResult:
    # Deeper than shown: hits joined into a passage leave their places to the next.
    depth = 2 * args.top_k + args.more
    found = await anyio.to_thread.run_sync(
        memory.search, args.query, args.artifact_namespace, depth, owner, args.mode, args.queries
    )
    hits, others = distinct(found.hits, args.top_k)
    indexing = found.indexing
    more = await anyio.to_thread.run_sync(candidates, memory, others[: args.more], [args.query, *args.queries])
    # Within one output the model named, each passage and candidate says only its item and line.
    scoped = args.artifact_namespace is not None
    budget = ANSWER_TOKENS * max(1.0, (args.top_k + args.more) / DEFAULT_SHOWN)
    words = passage_terms(" ".join([args.query, *args.queries]))
    notes = _query_notes(found, indexing, args.mode)  # within the budget too: the model reads them as well
    budget -= count_tokens("\n\n".join(notes))
    shown, hits, more = await anyio.to_thread.run_sync(answer_text, memory, hits, more, words, int(budget), scoped)
    lines = [shown]
    if not hits:
        lines = ["No passages found." if not indexing else "No passages found yet."]
        if more:
            lines.append(candidate_lines(more, hits, scoped))
    lines.extend(notes)
    results = [
        {
            "artifact_namespace": h.namespace,
            "item": h.item,
            "line": h.line,
            "offset": h.offset,
            "score": h.score,
            "text": h.text,
            "pass_as": passage_token(h),
        }
        for h in hits
    ]
    meta: dict[str, Any] = {"results": results, "more": more, "indexing": indexing}
    if found.by_words:
        meta["by_words"] = found.by_words
    if found.left_out:
        meta["sensitive_left_out"] = len(found.left_out)
    return _answer("\n\n".join(lines), meta)


def _query_notes(found: Answer, indexing: Sequence[str], mode: str) -> list[str]:
    """What memory_query says after its passages: ranked by words alone, still indexing, sensitive outputs left
    out."""
    notes: list[str] = []
    if found.by_words:
        notes.append(
            f"Search by meaning is unavailable right now ({found.by_words}): these passages are ranked by their "
            "words only." + ("" if "auth_token" in found.by_words else " Try again later for matches by meaning.")
        )
    if found.unchunked:
        notes.append(
            f"Still indexing: {', '.join(found.unchunked)}. Its passages here were ranked by their words, read "
            "as stored (nothing matches by meaning yet); memory_grep and memory_load work on it already."
        )
    elif indexing:
        missing = "passages that match by meaning" if mode == "hybrid" else "passages"
        notes.append(
            f"Still indexing: {', '.join(indexing)}. Its {missing} may be missing from these results; "
            "memory_grep and memory_load work on it already."
        )
    if found.left_out:
        notes.append(_left_out_note(found.left_out, "memory_query"))
    return notes


#: How many of the sensitive outputs a search left out its answer names.
MAX_LEFT_OUT_NAMED = 5


def _left_out_note(left_out: Sequence[str], tool: str) -> str:
    """What an answer across the memory says of the sensitive outputs it did not search: how many, and how to
    search one (they are read only by a call that names them)."""
    count = len(left_out)
    names = ", ".join(left_out[:MAX_LEFT_OUT_NAMED]) + (", …" if count > MAX_LEFT_OUT_NAMED else "")
    return (
        f"Left out {count} sensitive output{'s' if count != 1 else ''} (of an always-stored tool: {names}); "
        f"{tool} reads one only when its artifact_namespace is named."
    )


async def memory_grep(memory: TaskMemory, args: GrepArgs, owner: str | None) -> mt.CallToolResult:
    # The search runs in a worker process that shutdown kills: a cancelled call need not wait for it.
    matches, truncated = await anyio.to_thread.run_sync(
        memory.grep, args.pattern, args.artifact_namespace, args.max_matches, owner, abandon_on_cancel=True
    )
    left_out = await anyio.to_thread.run_sync(memory.sensitive_left_out, args.artifact_namespace, owner)
    lines = [f"{m.namespace} item {m.item} line {m.line} offset {m.offset}: {m.text}" for m in matches]
    if not matches:
        lines.append(f"No line matches {args.pattern!r}.")
    if truncated:
        lines.append(f"Stopped at {args.max_matches} matches; narrow the pattern or raise max_matches.")
    found = [
        {"artifact_namespace": m.namespace, "item": m.item, "line": m.line, "offset": m.offset, "text": m.text}
        for m in matches
    ]
    meta: dict[str, Any] = {"matches": found, "truncated": truncated}
    if left_out:
        lines.append(_left_out_note(left_out, "memory_grep"))
        meta["sensitive_left_out"] = len(left_out)
    return _answer("\n".join(lines), meta)


async def memory_outline(memory: TaskMemory, args: OutlineArgs, owner: str | None) -> mt.CallToolResult:
    entries = await anyio.to_thread.run_sync(memory.outline, args.artifact_namespace, args.item, owner)
    if args.offset and args.offset >= len(entries):
        raise InvalidArgumentError(f"offset {args.offset} is past the end: the outline has {len(entries)} entries")
    lines, next_offset = outline_view.page(entries, args.offset, args.max_tokens)
    end = next_offset if next_offset is not None else len(entries)
    if not entries:
        lines.append("This item has no outline (it is empty).")
    elif next_offset is not None:
        lines.append(f"Entries {args.offset}-{end - 1} of {len(entries)}. Read on with offset={next_offset}.")
    else:
        lines.append(f"Entries {args.offset}-{end - 1} of {len(entries)}: the end. L = lines, for memory_load line.")
    shown = [e.to_dict() for e in entries[args.offset : end]]
    return _answer("\n".join(lines), {"outline": shown, "next_offset": next_offset})


async def memory_select(memory: TaskMemory, args: SelectArgs, owner: str | None) -> mt.CallToolResult:
    ns = args.artifact_namespace
    selection = await anyio.to_thread.run_sync(
        memory.select, ns, args.expression, args.item, owner, args.artifact_namespaces
    )
    window = await anyio.to_thread.run_sync(page, selection.text, args.offset, args.max_tokens)
    end = window.next_offset if window.next_offset is not None else len(selection.text)
    outputs = f"{selection.outputs:,} output{'s' if selection.outputs != 1 else ''}, one per line"
    if selection.outputs == 0:
        where = "The expression produced no output."
    else:
        where = f"Characters {window.offset:,}-{end:,} of {len(selection.text):,} ({outputs})."
        where += (
            f" Read on with offset={window.next_offset}." if window.next_offset is not None else " This is the end."
        )
    meta = {
        "artifact_namespace": ns,
        "item": args.item,
        "outputs": selection.outputs,
        "offset": window.offset,
        "next_offset": window.next_offset,
        "total_chars": len(selection.text),
    }
    return _answer([mt.TextContent(text=window.text), mt.TextContent(text=where)], meta)


def _timestamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def describe(record: NamespaceRecord, memory_name: str, flows: Sequence[Flow] = ()) -> dict[str, Any]:
    return {
        "artifact_namespace": record.namespace,
        "memory_name": memory_name,
        "tool": record.tool,
        "arguments": record.listed_arguments,
        "kinds": record.kinds,
        "tokens": record.tokens,
        "bytes": record.bytes,
        "created": _timestamp(record.created),
        "expires": _timestamp(record.expires),
        "pass_as": memory_token(record.namespace, record.first_text or 0),
        "passed_to": [{"tool": f.tool, "part": f.part, "at": _timestamp(f.at)} for f in flows[-MAX_FLOWS_SHOWN:]],
    }


#: memory_list shows the latest of the tools a namespace was passed to, at most this many.
MAX_FLOWS_SHOWN = 5


async def memory_list(memory: TaskMemory, args: ListArgs, owner: str | None) -> mt.CallToolResult:
    state, key = memory.listing_state(), (args.limit, owner)
    kept = memory.listings.get(key) if state is not None else None
    if kept is not None and kept[0] == state and all(r.expires is None or r.expires > time.time() for r in kept[1][0]):
        records, flows, made = kept[1]  # nothing it was read from has changed since, and none of it expired
    else:
        records, flows, made = await anyio.to_thread.run_sync(_listed, memory, args.limit, owner)
        if state is not None:
            memory.listings = {**dict(list(memory.listings.items())[-15:]), key: (state, (records, flows, made))}
    rows = [describe(r, memory.name, flows.get(r.namespace, ())) for r in records]
    for row in rows:
        row["records"] = [
            {"item": item, "kind": s.kind, "count": s.count, "fields": list(s.fields)}
            for item, s in made.get(row["artifact_namespace"], [])
        ]
    lines = [
        f"{r['artifact_namespace']}  {r['tool']}({json.dumps(r['arguments'], ensure_ascii=False)[:200]})  "
        f"{'+'.join(r['kinds'])}  {r['tokens']:,} tokens  {r['bytes']:,} bytes  created {r['created']}  "
        f"pass as {r['pass_as']}" + _passed_to(r["passed_to"]) + _records_listed(made.get(r["artifact_namespace"], []))
        for r in rows
    ]
    if not rows:
        lines.append(f'Memory "{memory.name}" holds nothing yet.')
    return _answer("\n".join(lines), {"namespaces": rows})


def _listed(
    memory: TaskMemory, limit: int, owner: str | None
) -> tuple[list[NamespaceRecord], dict[str, list[Flow]], dict[str, list[tuple[int, Summary]]]]:
    """The newest namespaces, where each was passed and the records of their texts: one trip to a worker thread."""
    records = memory.recent(limit, owner)
    return records, memory.flows([r.namespace for r in records]), memory.records_made(records)


def _records_listed(made: Sequence[tuple[int, Summary]]) -> str:
    """`  records for memory_select: 12 commits (item 0)`."""
    if not made:
        return ""
    shown = ", ".join(f"{s.count:,} {s.what} (item {item})" for item, s in made if not s.skipped)
    return f"  records for memory_select: {shown}" if shown else ""


def _passed_to(flows: list[dict[str, Any]]) -> str:
    if not flows:
        return ""
    return "  passed to " + ", ".join(f"{f['tool']} ({f['part']}, {f['at']})" for f in flows)


async def memory_delete(memory: TaskMemory, args: DeleteArgs, owner: str | None) -> mt.CallToolResult:
    record = await anyio.to_thread.run_sync(memory.delete, args.artifact_namespace, owner)
    row = describe(record, memory.name)
    text = (
        f"Deleted artifact_namespace {record.namespace} (output of {record.tool}: "
        f"{len(record.items)} item{'s' if len(record.items) != 1 else ''}, {record.tokens:,} tokens, "
        f"{record.bytes:,} bytes)."
    )
    return _answer(text, {"deleted": row})


TOOLS: dict[str, MemoryTool] = {
    t.name: t
    for t in (
        MemoryTool(
            "memory_load",
            "Read a stored tool output: text in token windows from an offset or line (of a hit or outline "
            "entry); read on with next_offset or next_line. An image or file item comes back as itself.",
            LoadArgs,
            memory_load,
        ),
        MemoryTool(
            "memory_query",
            "Find the passages of stored outputs that best answer a question, by meaning and exact words (a "
            "passage naming an identifier of the query comes first), each with its line for memory_load.",
            QueryArgs,
            memory_query,
        ),
        MemoryTool(
            "memory_outline",
            "The map of a stored text (classes, functions, headings, JSON paths, log templates), each entry with "
            "its lines (L) for memory_load.",
            OutlineArgs,
            memory_outline,
        ),
        MemoryTool(
            "memory_grep",
            "The lines of stored outputs that match a regular expression, with line numbers for memory_load: "
            "for exact names, error codes, counts.",
            GrepArgs,
            memory_grep,
        ),
        MemoryTool(
            "memory_select",
            "Run jq over a stored JSON output (JSON Lines as one array, like jq -s), over the records of a table "
            "or log (as its outline says), or over any other text's lines as {line, text}: compact JSON, one output "
            "a line. Count, filter or pick fields without reading it all.",
            SelectArgs,
            memory_select,
        ),
        MemoryTool(
            "memory_list",
            "The stored outputs, newest first, each with the tool and arguments that made it.",
            ListArgs,
            memory_list,
        ),
        MemoryTool(
            "memory_delete",
            "Delete a stored output, e.g. a sensitive one no longer needed.",
            DeleteArgs,
            memory_delete,
        ),
    )
}


def parse_args(tool: MemoryTool, arguments: dict[str, Any] | None) -> Args:
    """Validated arguments, or an InvalidArgumentError that names each bad field."""
    try:
        return tool.args.model_validate(arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            (f"{'.'.join(str(p) for p in e['loc'])}: " if e["loc"] else "")
            + e["msg"].removeprefix("Value error, ")
            + (f" (got {_shown(e['input'])})" if e["type"] != "missing" and e["loc"] else "")
            for e in exc.errors()
        )
        raise InvalidArgumentError(f"invalid arguments for {tool.name}: {problems}. Fix them and call again.") from None


def _shown(value: Any) -> str:
    """A bad argument as the error quotes it: its repr, cut (a wrong value may be megabytes)."""
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:100]}… ({len(text):,} characters)"


async def call(
    memory: TaskMemory,
    tool: MemoryTool,
    arguments: dict[str, Any] | None,
    owner: str | None,
    *,
    over_http: bool = True,
) -> mt.CallToolResult:
    """Answer one memory tool call: the memory tools' boundary, where errors become `isError` answers, and
    where the tokens the model reads back are counted for `offprompt stats`. `over_http`: the answer goes over
    HTTP or SSE, whose clients refuse an event over 1 MiB (over stdio nothing caps it)."""
    limited = ANSWER_LIMIT.set(PAYLOAD_LIMIT if over_http else None)
    try:
        answer = await tool.handler(memory, parse_args(tool, arguments), owner)
    except OffpromptError as exc:
        answer = _error(str(exc))
    except Exception as exc:
        logger.exception("%s failed", tool.name)
        answer = _error(f"{tool.name} failed unexpectedly ({type(exc).__name__}: {exc}); see offprompt's log.")
    finally:
        ANSWER_LIMIT.reset(limited)
    text = "\n".join(b.text for b in answer.content if isinstance(b, mt.TextContent))
    memory.usage.read(tool.name, _answer_tokens(text))
    return answer


#: Answers up to this many characters have their token counts kept (the last `maxsize` of them, 4 MiB at most):
#: a client asking again for what has not changed (memory_list of the same memory, the same window) gets the same
#: text, and counting it again was about a fifth of memory_list's own work (60-90 µs, in a profile).
_KEPT_COUNT_CHARS = 16_384


def _answer_tokens(text: str) -> int:
    """The tokens of an answer's text, as `offprompt stats` counts what the model read back."""
    if not text:
        return 0
    return _kept_count(text) if len(text) <= _KEPT_COUNT_CHARS else count_tokens(text)


@functools.lru_cache(maxsize=256)
def _kept_count(text: str) -> int:
    return count_tokens(text)


def _error(message: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=message)], is_error=True)
