"""8. memory_select: jq over stored JSON against the jq library alone, other calls meanwhile, tokens to an answer.

Calls go through the memory tools end to end, in process (`mcp.Client` on
`app.build_server`). The baseline is the `jq` library run in this process on
the same parsed value (`jq.compile(e).input_value(v).all()`), interleaved with
the tool call so drift in machine load hits both alike. The selector keeps
recent results for paging; it is emptied before every timed call, so each call
runs the expression (the worker keeps the input text it read before, which is
the point of a warm worker).
"""

from __future__ import annotations

import importlib.metadata
import json
import random
from typing import Any

import anyio
import anyio.to_thread
import jq
import mcp_types as mt
from mcp import Client

from bench.context import Context, HeldIndexing
from bench.corpus import MB
from bench.report import Row, SectionResult, check
from bench.timing import ainterleaved, ameasure, aonce
from offprompt.artifacts import JsonArtifact
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

NAME = "select"
TITLE = "8. memory_select"
TARGET_RATIO = 1.5
FIELDS = ("id", "name", "email", "active", "score", "city", "age", "team", "created", "tags")
EXPRESSIONS = {"length": "length", "10-field projection": f"[.[] | {{{', '.join(FIELDS)}}}]"}


def records(n_bytes: int) -> list[dict[str, Any]]:
    """An array of user-like records, about `n_bytes` of JSON."""
    rng = random.Random(3)
    out: list[dict[str, Any]] = []
    size = 2
    while size < n_bytes:
        i = len(out)
        record = {
            "id": i,
            "name": f"user{i}",
            "email": f"user{i}@example.com",
            "active": rng.random() < 0.5,
            "score": round(rng.random() * 100, 3),
            "city": rng.choice(["Paris", "Oslo", "Lima", "Kyoto", "Accra"]),
            "age": rng.randint(18, 90),
            "team": f"team-{i % 50}",
            "created": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
            "tags": rng.sample(["a", "b", "c", "d", "e"], 2),
            "bio": " ".join(rng.choice(["lorem", "ipsum", "dolor", "sit", "amet"]) for _ in range(12)),
            "address": {"street": f"{i} Main St", "zip": f"{10000 + i % 89999}"},
        }
        out.append(record)
        size += len(json.dumps(record)) + 2
    return out


def _result(result: mt.CallToolResult) -> mt.CallToolResult:
    if result.is_error:
        block = result.content[0]
        raise RuntimeError(block.text if isinstance(block, mt.TextContent) else "error")
    return result


def _store(memory: TaskMemory, value: Any, tool: str) -> str:
    text = json.dumps(value)
    return memory.store([JsonArtifact(value=value, text=text)], tool=tool).namespace


def _text_tokens(result: mt.CallToolResult) -> int:
    return sum(count_tokens(b.text) for b in result.content if isinstance(b, mt.TextContent))


async def _ratios(ctx: Context, res: SectionResult, memory: TaskMemory, client: Client) -> None:
    for label, size in (("1 MB", 1 * MB), ("10 MB", 10 * MB)):
        value = records(size)
        namespace = _store(memory, value, "bench.users")
        cold, _ = await aonce(
            lambda ns=namespace: client.call_tool("memory_select", {"artifact_namespace": ns, "expression": "length"})
        )
        res.data[f"first select {label} (reads the input into a worker)"] = round(cold * 1000, 1)
        for name, expression in EXPRESSIONS.items():
            arguments = {"artifact_namespace": namespace, "expression": expression}

            async def tool(arguments: dict[str, Any] = arguments) -> None:
                memory.selector._results.clear()  # run the expression, not the page cache
                _result(await client.call_tool("memory_select", arguments))

            async def library(expression: str = expression, value: Any = value) -> None:
                await anyio.to_thread.run_sync(lambda: jq.compile(expression).input_value(value).all())

            ctx.log(f"select: {name} over {label}")
            repeat = ctx.pick(15, 5) if size < 10 * MB else ctx.pick(5, 3)
            stats = await ainterleaved({"select": tool, "jq": library}, repeat=repeat, warmup=1)
            ours, base = stats["select"], stats["jq"]
            ratio = ours.p50 / base.p50
            note = (
                f"p50 {ours.p50 * 1000:,.0f} ms, p95 {ours.p95 * 1000:,.0f} ms; jq library p50 "
                f"{base.p50 * 1000:,.0f} ms, p95 {base.p95 * 1000:,.0f} ms; n={ours.n}"
            )
            metric = f"memory_select {name} over {label} JSON array, p50 ratio to the jq library"
            if size >= 10 * MB:
                res.rows.append(check(metric, ratio, "x", at_most=TARGET_RATIO, target=f"≤ {TARGET_RATIO}x", note=note))
            else:
                res.rows.append(Row(metric, ratio, "x", note=note))
            res.data[f"{name} {label}"] = {
                "select": ours.to_json(),
                "jq": base.to_json(),
                "p95 ratio": ours.p95 / base.p95,
            }
        ctx.cache[f"select {label}"] = namespace


async def _others_meanwhile(ctx: Context, res: SectionResult, memory: TaskMemory) -> None:
    namespace = ctx.cache["select 10 MB"]
    heavy = {"artifact_namespace": namespace, "expression": EXPRESSIONS["10-field projection"]}
    async with Client(build_server(memory)) as selecting, Client(build_server(memory)) as other:
        repeat = ctx.pick(60, 20)

        def list_call() -> Any:
            return other.call_tool("memory_list", {})

        def load_call() -> Any:
            return other.call_tool("memory_load", {"artifact_namespace": namespace, "offset": 50_000})

        idle = await ameasure(list_call, repeat=repeat, warmup=5)
        idle_load = await ameasure(load_call, repeat=repeat, warmup=5)
        busy = anyio.Event()
        done = anyio.Event()
        selects = 0

        async def keep_selecting() -> None:
            nonlocal selects
            while not done.is_set():
                memory.selector._results.clear()
                busy.set()
                _result(await selecting.call_tool("memory_select", heavy))
                selects += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_selecting)
            await busy.wait()
            during = await ameasure(list_call, repeat=repeat, warmup=0)
            during_load = await ameasure(load_call, repeat=repeat, warmup=0)
            overlapped = selects == 0  # every call above ran while the first select was still running
            done.set()
        after = await ameasure(list_call, repeat=repeat, warmup=0)
    for name, busy_stats, idle_stats in (("memory_list", during, idle), ("memory_load window", during_load, idle_load)):
        res.rows.append(
            Row(
                f"{name} from another client while a 10 MB select runs, p95",
                busy_stats.p95 * 1000,
                "ms",
                note=f"p50 {busy_stats.p50 * 1000:.1f} ms; with no select p50 {idle_stats.p50 * 1000:.1f} ms, "
                f"p95 {idle_stats.p95 * 1000:.1f} ms",
            )
        )
    res.data["meanwhile"] = {
        "memory_list idle": idle.to_json(),
        "memory_list during select": during.to_json(),
        "memory_list after": after.to_json(),
        "memory_load idle": idle_load.to_json(),
        "memory_load during select": during_load.to_json(),
        "all calls overlapped the first select": overlapped,
    }


def installed_files(limit: int) -> list[dict[str, Any]]:
    """A real 5,000-record result: the files of the installed Python distributions, with their sizes."""
    rows: list[dict[str, Any]] = []
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        for file in dist.files or ():
            if len(rows) == limit:
                return rows
            path = file.locate()
            size = path.stat().st_size if path.exists() else None
            rows.append(
                {"distribution": dist.metadata["Name"], "version": dist.version, "path": str(file), "bytes": size}
            )
    return rows


async def _tokens(ctx: Context, res: SectionResult, memory: TaskMemory, client: Client) -> None:
    files = installed_files(5000)
    namespace = _store(memory, files, "fs.list_installed_files")
    question = "how many Python source files are over 10 KB"
    expression = 'map(select((.path | endswith(".py")) and .bytes > 10000)) | length'
    arguments = {"artifact_namespace": namespace, "expression": expression}
    answer = _result(await client.call_tool("memory_select", arguments))
    block = answer.content[0]
    assert isinstance(block, mt.TextContent)
    expected = sum(1 for f in files if f["path"].endswith(".py") and (f["bytes"] or 0) > 10000)
    assert json.loads(block.text) == expected, (block.text, expected)
    select_tokens = count_tokens(json.dumps(arguments)) + _text_tokens(answer)
    load_tokens = 0
    offset: int | None = 0
    pages = 0
    while offset is not None:
        args = {"artifact_namespace": namespace, "offset": offset, "max_tokens": 2000}
        page = _result(await client.call_tool("memory_load", args))
        load_tokens += count_tokens(json.dumps(args)) + _text_tokens(page)
        assert page.meta is not None
        offset = page.meta["offprompt"]["next_offset"]
        pages += 1
    res.rows.append(
        Row(
            f'tokens to answer "{question}" on {len(files):,} real records: memory_select',
            select_tokens,
            "tokens",
            note=f"answer {expected}",
        )
    )
    res.rows.append(
        Row(
            "… the same by reading it all through memory_load (2,000-token windows)",
            load_tokens,
            "tokens",
            note=f"{pages} calls; {load_tokens / select_tokens:,.0f}x the select",
        )
    )
    res.data["tokens"] = {"select": select_tokens, "memory_load": load_tokens, "pages": pages, "answer": expected}


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)

    async def main() -> None:
        with ctx.memory("select") as memory:
            held = HeldIndexing(memory)  # the indexer would take a core from both sides of every ratio
            try:
                async with Client(build_server(memory)) as client:
                    await _ratios(ctx, res, memory, client)
                    await _tokens(ctx, res, memory, client)
                await _others_meanwhile(ctx, res, memory)
            finally:
                held.release()

    anyio.run(main)
    res.notes.append(
        "ratios are p50 of memory_select (whole tool call, in process) over p50 of jq.compile(e).input_value(v).all() "
        "on the same parsed value, interleaved in one run; the page cache is emptied before each select"
    )
    return res
