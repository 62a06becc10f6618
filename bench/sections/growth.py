"""6. Growth: store and read-back cost against artifact size and against the number of namespaces.

Prints each cost at every step with its log-log slope (1.0: linear; 0: flat),
and writes a PNG of both next to the JSON.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
from mcp import Client

from bench.context import Context, HeldIndexing
from bench.corpus import KB, MB, mixed_text, questions
from bench.report import Row, SectionResult
from bench.sections.readback import _meta
from bench.timing import ameasure, measure, summarize
from bench.vectors import chunk_texts, insert, noisy, real_vectors
from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

NAME = "growth"
TITLE = "6. Growth"


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares exponent k of y ∝ x^k."""
    lx, ly = np.log(np.asarray(xs, dtype=float)), np.log(np.asarray(ys, dtype=float))
    return float(np.polyfit(lx, ly, 1)[0])


def _human(n: float) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n / KB:g} KB"


def _ms(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


async def _by_size(
    ctx: Context, memory: TaskMemory, client: Client, rng: np.random.Generator, base: Any
) -> dict[str, Any]:
    sizes = ctx.pick([10 * KB, 100 * KB, MB, 10 * MB], [10 * KB, 100 * KB, MB])
    qs = questions()
    out: dict[str, list[float]] = {
        "store": [],
        "memory_load": [],
        "memory_grep (full scan)": [],
        "memory_query (this namespace)": [],
    }
    chunks: list[int] = []
    for size in sizes:
        ctx.log(f"growth: artifact of {_human(size)}")
        text = mixed_text(size)
        artifact = [TextArtifact(value=text)]
        refs: list[Any] = []
        repeat = 10 if size <= 100 * KB else 3 if size <= MB else 2
        store = measure(
            lambda a=artifact, r=refs: r.append(memory.store(a, tool="bench.read")), repeat=repeat, warmup=1
        )
        ns, tokens = refs[-1].namespace, refs[-1].record.tokens
        pieces = chunk_texts(text)
        insert(memory, ns, pieces, noisy(base, len(pieces), rng), max_offset=tokens)
        chunks.append(len(pieces))
        pick = random.Random(size)

        async def load(ns: str = ns, tokens: int = tokens, pick: random.Random = pick) -> None:
            offset = pick.randrange(0, max(tokens - 2000, 1))
            _meta(await client.call_tool("memory_load", {"artifact_namespace": ns, "offset": offset}))

        async def grep(ns: str = ns) -> None:
            _meta(await client.call_tool("memory_grep", {"pattern": r"zq_nothing_\d+", "artifact_namespace": ns}))

        counter = iter(range(10**9))

        async def query(ns: str = ns, counter: Iterator[int] = counter) -> None:
            _meta(
                await client.call_tool("memory_query", {"query": qs[next(counter) % len(qs)], "artifact_namespace": ns})
            )

        out["store"].append(store.p50 * 1000)
        out["memory_load"].append((await ameasure(load, repeat=ctx.pick(50, 20), warmup=2)).p50 * 1000)
        out["memory_grep (full scan)"].append((await ameasure(grep, repeat=3, warmup=1)).p50 * 1000)
        out["memory_query (this namespace)"].append(
            (await ameasure(query, repeat=ctx.pick(30, 10), warmup=2)).p50 * 1000
        )
    return {"x": sizes, "chunks": chunks, "p50_ms": out}


async def _by_namespaces(
    ctx: Context, memory: TaskMemory, client: Client, rng: np.random.Generator, base: Any
) -> dict[str, Any]:
    levels = ctx.pick([1, 10, 100, 1000], [1, 10, 100])
    qs = questions()
    text = mixed_text(10 * KB)
    pieces = chunk_texts(text)
    out: dict[str, list[float]] = {
        "store (10 KB)": [],
        "memory_query (every namespace)": [],
        "memory_query (one namespace)": [],
        "memory_grep (every namespace)": [],
        "memory_list": [],
    }
    namespaces: list[str] = []
    store_times: list[float] = []
    for level in levels:
        while len(namespaces) < level:
            start = time.perf_counter()
            ref = memory.store([TextArtifact(value=text)], tool="bench.read", arguments={"n": len(namespaces)})
            store_times.append(time.perf_counter() - start)
            insert(memory, ref.namespace, pieces, noisy(base, len(pieces), rng), max_offset=ref.record.tokens)
            namespaces.append(ref.namespace)
        ctx.log(f"growth: {level} namespaces")
        counter = iter(range(10**9))

        async def query_all(counter: Iterator[int] = counter) -> None:
            _meta(await client.call_tool("memory_query", {"query": qs[next(counter) % len(qs)]}))

        async def query_one(counter: Iterator[int] = counter) -> None:
            _meta(
                await client.call_tool(
                    "memory_query", {"query": qs[next(counter) % len(qs)], "artifact_namespace": namespaces[0]}
                )
            )

        async def grep_all() -> None:
            _meta(await client.call_tool("memory_grep", {"pattern": r"zq_nothing_\d+"}))

        async def listing() -> None:
            _meta(await client.call_tool("memory_list", {"limit": 50}))

        out["store (10 KB)"].append(summarize(store_times[-10:]).p50 * 1000)
        out["memory_query (every namespace)"].append((await ameasure(query_all, repeat=ctx.pick(30, 10))).p50 * 1000)
        out["memory_query (one namespace)"].append((await ameasure(query_one, repeat=ctx.pick(30, 10))).p50 * 1000)
        out["memory_grep (every namespace)"].append((await ameasure(grep_all, repeat=3)).p50 * 1000)
        out["memory_list"].append((await ameasure(listing, repeat=ctx.pick(20, 10))).p50 * 1000)
    return {"x": levels, "chunks": [n * len(pieces) for n in levels], "p50_ms": out}


def _plot(path: Any, by_size: dict[str, Any], by_ns: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    for ax, data, xlabel, title in (
        (axes[0], by_size, "artifact size (bytes)", "cost against artifact size"),
        (axes[1], by_ns, "namespaces in the memory (10 KB each)", "cost against store size"),
    ):
        for label, ys in data["p50_ms"].items():
            ax.plot(data["x"], ys, marker="o", label=f"{label} (slope {slope(data['x'], ys):.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("p50 (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("offprompt: growth (python -m bench)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _rows(res: SectionResult, data: dict[str, Any], axis: str, show: Any) -> None:
    steps = " → ".join(show(x) for x in data["x"])
    for label, ys in data["p50_ms"].items():
        k = slope(data["x"], ys)
        res.rows.append(
            Row(f"{label} p50 against {axis} ({steps})", " → ".join(_ms(y) for y in ys), "ms", note=f"slope {k:.2f}")
        )


async def _run(ctx: Context, res: SectionResult) -> None:
    _, base = real_vectors(ctx, 1000)
    rng = np.random.default_rng(17)
    with ctx.memory("growth-size") as memory:
        HeldIndexing(memory)
        async with Client(build_server(memory)) as client:
            by_size = await _by_size(ctx, memory, client, rng, base)
    with ctx.memory("growth-namespaces") as memory:
        HeldIndexing(memory)
        async with Client(build_server(memory)) as client:
            by_ns = await _by_namespaces(ctx, memory, client, rng, base)
    _rows(res, by_size, "artifact size", _human)
    _rows(res, by_ns, "namespaces", lambda n: f"{n:,}")
    res.data["by_artifact_size"] = by_size
    res.data["by_namespaces"] = by_ns
    plot = ctx.results_dir / ctx.cache.get("plot_name", "growth.png")
    _plot(plot, by_size, by_ns)
    res.data["plot"] = plot.name
    res.notes.append(
        f"Growth plot: bench/results/{plot.name}. Slope is the least-squares exponent k of cost ∝ size^k over the "
        "steps (1 = linear, 0 = flat). Chunk vectors are pre-computed stand-ins (real vectors plus noise); "
        "query text is embedded by the real model."
    )


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    anyio.run(_run, ctx, res)
    return res
