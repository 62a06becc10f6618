"""How many times one fast-lane call crosses between offprompt's modules, from stdin to the reference.

    .venv/bin/python -m bench.trace_call            # prints the count and the module pairs

The server runs as a real `offprompt serve --config` subprocess over stdio, under a profiler that counts
every call from a function of one offprompt module into a function of another (a coroutine counts once,
not at each resumption), in every thread except the background indexers. The client (a 2025-era
`ClientSession`, so the call takes the fast lane) starts a session, lists tools, and makes one call whose
result goes off the prompt; a second run without that call is the baseline, and the difference is the
call's own count.
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

REPO = Path(__file__).resolve().parent.parent
COUNTER = REPO / "tests" / "servers" / "counter.py"


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


async def _session(out: Path, config: Path, data: Path, call: bool) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[__file__, "--serve", str(out), "--", "serve", "--config", str(config), "--data-dir", str(data)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO)])},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        if call:
            result = await session.call_tool("counter__lines", {"count": 3000})
            if not (result.meta and "offprompt" in result.meta):
                raise SystemExit("the call's result should have gone off the prompt")
        await anyio.sleep(1.0)  # the server's counts reach the file


def _count(call: bool) -> collections.Counter[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / "offprompt.json"
        config.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [str(COUNTER)]}}}))
        out = root / "crossings.json"
        anyio.run(_session, out, config, root / "data", call)
        return collections.Counter(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.serve is not None:
        _serve_traced(args.serve, [a for a in rest if a != "--"])
        return
    with_call, baseline = _count(call=True), _count(call=False)
    diff = with_call - baseline
    print(f"module boundaries crossed by one stored fast-lane call: {sum(diff.values())}")
    print(f"distinct module pairs: {len(diff)}")
    for pair, count in diff.most_common():
        print(f"{count:6d}  {pair}")


if __name__ == "__main__":
    main()
