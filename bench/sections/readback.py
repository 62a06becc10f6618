"""3. Read back: memory_load windows, memory_grep over 10 MB, memory_query against collection size.

Calls go through the memory tools end to end, in process (`mcp.Client` on the
server `app.build_server` makes): what a client pays, minus the transport.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as mt
import numpy as np
from mcp import Client

from bench.context import Context, HeldIndexing
from bench.corpus import KB, MB, mixed_text, questions
from bench.report import Row, SectionResult, check
from bench.timing import Stats, ainterleaved, ameasure
from bench.vectors import insert, noisy, real_vectors
from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

NAME = "readback"
TITLE = "3. Read back"
WINDOW = 2000
TARGET_LOAD_RATIO = 2.0
TARGET_QUERY_P95_MS = 100.0


def _meta(result: mt.CallToolResult) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(result.content[0].text if isinstance(result.content[0], mt.TextContent) else "error")
    assert result.meta is not None
    return dict(result.meta["offprompt"])


def _store_text(memory: TaskMemory, text: str, tool: str = "bench.read") -> tuple[str, int]:
    ref = memory.store([TextArtifact(value=text)], tool=tool)
    return ref.namespace, ref.record.tokens


async def _loads(ctx: Context, res: SectionResult, memory: TaskMemory, client: Client) -> None:
    sizes = {"10 KB": mixed_text(10 * KB), "10 MB": mixed_text(10 * MB)}
    stored = {label: _store_text(memory, text) for label, text in sizes.items()}
    rng = random.Random(11)

    def load(label: str) -> Any:
        namespace, tokens = stored[label]

        async def call() -> None:
            offset = rng.randrange(0, max(tokens - WINDOW, 1))
            _meta(
                await client.call_tool(
                    "memory_load", {"artifact_namespace": namespace, "offset": offset, "max_tokens": WINDOW}
                )
            )

        return call

    ctx.log("readback: memory_load windows, 10 KB and 10 MB interleaved")
    stats = await ainterleaved({label: load(label) for label in stored}, repeat=ctx.pick(300, 60), warmup=5)
    small, large = stats["10 KB"], stats["10 MB"]
    res.rows.append(
        Row(
            f"memory_load {WINDOW}-token window of 10 KB, p95",
            small.p95 * 1000,
            "ms",
            note=f"p50 {small.p50 * 1000:.2f} ms",
        )
    )
    res.rows.append(
        Row(
            f"memory_load {WINDOW}-token window of 10 MB, p95",
            large.p95 * 1000,
            "ms",
            note=f"p50 {large.p50 * 1000:.2f} ms",
        )
    )
    res.rows.append(
        check("memory_load p95, 10 MB / 10 KB", large.p95 / small.p95, "x", at_most=TARGET_LOAD_RATIO, target="≤ 2x")
    )
    res.data["memory_load"] = {label: s.to_json() for label, s in stats.items()}

    namespace = stored["10 MB"][0]
    greps: dict[str, Stats] = {}
    for label, pattern, repeat in (
        ("no match: every line scanned", r"zq_nothing_matches_this_\d+", ctx.pick(5, 2)),
        ("rare: 'TimeoutExpired'", r"TimeoutExpired", ctx.pick(5, 2)),
        ("common: first 50 of 'def '", r"def ", ctx.pick(20, 5)),
    ):
        ctx.log(f"readback: memory_grep over 10 MB, {label}")

        async def grep(p: str = pattern) -> None:
            _meta(await client.call_tool("memory_grep", {"pattern": p, "artifact_namespace": namespace}))

        greps[label] = await ameasure(grep, repeat=repeat, warmup=1)
        res.rows.append(
            Row(
                f"memory_grep over 10 MB, {label}, p50",
                greps[label].p50 * 1000,
                "ms",
                note=f"p95 {greps[label].p95 * 1000:.0f} ms",
            )
        )
    res.data["memory_grep_10mb"] = {label: s.to_json() for label, s in greps.items()}


async def _queries(ctx: Context, res: SectionResult, memory: TaskMemory, client: Client) -> None:
    levels = ctx.pick([1_000, 10_000, 100_000], [1_000, 10_000])
    per_namespace = 1_000
    docs, base = real_vectors(ctx, per_namespace)
    rng = np.random.default_rng(3)
    qs = questions()
    text = mixed_text(MB)
    first_ns, tokens = _store_text(memory, text)
    ctx.log(f"readback: {per_namespace} real chunks with their real vectors")
    insert(memory, first_ns, docs, base, max_offset=tokens)
    namespaces = [first_ns]
    filler_text = mixed_text(10 * KB)
    report: dict[str, Any] = {}
    for level in levels:
        while len(namespaces) * per_namespace < level:
            ns, ns_tokens = _store_text(memory, filler_text, tool="bench.filler")
            insert(memory, ns, docs, noisy(base, per_namespace, rng), max_offset=ns_tokens)
            namespaces.append(ns)
        count = memory.text._get_collection().count()  # type: ignore[attr-defined]
        ctx.log(f"readback: memory_query at {count} chunks")
        q = iter(range(10**9))

        async def query_all(q: Iterator[int] = q) -> None:
            _meta(await client.call_tool("memory_query", {"query": qs[next(q) % len(qs)]}))

        async def query_one(q: Iterator[int] = q) -> None:
            _meta(
                await client.call_tool("memory_query", {"query": qs[next(q) % len(qs)], "artifact_namespace": first_ns})
            )

        stats = await ainterleaved({"all": query_all, "one": query_one}, repeat=ctx.pick(100, 30), warmup=3)
        label = f"{level // 1000}k"
        for key, scope in (("all", "every namespace"), ("one", "one 1k-chunk namespace")):
            res.rows.append(
                check(
                    f"memory_query at {label} chunks, {scope}, p95",
                    stats[key].p95 * 1000,
                    "ms",
                    at_most=TARGET_QUERY_P95_MS,
                    target="≤ 100 ms",
                    note=f"p50 {stats[key].p50 * 1000:.1f} ms",
                )
            )
        report[str(count)] = {k: s.to_json() for k, s in stats.items()} | {"namespaces": len(namespaces)}
    res.data["memory_query"] = report
    res.notes.append(
        "memory_query (hybrid, the default) searches both indexes full: every chunk is in the lexical index "
        "(SQLite FTS5) and in Chroma. The first 1k chunks are real chunks with the real model's vectors; "
        "past that, each "
        "further namespace holds 1k copies of those vectors with Gaussian noise (sigma=0.05 per dimension, "
        "renormalised) inserted directly, since embedding 100k chunks would take over an hour here. Every "
        "query embeds its text with the real model (questions from bench/retrieval/data/qa.jsonl)."
    )


async def _run(ctx: Context, res: SectionResult) -> None:
    with ctx.memory("readback") as memory:
        HeldIndexing(memory)  # loads and greps need no index; the query collection is filled directly
        async with Client(build_server(memory)) as client:
            await _loads(ctx, res, memory, client)
            await _queries(ctx, res, memory, client)


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    anyio.run(_run, ctx, res)
    return res
