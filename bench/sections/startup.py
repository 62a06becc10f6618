"""5. Start-up and memory: spawn to the answer of `tools/list`, and resident memory as the server works.

Start-up is compared with a bare hello-world MCPServer spawned the same way,
the two interleaved. Resident memory is that of the `offprompt serve` process
(not its downstream): idle after `tools/list`, after `memory_query` has loaded
Chroma and the model, and after a 10 MB result from a downstream was stored.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psutil

from bench import peers
from bench.context import Context
from bench.report import Row, SectionResult, check
from bench.stdio import StdioPeer
from bench.timing import summarize

NAME = "startup"
TITLE = "5. Start-up and memory"
TARGET_RATIO = 1.5
MIB = 1024 * 1024


async def _spawn_to_tools(argv: list[str], env: dict[str, str] | None = None) -> float:
    peer = await StdioPeer.spawn(argv, env=env)
    try:
        await peer.initialize()
        await peer.list_tools()
        return time.perf_counter() - peer.spawned_at
    finally:
        await peer.close()


def _rss(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / MIB


async def _run(ctx: Context, res: SectionResult) -> None:
    scratch = ctx.workdir / "startup"
    scratch.mkdir(parents=True, exist_ok=True)
    hello = peers.hello()
    bare = peers.offprompt_command("serve", "--data-dir", str(scratch / "data"), "--memory-name", "startup")
    config = peers.write_config(
        scratch / "offprompt.json",
        {"hello": hello.config()},
        {"memory_name": "proxied", "data_dir": str(scratch / "data")},
    )
    proxied = peers.offprompt_command("serve", "--config", str(config))
    runs: dict[str, list[float]] = {"hello": [], "offprompt": [], "offprompt+hello": []}
    repeat = ctx.pick(9, 3)
    ctx.log(f"startup: spawn → tools/list, {repeat} rounds")
    for _ in range(1 + repeat):  # the first round warms the OS caches and is dropped
        runs["hello"].append(await _spawn_to_tools(hello.command, hello.env))
        runs["offprompt"].append(await _spawn_to_tools(bare))
        runs["offprompt+hello"].append(await _spawn_to_tools(proxied))
    stats = {k: summarize(v[1:]) for k, v in runs.items()}
    h, o, p = stats["hello"], stats["offprompt"], stats["offprompt+hello"]
    res.rows.append(
        Row(
            "bare hello-world MCPServer: spawn → tools/list, p50", h.p50 * 1000, "ms", note=f"p95 {h.p95 * 1000:.0f} ms"
        )
    )
    res.rows.append(
        Row(
            "offprompt serve (memory tools): spawn → tools/list, p50",
            o.p50 * 1000,
            "ms",
            note=f"p95 {o.p95 * 1000:.0f} ms",
        )
    )
    res.rows.append(check("offprompt / hello-world, p50", o.p50 / h.p50, "x", at_most=TARGET_RATIO, target="≤ 1.5"))
    res.rows.append(
        Row(
            "offprompt serve --config with hello-world behind it: spawn → tools/list, p50",
            p.p50 * 1000,
            "ms",
            note=f"{p.p50 / h.p50:.2f}x hello-world",
        )
    )
    res.data["spawn_to_tools_list"] = {k: s.to_json() for k, s in stats.items()}

    ctx.log("startup: resident memory of offprompt serve")
    rss: dict[str, Any] = {}
    async with await StdioPeer.spawn(proxied, stderr=scratch / "rss.log") as op:
        await op.initialize()
        await op.list_tools()
        await asyncio.sleep(1.0)
        rss["idle"] = _rss(op.pid)
        await op.call_tool("memory_query", {"query": "warm up"})
        rss["model_loaded"] = _rss(op.pid)
        ref = await op.call_tool(peers.public_name("hello", "text"), {"n_bytes": 10_000_000})
        if "artifact_namespace" not in ref.get("_meta", {}).get("offprompt", {}):
            raise RuntimeError("the 10 MB result was not stored")
        rss["stored_10mb"] = _rss(op.pid)
        await asyncio.sleep(10.0)
        rss["stored_10mb_after_10s_of_indexing"] = _rss(op.pid)
    res.rows.append(Row("resident memory idle (after tools/list)", rss["idle"], "MiB"))
    res.rows.append(Row("resident memory after the model loads (first memory_query)", rss["model_loaded"], "MiB"))
    res.rows.append(
        Row(
            "resident memory after storing a 10 MB result",
            rss["stored_10mb"],
            "MiB",
            note=f"{rss['stored_10mb_after_10s_of_indexing']:.0f} MiB after 10 s of indexing it",
        )
    )
    res.data["rss_mib"] = rss


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    asyncio.run(_run(ctx, res))
    return res
