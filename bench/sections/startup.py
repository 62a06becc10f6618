"""5. Start-up, stop and memory: spawn to the answer of `tools/list`, a stop to the exit, resident memory.

Start-up is compared with a bare hello-world MCPServer spawned the same way,
the runs interleaved: offprompt with only its memory tools, and offprompt with
that same hello-world server behind it on a warm list cache (its tools/list
answered from the server's last list while it starts, and offprompt's own first
answers given by its prelude before the SDK is imported). The stop is timed from
SIGINT, SIGTERM or closing stdin to the process's exit, with a call in flight
and (for offprompt) the embedder busy with a 1 MB text stored just before,
next to the hello-world server stopped the same way. Resident memory is that
of the `offprompt serve` process (not its downstream): idle after `tools/list`
(nothing heavy loaded), after `memory_query` has loaded Chroma and the model,
and after a 10 MB result from a downstream was stored.
"""

from __future__ import annotations

import asyncio
import signal
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
#: With one downstream on warm caches: at most the bare SDK server, which is also that downstream alone here.
WARM_TARGET_RATIO = 1.0
STOP_TARGET_S = 0.5
IDLE_RSS_TARGET_MIB = 120
MIB = 1024 * 1024
STOPS = ("SIGINT", "SIGTERM", "stdin EOF")


async def _time_stop(argv: list[str], env: dict[str, str] | None, how: str, store: str | None) -> float:
    """Seconds from a stop (`how`) to the process's exit, with a `sleep` call in flight; `store`: a tool whose
    1 MB answer offprompt stores (its embedder is busy when the stop comes)."""
    peer = await StdioPeer.spawn(argv, env=env)
    await peer.initialize()
    tools = {t["name"] for t in await peer.list_tools()}
    if store is not None:
        await peer.call_tool(store, {"n_bytes": 1_000_000})
        await asyncio.sleep(0.5)  # the chunker done, the embedder mid-batch
    sleep = next(name for name in tools if name.endswith("sleep"))
    await peer._send(
        {
            "jsonrpc": "2.0",
            "id": "slow",
            "method": "tools/call",
            "params": {"name": sleep, "arguments": {"seconds": 60}},
        }
    )
    await asyncio.sleep(0.2)
    started = time.perf_counter()
    if how == "stdin EOF":
        assert peer.process.stdin is not None
        peer.process.stdin.close()
    else:
        peer.process.send_signal(signal.Signals[how])
    try:
        async with asyncio.timeout(30):
            await peer.process.wait()
    except TimeoutError:
        peer.process.kill()
        await peer.process.wait()
    return time.perf_counter() - started


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
    # The stops leave embedding unfinished, which the next start of that memory resumes (loading the model):
    # they get a memory of their own, so the idle figure below is of a memory with nothing to resume.
    stop_config = peers.write_config(
        scratch / "offprompt-stops.json",
        {"hello": hello.config()},
        {"memory_name": "stops", "data_dir": str(scratch / "stop-data")},
    )
    stopped = peers.offprompt_command("serve", "--config", str(stop_config))
    cache_env = {"OFFPROMPT_CACHE_DIR": str(scratch / "cache")}  # warm after the first, dropped, round
    runs: dict[str, list[float]] = {"hello": [], "offprompt": [], "offprompt+hello": []}
    repeat = ctx.pick(9, 3)
    ctx.log(f"startup: spawn → tools/list, {repeat} rounds")
    for _ in range(1 + repeat):  # the first round warms the OS caches and is dropped
        runs["hello"].append(await _spawn_to_tools(hello.command, hello.env))
        runs["offprompt"].append(await _spawn_to_tools(bare))
        runs["offprompt+hello"].append(await _spawn_to_tools(proxied, cache_env))
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
    res.rows.append(
        check(
            "offprompt with hello-world behind it (warm caches) / hello-world alone, p50",
            p.p50 / h.p50,
            "x",
            at_most=WARM_TARGET_RATIO,
            target="≤ 1.0",
            note="initialize and tools/list answered by the prelude, before the SDK is imported (serve/prelude.py)",
        )
    )

    ctx.log("startup: stop → exit, with a call in flight")
    stop_rounds = ctx.pick(5, 2)
    stops: dict[str, dict[str, list[float]]] = {how: {"hello": [], "offprompt": []} for how in STOPS}
    for _ in range(stop_rounds):
        for how in STOPS:
            stops[how]["hello"].append(await _time_stop(hello.command, hello.env, how, None))
            text_tool = peers.public_name("hello", "text")
            stops[how]["offprompt"].append(await _time_stop(stopped, cache_env, how, text_tool))
    for how in STOPS:
        o_stop, h_stop = summarize(stops[how]["offprompt"]), summarize(stops[how]["hello"])
        res.rows.append(
            check(
                f"offprompt: {how} → exit, a call in flight and the embedder busy, max",
                o_stop.max,
                "s",
                at_most=STOP_TARGET_S,
                target=f"≤ {STOP_TARGET_S}",
                note=f"p50 {o_stop.p50:.2f} s; hello-world alone p50 {h_stop.p50:.2f} s",
            )
        )
    res.data["stop_seconds"] = {how: {k: summarize(v).to_json() for k, v in d.items()} for how, d in stops.items()}

    ctx.log("startup: resident memory of offprompt serve")
    rss: dict[str, Any] = {}
    async with await StdioPeer.spawn(proxied, stderr=scratch / "rss.log") as op:
        await op.initialize()
        await op.list_tools()
        await asyncio.sleep(2.0)
        rss["idle"] = _rss(op.pid)
        await op.call_tool("memory_query", {"query": "warm up"})
        rss["model_loaded"] = _rss(op.pid)
        ref = await op.call_tool(peers.public_name("hello", "text"), {"n_bytes": 10_000_000})
        if "artifact_namespace" not in ref.get("_meta", {}).get("offprompt", {}):
            raise RuntimeError("the 10 MB result was not stored")
        rss["stored_10mb"] = _rss(op.pid)
        await asyncio.sleep(10.0)
        rss["stored_10mb_after_10s_of_indexing"] = _rss(op.pid)
    res.rows.append(
        check(
            "resident memory idle (2 s after tools/list, nothing stored)",
            rss["idle"],
            "MiB",
            at_most=IDLE_RSS_TARGET_MIB,
            target=f"≤ {IDLE_RSS_TARGET_MIB}",
        )
    )
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
