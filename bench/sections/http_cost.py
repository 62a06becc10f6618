"""11. HTTP cost: the server CPU one request over streamable HTTP costs offprompt, against a bare SDK server.

One run starts a bare MCPServer with one trivial tool on the SDK's own `streamable_http_app` (bench/servers/
hello_http.py) and `offprompt serve --transport http` with the hello-world server (bench/servers/hello.py)
behind it, and sends each the same requests from a raw httpx client (no SDK client: the bench's own CPU is
not what is measured, and it is not in the servers' processes anyway). Both protocol generations, as they
reach `/mcp`:

- 2026-07-28: self-contained POSTs, the envelope in `params._meta`, no session;
- 2025-11-25: one session (`initialize`, `Mcp-Session-Id`), every call on it; answers come as SSE.

Three calls, in blocks of `BLOCK` taken in turn so load drift hits them alike: the bare server's `echo`,
offprompt's `memory_list` (a memory holding a few stored outputs), and offprompt's proxied `hello__echo` (the
default policy; its tiny answer passes). What is measured is the server process's CPU seconds (user +
system, psutil) over each block, divided by its calls: that holds on a busy machine where wall time does
not. The downstream hello's own CPU is reported beside the proxied call, not in it.

`BENCH_HTTP_COST_BASELINE=<another checkout>/server` serves a second offprompt from that tree, its blocks in
turn with the others' (a change's before and after in one run); `BENCH_HTTP_COST_ROUNDS` sets the rounds.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from bench import peers
from bench.context import REPO, Context
from bench.corpus import mixed_text
from bench.report import Row, SectionResult, check
from offprompt.artifacts import TextArtifact

NAME = "http_cost"
TITLE = "11. HTTP cost"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
#: Calls in one measured block; the blocks of the three calls are taken in turn.
BLOCK = 50
#: offprompt's server CPU per request at most this many times the bare server's (issue #27).
TARGET_RATIO = 1.5
BARE = "bare MCPServer echo"
LIST = "offprompt memory_list"
PROXIED = "offprompt hello__echo (proxied)"
_CLIENT_INFO = {"name": "bench-http-cost", "version": "1"}
TOKEN_ENV = "OFFPROMPT_AUTH_TOKEN"
#: `BENCH_HTTP_COST_BASELINE=<another checkout>/server` serves a second offprompt from that tree, its blocks in
#: turn with the others': a change's before and after, measured in one run.
BASELINE_ENV = "BENCH_HTTP_COST_BASELINE"
BASELINE_SUFFIX = " [baseline tree]"
#: More rounds than the 12 of a full run (3 quick), for a difference of a tenth of a millisecond on a busy machine.
ROUNDS_ENV = "BENCH_HTTP_COST_ROUNDS"


class Wire:
    """One client of one generation on one server: `call` sends a tools/call and returns its JSON-RPC answer."""

    def __init__(self, http: httpx.Client, url: str, generation: str) -> None:
        self.http = http
        self.url = url
        self.generation = generation
        self.ids = itertools.count(1)
        self.session: str | None = None

    def open(self) -> None:
        """A 2025-11-25 client's handshake: initialize, then notifications/initialized on the new session."""
        if self.generation == MODERN:
            return
        params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": _CLIENT_INFO}
        response = self._post({"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": params})
        self.session = response.headers["mcp-session-id"]
        _answer(response)
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        if self.session is not None:
            self.http.delete(self.url, headers=self._headers())
            self.session = None

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if self.generation == MODERN:
            params["_meta"] = {
                PROTOCOL_VERSION_META_KEY: MODERN,
                CLIENT_CAPABILITIES_META_KEY: {},
                CLIENT_INFO_META_KEY: _CLIENT_INFO,
            }
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call", "params": params}
        answer = _answer(self._post(message, name))
        if "result" not in answer or answer["result"].get("isError"):
            raise RuntimeError(f"{self.url} {name}: {answer}")
        return answer

    def _headers(self, method: str | None = None, name: str | None = None) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.generation == MODERN:
            headers["mcp-protocol-version"] = MODERN
            if method is not None:
                headers["mcp-method"] = method
            if name is not None:
                headers["mcp-name"] = name
        elif self.session is not None:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = HANDSHAKE
        return headers

    def _post(self, message: dict[str, Any], name: str | None = None) -> httpx.Response:
        headers = self._headers(message["method"], name)
        response = self.http.post(self.url, content=json.dumps(message), headers=headers)
        response.raise_for_status()
        return response


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST: the body, or the `data:` of its SSE event that carries an id."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if "id" in message:
                return dict(message)
    raise RuntimeError(f"no answer in {response.text[:200]!r}")


@dataclass
class Target:
    """One call on one server, and the server CPU and wall time its blocks took."""

    label: str
    process: psutil.Process
    wire: Wire
    tool: str
    arguments: dict[str, Any]
    downstream: psutil.Process | None = None
    cpu: float = 0.0
    downstream_cpu: float = 0.0
    wall: float = 0.0
    calls: int = 0
    per_block: list[float] = field(default_factory=list)  # CPU ms per request of each block

    def run_block(self, calls: int) -> None:
        cpu, below, started = _cpu(self.process), _cpu(self.downstream), time.perf_counter()
        for _ in range(calls):
            self.wire.call(self.tool, self.arguments)
        wall = time.perf_counter() - started
        spent = _cpu(self.process) - cpu
        self.cpu += spent
        self.downstream_cpu += _cpu(self.downstream) - below
        self.wall += wall
        self.calls += calls
        self.per_block.append(spent / calls * 1000)

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.calls * 1000


def _cpu(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


def _seed(ctx: Context, name: str) -> tuple[Path, str]:
    """A memory with a few stored outputs for memory_list to show, fully indexed before the server opens it."""
    with ctx.memory(name) as memory:
        for n in range(5):
            text = TextArtifact(value=mixed_text(2_000 + 500 * n))
            memory.store([text], tool="bench.http_cost", arguments={"n": n})
        memory.text.wait_indexed()  # type: ignore[attr-defined]  # else the server loads the model to finish it
        assert memory.directory is not None
        return memory.directory.parent, name


Served = tuple[str, int]  # URL and pid


def _offprompt(ctx: Context, stack: ExitStack, tree: str | None) -> Served:
    """`offprompt serve --transport http` with hello behind it, from this checkout or from `tree` (a `server`
    folder), on a memory of its own."""
    scratch = ctx.workdir / "http_cost"
    scratch.mkdir(parents=True, exist_ok=True)
    data_dir, memory_name = _seed(ctx, "http-cost" if tree is None else "http-cost-baseline")
    config = peers.write_config(scratch / f"offprompt-{memory_name}.json", {"hello": peers.hello().config()}, {})
    env = _env() if tree is None else {**_env(), "PYTHONPATH": os.pathsep.join([str(REPO), tree])}
    # `-m offprompt`, not the venv's script: the script imports whichever tree was installed, this runs this one.
    command = [
        sys.executable, "-m", "offprompt", "serve", "--transport", "http", "--host", "127.0.0.1", "--port", "0",
        "--config", str(config), "--data-dir", str(data_dir), "--memory-name", memory_name,
    ]  # fmt: skip
    return stack.enter_context(peers.serving_http(command, env))


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": peers._pythonpath(), "HF_HUB_OFFLINE": "1"}
    env.pop(TOKEN_ENV, None)  # a token in the caller's shell would make offprompt ask for it
    return env


def _bare(stack: ExitStack) -> Served:
    command = [sys.executable, "-m", "bench.servers.hello_http"]
    return stack.enter_context(peers.serving_http(command, _env(), ready=r"hello-http: serving MCP at (\S+)"))


def _wait_for_tool(wire: Wire, name: str, seconds: float = 60) -> None:
    """offprompt lists a server's tools once it is up: call until the proxied tool answers."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            wire.call(name, {"text": "hi"})
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _targets(http: httpx.Client, generation: str, bare: Served, offprompts: dict[str, Served]) -> Iterator[Target]:
    """The bare echo, then memory_list and the proxied echo of each offprompt (`offprompts`: label suffix → it)."""
    calls: list[tuple[str, Served, str, dict[str, Any]]] = [(BARE, bare, "echo", {"text": "hi"})]
    for suffix, served in offprompts.items():
        calls.append((LIST + suffix, served, "memory_list", {"limit": 5}))
        calls.append((PROXIED + suffix, served, peers.public_name("hello", "echo"), {"text": "hi"}))
    for label, (url, pid), tool, arguments in calls:
        process = psutil.Process(pid)
        children = process.children(recursive=True) if tool != "memory_list" and label != BARE else []
        wire = Wire(http, url, generation)
        wire.open()
        yield Target(label, process, wire, tool, arguments, children[0] if children else None)


def _measure(targets: list[Target], rounds: int, warmup: int) -> None:
    for target in targets:
        for _ in range(warmup):
            target.wire.call(target.tool, target.arguments)
    for _ in range(rounds):
        for target in targets:
            target.run_block(BLOCK)


def _rows(res: SectionResult, generation: str, targets: list[Target]) -> None:
    by_label = {t.label: t for t in targets}
    bare = by_label[BARE]
    for target in targets:
        blocks = sorted(target.per_block)
        note = (
            f"{target.calls} calls; blocks {blocks[0]:.2f}-{blocks[-1]:.2f} ms; "
            f"wall {target.wall / target.calls * 1000:.2f} ms/request"
        )
        if target.downstream is not None:
            note += f"; the downstream hello spent {target.downstream_cpu / target.calls * 1000:.2f} ms more"
        res.rows.append(Row(f"{target.label}, {generation} client: server CPU", target.cpu_ms, "ms/request", note=note))
    for label in (t.label for t in targets if t is not bare):
        metric, ratio = f"{label} / {BARE}, {generation} client: server CPU", by_label[label].cpu_ms / bare.cpu_ms
        if label in (LIST, PROXIED):
            res.rows.append(check(metric, ratio, "x", at_most=TARGET_RATIO, target=f"≤ {TARGET_RATIO}"))
        else:  # the baseline tree's: for the comparison, not held to the target
            res.rows.append(Row(metric, ratio, "x"))
    res.data[generation] = {
        t.label: {
            "calls": t.calls,
            "server_cpu_ms_per_request": round(t.cpu_ms, 4),
            "block_cpu_ms_per_request": [round(b, 4) for b in t.per_block],
            "wall_ms_per_request": round(t.wall / t.calls * 1000, 4),
            **({"downstream_cpu_ms_per_request": round(t.downstream_cpu / t.calls * 1000, 4)} if t.downstream else {}),
        }
        for t in targets
    }


def _idle_cpu(processes: dict[str, psutil.Process], seconds: float = 2.0) -> dict[str, float]:
    """CPU ms per second each server spends with no request: what a block's figure carries besides its calls."""
    before = {label: _cpu(p) for label, p in processes.items()}
    time.sleep(seconds)
    return {label: (_cpu(p) - before[label]) / seconds * 1000 for label, p in processes.items()}


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    rounds = int(os.environ.get(ROUNDS_ENV) or ctx.pick(12, 3))
    baseline = os.environ.get(BASELINE_ENV)
    with ExitStack() as stack:
        bare = _bare(stack)
        offprompts = {"": _offprompt(ctx, stack, None)}
        if baseline:
            offprompts[BASELINE_SUFFIX] = _offprompt(ctx, stack, baseline)
            res.notes.append(f"the rows marked{BASELINE_SUFFIX} ran offprompt from {baseline}")
        http = stack.enter_context(httpx.Client(timeout=60))
        for url, _ in offprompts.values():
            _wait_for_tool(Wire(http, url, MODERN), peers.public_name("hello", "echo"))
        for generation in (MODERN, HANDSHAKE):
            ctx.log(f"http_cost: {generation} clients, {rounds} rounds of {BLOCK} calls each")
            targets = list(_targets(http, generation, bare, offprompts))
            try:
                _measure(targets, rounds, warmup=20)
            finally:
                for target in targets:
                    target.wire.close()
            _rows(res, generation, targets)
        processes = {"bare": bare[1], **{f"offprompt{suffix}": pid for suffix, (_, pid) in offprompts.items()}}
        idle = _idle_cpu({label: psutil.Process(pid) for label, pid in processes.items()})
    res.data["idle_cpu_ms_per_second"] = {k: round(v, 3) for k, v in idle.items()}
    res.notes.append(
        f"server CPU = user + system seconds of the server process (psutil) over blocks of {BLOCK} calls, the three "
        "calls' blocks in turn; raw httpx clients on one keep-alive connection per server; idle CPU after the run: "
        + ", ".join(f"{k} {v:.2f} ms/s" for k, v in idle.items())
    )
    return res
