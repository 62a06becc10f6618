"""How many times one stored call crosses between offprompt's modules, from stdin to the reference.

    .venv/bin/python -m bench.trace_call                      # prints the counts and the module pairs
    .venv/bin/python -m bench.trace_call --label after --save # also records them in bench/results/trace_call.json
    .venv/bin/python -m bench.trace_call --warm               # the lists cache warm: the call takes the SDK path
    PYTHONPATH=/tmp/old/server .venv/bin/python -m bench.trace_call --label 87ac9a6 --save   # another tree's server

The server runs as a real `offprompt serve --config` subprocess over stdio, under a profiler that counts
every call from a function of one offprompt module into a function of another (a coroutine counts once,
not at each resumption), in every thread except the background indexers. The client (a 2025-era
`ClientSession`, so the call takes the fast lane) starts a session, lists tools, and makes one call whose
result goes off the prompt; a second run without that call is the baseline, and the difference is the
call's own count. Each run has a lists cache of its own, empty (fresh) or, with `--warm`, filled by a start
before it: then the tools are listed before the server is live, and the call takes the SDK path.

Four counts are reported, each with its module pairs: `total` (every crossing between two modules); `path`
(crossings made by the modules that carry the call from stdin to the reference and back, `TaskMemory`
included: calls made *from* the memory's internals below it, `artifacts`, `tokens` and the shutdown in
`cli` are left out); `serving` (the part of `path` made outside the memory: stdio, the fast lane, the result
boundary, policy, secrets, the proxy); and `packages` (crossings between offprompt's packages, so
`offprompt.memory.storage.text -> offprompt.memory.catalog` counts none). Module names of older trees
(`offprompt.storage`, `offprompt.catalog`, `TaskMemory` in `offprompt.memory`) are counted the same way.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.report import commit, load_average

REPO = Path(__file__).resolve().parent.parent
COUNTER = REPO / "tests" / "servers" / "counter.py"
#: `offprompt.cache_dir.CACHE_ENV`, spelled out: a PYTHONPATH may trace a tree that predates it.
CACHE_ENV = "OFFPROMPT_CACHE_DIR"
RESULTS = REPO / "bench" / "results" / "trace_call.json"
#: The memory's own modules below `TaskMemory`, and the shutdown's (their crossings are not the call's path).
#: Old names too (`offprompt.storage`, `offprompt.catalog`, ...), to count an older tree the same way.
MEMORY_INTERNALS = (
    "offprompt.memory.",
    "offprompt.storage",
    "offprompt.catalog",
    "offprompt.chunking",
    "offprompt.outline",
    "offprompt.artifacts",
    "offprompt.tokens",
    "offprompt.cli",
    "offprompt.embedding",
)
#: Where `TaskMemory` lives (in an older tree, `offprompt.memory` itself).
TASK_MEMORY = ("offprompt.memory.task_memory", "offprompt.memory")


def _serve_traced(out: Path, argv: list[str]) -> None:
    """Runs `offprompt serve` in this process, counting cross-module calls; writes them to `out` at exit."""
    crossings: collections.Counter[str] = collections.Counter()
    entered: dict[int, Any] = {}  # frames counted already, kept alive so their ids are not reused
    lock = threading.Lock()

    def module(frame: Any) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if isinstance(name, str) and name.startswith("offprompt") else None

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or threading.current_thread().name in (
            "offprompt-chunker",
            "offprompt-embedder",
            "trace-writer",
        ):
            return
        callee = module(frame)
        caller = module(frame.f_back) if frame.f_back is not None else None
        if callee and caller and callee != caller and id(frame) not in entered:
            entered[id(frame)] = frame  # a coroutine resumed after an await is not a new crossing
            where = f"{caller} -> {callee}"
            if os.environ.get("TRACE_FUNCTIONS"):
                where = f"{caller}.{frame.f_back.f_code.co_name} -> {callee}.{frame.f_code.co_name}"
            with lock:
                crossings[where] += 1

    def save() -> None:  # the client stops the server with a signal: keep the file current
        while True:
            with lock:
                snapshot = json.dumps(crossings)
            out.with_suffix(".tmp").write_text(snapshot)
            out.with_suffix(".tmp").replace(out)
            time.sleep(0.1)

    threading.Thread(target=save, name="trace-writer", daemon=True).start()
    threading.setprofile(profile)
    sys.setprofile(profile)
    from offprompt.cli import main

    main(argv)


async def _session(out: Path, config: Path, data: Path, call: bool, warm: bool) -> str:
    """One session, the same steps with and without the call, so the difference is the call's own: the call
    is made once the server is live (the fast lane), or, with `warm`, right after the tools are listed from
    the cache, while the server is still starting (the SDK path); either way the counts are read once the
    server is live, so its start counts in both runs."""
    # The lists cache in the run's own directory: fresh unless `_count` primed it, whatever earlier runs left.
    cache = {CACHE_ENV: str(config.parent / "cache")}
    params = StdioServerParameters(
        command=sys.executable,
        args=[__file__, "--serve", str(out), "--", "serve", "--config", str(config), "--data-dir", str(data)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(_server_path()), **cache},
    )
    log = out.with_suffix(".log")
    with log.open("w") as errors:
        async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            if not warm:
                await _until_live(log)
            if call:
                result = await session.call_tool("counter__lines", {"count": 3000})
                if not (result.meta and "offprompt" in result.meta):
                    raise SystemExit("the call's result should have gone off the prompt")
            await _until_live(log)
            await anyio.sleep(1.0)  # the server's counts reach the file
            # Read while the session is open: the server's shutdown (closing the memory) is not the call's.
            return await anyio.Path(out).read_text()


async def _until_live(log: Path) -> None:
    """Until offprompt says its server has started (`1/1 servers` on stderr, once every server is up)."""
    while True:  # a file another process writes: nothing to wait on but its content
        if "1/1 servers" in await anyio.Path(log).read_text():
            return
        await anyio.sleep(0.05)


def _server_path() -> list[str]:
    """The caller's PYTHONPATH first (to trace another tree's server), then this tree's."""
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [*given, str(REPO / "server"), str(REPO)]


def _count(call: bool, warm: bool) -> collections.Counter[str]:
    """The crossings of one session; `warm`: after a first start of the same config has cached its lists, so
    the tools are listed before the server is live and a call right after start takes the SDK path."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "offprompt.json"
        # Slow to start, so a call right after a warm start surely finds it still starting.
        server = {"command": sys.executable, "args": [str(COUNTER)], "env": {"COUNTER_START_DELAY": "2"}}
        config.write_text(json.dumps({"mcpServers": {"counter": server}}))
        out = root / "crossings.json"
        if warm:
            anyio.run(_session, root / "priming.json", config, root / "data", False, False)
        return collections.Counter(json.loads(anyio.run(_session, out, config, root / "data", call, warm)))


def _modules(pair: str) -> tuple[str, str]:
    """The caller's and the callee's module (a pair names functions too under TRACE_FUNCTIONS)."""
    caller, callee = pair.split(" -> ")
    if os.environ.get("TRACE_FUNCTIONS"):
        caller, callee = caller.rsplit(".", 1)[0], callee.rsplit(".", 1)[0]
    return caller, callee


def on_path(pair: str) -> bool:
    """Made by the modules that carry the call, `TaskMemory` included."""
    caller, _ = _modules(pair)
    return caller in TASK_MEMORY or not caller.startswith(MEMORY_INTERNALS)


def serving(pair: str) -> bool:
    """Made by the serving side: stdio, the fast lane, the boundary, policy, secrets, the proxy (not the memory)."""
    caller, _ = _modules(pair)
    return caller not in TASK_MEMORY and not caller.startswith(MEMORY_INTERNALS)


def package(module: str) -> str:
    """`offprompt.memory.storage.text` -> `offprompt.memory`; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def summary(diff: collections.Counter[str]) -> dict[str, Any]:
    path = collections.Counter({pair: n for pair, n in diff.items() if on_path(pair)})
    served = collections.Counter({pair: n for pair, n in diff.items() if serving(pair)})
    packages: collections.Counter[str] = collections.Counter()
    for pair, count in diff.items():
        caller, callee = (package(m) for m in _modules(pair))
        if caller != callee:
            packages[f"{caller} -> {callee}"] += count
    return {
        "total": sum(diff.values()),
        "pairs": len(diff),
        "path": sum(path.values()),
        "path_pairs": len(path),
        "serving": sum(served.values()),
        "serving_pairs": len(served),
        "packages": sum(packages.values()),
        "package_pairs": len(packages),
        "crossings": dict(diff.most_common()),
        "path_crossings": dict(path.most_common()),
        "package_crossings": dict(packages.most_common()),
    }


def _save(label: str, result: dict[str, Any], load: list[float]) -> None:
    """Add this run under `label` to the results file, the others kept."""
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    given = os.environ.get("PYTHONPATH", "")
    tree = f"PYTHONPATH={given} " if given else ""
    warm = " --warm" if result.get("warm") else ""
    command = f"PYTHONDONTWRITEBYTECODE=1 {tree}python -m bench.trace_call --save --label '{label}'{warm}"
    # The commit only of this tree: a PYTHONPATH traces another one, which its label names.
    stamped = {"command": command, "commit": None if given else commit()}
    loads = {"load_average_at_start": load, "load_average_at_end": load_average()}
    runs[label] = {**stamped, **loads, **result}
    RESULTS.write_text(json.dumps(runs, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--path", action="store_true", help="list only the crossings on the call's path")
    parser.add_argument("--save", action="store_true", help=f"record the counts in {RESULTS.relative_to(REPO)}")
    parser.add_argument("--label", default="current", help="the name the counts are recorded under")
    parser.add_argument(
        "--warm", action="store_true", help="start once before: the lists cache warm, the call takes the SDK path"
    )
    args, rest = parser.parse_known_args()
    if args.serve is not None:
        _serve_traced(args.serve, [a for a in rest if a != "--"])
        return
    load = load_average()
    with_call, baseline = _count(call=True, warm=args.warm), _count(call=False, warm=args.warm)
    result = {"warm": args.warm, **summary(with_call - baseline)}
    path = "the SDK path, the lists cache warm" if args.warm else "the fast lane"
    print(f"module boundaries crossed by one stored call ({path}): {result['total']} ({result['pairs']} pairs)")
    print(f"  on the call's path (memory internals left out): {result['path']} ({result['path_pairs']} pairs)")
    print(f"  of which the serving side's (no memory): {result['serving']} ({result['serving_pairs']} pairs)")
    print(f"  between packages: {result['packages']} ({result['package_pairs']} pairs)")
    listed = result["path_crossings"] if args.path else result["crossings"]
    for pair, count in listed.items():
        print(f"{count:6d}  {pair}")
    if args.save:
        _save(args.label, result, load)


if __name__ == "__main__":
    main()
