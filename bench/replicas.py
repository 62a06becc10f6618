"""Serving replicas on one shared memory behind nginx, with the indexers in them or apart (issues #15, #27).

    python -m bench.replicas [--postgres DSN] [--chroma URL] [--requests 1000] [--clients 8] [--rounds 2]
                             [--megabytes 8] [--lease SECONDS] [--quick] [--out FILE]

Every phase opens a fresh memory in PostgreSQL (its own schema and Chroma collection, dropped afterwards),
starts its `offprompt serve --transport http` replicas (each with a data directory of its own) and nginx in
front of them (Debian's package, installed with apt-get if `nginx` is missing; its own config, pid file and
logs in a scratch directory; round-robin with keep-alive), in one of two layouts at 1 and at 3 replicas:

- all-in-one: today's default, each replica indexes (chunks and embeds) what anyone stored;
- separate: replicas with `"indexer": false` (they chunk, never embed), plus 2 `offprompt index --config FILE`
  workers that embed.

The load is `--clients` concurrent 2026-07-28 clients, sessionless (one self-contained POST per call, no
`Mcp-Session-Id`, so round-robin is right for them), cycling memory_list / memory_query (lexical) /
memory_load on one small namespace; every replica is warmed first (its first read copies the text from
PostgreSQL). Then `--megabytes` answers of 1 MB (`hello__text`, plain text) are stored through the balancer
and chunked (searchable by their words); once every process that embeds has recorded a batch (its model
loaded), the `--requests` timed calls run while the embedding goes on, into a Chroma server (the bench's own
`chroma run` unless `--chroma URL`). The clients are raw httpx (no SDK models) so they take little of the CPU
the replicas need.

CPU is read per thread from /proc: offprompt runs its indexing threads (and the model's thread pool) niced,
so a replica's threads at its own niceness are serving ("serving CPU ms/req", per timed call) and its niced
ones are indexing, with the index workers' CPU ("indexing CPU s"). "embedded" is the vectors written to Chroma
during the timed calls. "serving RSS" is the largest peak resident set (VmHWM) of the serving replicas, and
"model in serving" how many of them loaded onnxruntime (with `"indexer": false` and lexical queries, none
should). "cores" is how many cores offprompt's processes kept busy ("ours") and all processes of the machine
(other users' too): with "all" at the core count the machine is the limit. On 2 cores, shared with
PostgreSQL, Chroma, nginx and the clients, throughput and p95 measure contention as much as scaling: the
serving CPU per request is the figure that carries over to a larger machine. Phases are interleaved (1 and 3
replicas of both layouts, in reverse order in the next round) so the shared machine's noise falls on every
side.

Two more phases, once each:

- routing: 3 replicas, 2025-11-25 clients (`initialize`, then `Mcp-Session-Id` on every request), each from its
  own loopback address, through nginx with `ip_hash` and with a hash on the `Authorization` header (client
  affinity; the bench's clients share one token), round-robin, and a hash on the `Mcp-Session-Id` header: how
  many sessions work, how many requests another replica answered 404, and on how many replicas sessions were made;
- kill: 1 serving replica and 2 index workers; a text of `--kill-kb` KB is stored, the worker embedding it is
  killed (SIGKILL) a few batches in, and the time is taken until the other takes the job over (when the lease,
  `--lease` or the default 60 s, runs out) and finishes it, with the vectors in Chroma counted against its chunks.

Without `--postgres` the bench starts a throw-away PostgreSQL cluster on a free loopback port the way
`.ci/run` does (initdb/pg_ctl, as the postgres user when run as root). It prints one table and writes
`bench/results/replicas.json`, stamped with the commit and the command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from bench.fleet import (
    CpuWatch,
    Proc,
    chroma_server,
    drop_memory,
    enter_all,
    index_worker,
    machine_busy,
    maps_onnxruntime,
    nginx,
    nginx_binary,
    replica,
    status_mib,
    throwaway_postgres,
    vectors_in,
)
from bench.report import invocation, load_average, stamp
from bench.timing import percentile

RESULTS = Path(__file__).parent / "results" / "replicas.json"
HELLO = Path(__file__).parent / "servers" / "hello.py"
TOKEN = "bench-replicas-token-0123456789abcdef"
PROTOCOL = "2026-07-28"
SESSION_PROTOCOL = "2025-11-25"
MARKER = "quartzlily"
T = TypeVar("T")
EMBED_BATCH = 32  # offprompt's embedding batch: the kill waits until a few are recorded

# -- layouts, memories and fleets ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Serving replicas and index workers: `indexers` 0 is today's all-in-one (the replicas index)."""

    replicas: int
    indexers: int

    @property
    def name(self) -> str:
        return "all-in-one" if self.indexers == 0 else "separate"

    @property
    def tag(self) -> str:
        return f"{'a' if self.indexers == 0 else 's'}{self.replicas}"


@dataclass(frozen=True)
class Run:
    """What every phase of one run shares."""

    dsn: str
    chroma: str
    nginx: str
    scratch: Path
    stamp: str
    args: argparse.Namespace


@dataclass(frozen=True)
class Fleet:
    """One phase's memory and the processes running on it."""

    memory_name: str
    serving: list[Proc]
    indexers: list[Proc]

    @property
    def addresses(self) -> list[str]:
        return [p.address for p in self.serving if p.address]


def write_config(path: Path, run: Run, memory_name: str, *, indexer: bool, data_dir: Path | None = None) -> Path:
    block: dict[str, Any] = {
        "memory_name": memory_name,
        "postgres": run.dsn,
        "chroma": {"mode": "http", "url": run.chroma},
    }
    if not indexer:
        block["indexer"] = False
    if data_dir is not None:
        block["data_dir"] = str(data_dir)
    hello = {"command": sys.executable, "args": [str(HELLO)], "off_prompt": "always"}
    path.write_text(json.dumps({"offprompt": block, "mcpServers": {"hello": hello}}))
    return path


def offprompt_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without offprompt's own settings, plus the bench's token and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFPROMPT_")}
    return env | {"HF_HUB_OFFLINE": "1", "OFFPROMPT_AUTH_TOKEN": TOKEN, **extra}


@contextmanager
def fleet(run: Run, layout: Layout, tag: str, extra_env: dict[str, str] | None = None) -> Iterator[Fleet]:
    """A fresh memory with the layout's replicas and index workers running on it; the memory dropped after."""
    name = f"{run.stamp}-{tag}"
    directory = run.scratch / tag
    directory.mkdir(parents=True)
    env = offprompt_env(extra_env or {})
    # Replicas with "indexer": false only in the separate layout: all-in-one replicas embed themselves.
    serve_config = write_config(directory / "serve.json", run, name, indexer=layout.indexers == 0)
    managers = [replica(serve_config, directory / f"data{n}", env) for n in range(layout.replicas)]
    for n in range(layout.indexers):
        config = write_config(directory / f"index{n}.json", run, name, indexer=True, data_dir=directory / f"index{n}")
        managers.append(index_worker(config, env))
    with ExitStack() as stack:
        stack.callback(drop_memory, run.dsn, run.chroma, name)  # last: after every process stopped
        started = enter_all(stack, managers)
        yield Fleet(name, started[: layout.replicas], started[layout.replicas :])


# -- the clients -----------------------------------------------------------------------------------------------------


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer, plain JSON or the last event of an SSE stream."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else "{}"
    message = json.loads(text) if text else {}
    return message if isinstance(message, dict) else {}


def _tool_result(response: httpx.Response) -> tuple[bool, dict[str, Any]]:
    """(ok, result) of a tools/call answer: ok is False on an HTTP error, a JSON-RPC error or an isError result."""
    if response.status_code != 200:
        return False, {"error": f"HTTP {response.status_code}: {response.text[:200]}"}
    message = _message(response)
    result = message.get("result")
    if not isinstance(result, dict):
        return False, {"error": message.get("error")}
    return not result.get("isError", False), result


class Caller:
    """Self-contained 2026-07-28 `tools/call` POSTs (no initialize, no session), raw JSON over one httpx pool."""

    def __init__(self, url: str, clients: int) -> None:
        self.url = url
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        self.http = httpx.AsyncClient(timeout=120, limits=limits, headers={"Authorization": f"Bearer {TOKEN}"})
        self.ids = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        self.ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientInfo": {"name": "bench.replicas", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta},
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        try:
            response = await self.http.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            return False, {"error": repr(exc)}
        return _tool_result(response)

    async def aclose(self) -> None:
        await self.http.aclose()


@dataclass(frozen=True)
class Answer:
    """One request of a session client: whether it worked, its HTTP status and the replica nginx sent it to."""

    ok: bool
    status: int
    upstream: str
    seconds: float


class SessionClient:
    """A 2025-11-25 client: `initialize` makes a session in the replica that answers it, and every later request
    carries its `Mcp-Session-Id`. It connects from its own loopback address, which is what `ip_hash` keys on."""

    def __init__(self, url: str, source: str) -> None:
        self.url = url
        transport = httpx.AsyncHTTPTransport(local_address=source)
        self.http = httpx.AsyncClient(transport=transport, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"})
        self.session: str | None = None
        self.ids = 0

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": SESSION_PROTOCOL,
        }
        return headers | ({"Mcp-Session-Id": self.session} if self.session else {})

    async def _post(
        self, body: dict[str, Any], ok: Callable[[httpx.Response], bool]
    ) -> tuple[Answer, httpx.Response | None]:
        """The answer (status 0: no HTTP answer at all) and the response, if there was one."""
        started = time.perf_counter()
        try:
            response = await self.http.post(self.url, json=body, headers=self._headers())
        except httpx.HTTPError:
            return Answer(False, 0, "", time.perf_counter() - started), None
        seconds = time.perf_counter() - started
        return Answer(ok(response), response.status_code, response.headers.get("x-upstream", ""), seconds), response

    async def open(self) -> list[Answer]:
        """`initialize`, then `notifications/initialized` (a session is whole once both are through)."""
        self.ids += 1
        params = {
            "protocolVersion": SESSION_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "bench.replicas", "version": "0"},
        }
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "initialize", "params": params}
        opened, response = await self._post(body, lambda r: r.status_code == 200 and "result" in _message(r))
        self.session = response.headers.get("mcp-session-id") if response is not None else None
        if not opened.ok or not self.session:
            return [opened]
        notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        told, _ = await self._post(notice, lambda r: r.status_code in (200, 202))
        return [opened, told]

    async def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer, _ = await self._post(body, lambda r: _tool_result(r)[0])
        return answer

    async def aclose(self) -> None:
        if self.session:
            # a failed delete is harmless: the replica that holds the session closes it once it is idle
            with contextlib.suppress(httpx.HTTPError):
                await self.http.delete(self.url, headers=self._headers())
        await self.http.aclose()


# -- what is stored, and the load --------------------------------------------------------------------------------------


def stored_text() -> str:
    lines = [f"2026-05-20 10:{n % 60:02d}:00 INFO worker-{n % 4} request {n} served in {n % 17} ms" for n in range(400)]
    return "\n".join([*lines, f"2026-05-20 11:00:00 ERROR the {MARKER} checksum failed"])


async def store(url: str, tool: str, arguments: dict[str, Any]) -> tuple[str, float]:
    """Store a hello tool's answer through `url` (hello is `"off_prompt": "always"`); its namespace and how long
    the call took."""
    caller = Caller(url, 1)
    try:
        started = time.perf_counter()
        ok, result = await caller.call(tool, arguments)
        seconds = time.perf_counter() - started
    finally:
        await caller.aclose()
    meta = result.get("_meta", {}).get("offprompt", {})
    if not ok or "artifact_namespace" not in meta:
        raise SystemExit(f"a store through {url} failed: {str(result)[:300]}")
    return str(meta["artifact_namespace"]), seconds


def megabyte() -> tuple[str, dict[str, Any]]:
    # `hello__text`: a large answer to small arguments, as real calls have (memory_list reads each listed
    # call's arguments whole, so 1 MB texts passed in through `hello__echo` would weigh on every list)
    return "hello__text", {"n_bytes": 1_000_000}


async def store_once(url: str) -> str:
    """Store the ~25 KB text the load reads and wait until it is queryable; its namespace."""
    namespace, _ = await store(url, "hello__echo", {"text": stored_text()})
    caller = Caller(url, 1)
    try:
        deadline = time.monotonic() + 120
        while True:
            ok, found = await caller.call("memory_query", query_args(namespace))
            if ok and found.get("_meta", {}).get("offprompt", {}).get("results"):
                return namespace
            if time.monotonic() > deadline:
                raise SystemExit(f"the stored text was not queryable within 120 s: {found}")
            await asyncio.sleep(0.2)
    finally:
        await caller.aclose()


async def store_megabytes(url: str, count: int) -> list[float]:
    """Store `count` answers of 1 MB one after another through the balancer; each store's seconds."""
    return [(await store(url, *megabyte()))[1] for _ in range(count)]


def query_args(namespace: str) -> dict[str, Any]:
    return {"query": f"{MARKER} checksum", "artifact_namespace": namespace, "mode": "lexical"}


def mix(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("memory_list", {"limit": 20}),
        ("memory_query", query_args(namespace)),
        ("memory_load", {"artifact_namespace": namespace, "max_tokens": 500}),
    ]


@dataclass
class Driven:
    """The timed calls of one phase: summary figures, and every latency (pooled across rounds later)."""

    row: dict[str, Any]
    latencies: list[float] = field(repr=False)


async def drive(url: str, namespace: str, requests: int, clients: int) -> Driven:
    """`clients` concurrent loops sharing `requests` calls of the mix; seconds, latencies and errors."""
    calls = mix(namespace)
    caller = Caller(url, clients)
    latencies: dict[str, list[float]] = {tool: [] for tool, _ in calls}
    errors: list[str] = []
    next_call = 0

    async def loop() -> None:
        nonlocal next_call
        while next_call < requests:
            tool, arguments = calls[next_call % len(calls)]
            next_call += 1
            started = time.perf_counter()
            ok, result = await caller.call(tool, arguments)
            latencies[tool].append(time.perf_counter() - started)
            if not ok:
                errors.append(f"{tool}: {str(result)[:200]}")

    try:
        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(clients)))
        seconds = time.perf_counter() - started
    finally:
        await caller.aclose()
    every = [s for samples in latencies.values() for s in samples]
    row = {
        "requests": len(every),
        "seconds": round(seconds, 3),
        "req_per_s": round(len(every) / seconds, 1),
        "p50_ms": round(percentile(every, 50) * 1000, 1),
        "p95_ms": round(percentile(every, 95) * 1000, 1),
        "errors": len(errors),
        "first_errors": errors[:3],
        "per_tool_p50_ms": {tool: round(percentile(s, 50) * 1000, 1) for tool, s in latencies.items() if s},
    }
    return Driven(row, every)


# -- the load phases -----------------------------------------------------------------------------------------------


def cpu_figures(watch: CpuWatch, f: Fleet, requests: int, seconds: float) -> dict[str, Any]:
    """Serving CPU per request (the replicas' threads at their own niceness), and indexing CPU (their niced
    threads, and the index workers whole)."""
    serving = [p.pid for p in f.serving]
    workers = [p.pid for p in f.indexers]
    foreground = sum(watch.foreground(pid) for pid in serving)
    indexing = sum(watch.background(pid) for pid in serving) + sum(watch.total(pid) for pid in workers)
    ours = sum(watch.total(pid) for pid in serving + workers)
    return {
        "serving_cpu_ms_per_request": round(foreground * 1000 / requests, 2),
        "replica_cpu_ms_per_request": round(sum(watch.total(pid) for pid in serving) * 1000 / requests, 2),
        "indexing_cpu_s": round(indexing, 2),
        "index_workers_cpu_s": round(sum(watch.total(pid) for pid in workers), 2),
        "cores_ours": round(ours / seconds, 2),
    }


def memory_figures(f: Fleet) -> dict[str, Any]:
    """Resident memory now and at its peak, and which serving replicas loaded onnxruntime (the model)."""
    return {
        "serving_rss_mib": [status_mib(p.pid, "VmRSS") for p in f.serving],
        "serving_peak_rss_mib": [status_mib(p.pid, "VmHWM") for p in f.serving],
        "serving_with_onnxruntime": sum(maps_onnxruntime(p.pid) for p in f.serving),
        "index_worker_peak_rss_mib": [status_mib(p.pid, "VmHWM") for p in f.indexers],
    }


def poll_jobs(
    dsn: str, memory_name: str, query: str, until: Callable[[list[Any]], bool], what: str, timeout: float = 600
) -> None:
    """Run `query` on the memory's jobs table (`{jobs}` in it) every 0.2 s until `until(rows)` holds."""
    import psycopg

    from offprompt.memory.storage.pg import schema_name

    sql = query.format(jobs=f'"{schema_name(memory_name)}".jobs')
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not until(conn.execute(sql).fetchall()):
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} within {timeout:.0f} s")
            time.sleep(0.2)


def wait_chunked(dsn: str, memory_name: str) -> None:
    """Until no text of the memory waits to be chunked (searchable by its words; embedding may go on)."""
    query = "SELECT 1 FROM {jobs} WHERE stage = 'chunk' LIMIT 1"
    poll_jobs(dsn, memory_name, query, lambda rows: not rows, "the stored texts were not all chunked")


def wait_embedding(dsn: str, memory_name: str, embedders: int) -> None:
    """Until `embedders` processes have each been seen holding a job with a batch recorded (their model loaded):
    the timed calls then meet embedding under way, not the one-off loading of the model."""
    seen: set[str] = set()

    def all_seen(rows: list[Any]) -> bool:
        seen.update(str(owner) for (owner,) in rows)
        return len(seen) >= embedders

    query = "SELECT DISTINCT owner FROM {jobs} WHERE stage = 'embed' AND done > 0 AND owner IS NOT NULL"
    poll_jobs(dsn, memory_name, query, all_seen, f"{embedders} processes did not all start embedding")


def store_and_chunk(run: Run, f: Fleet, url: str) -> dict[str, Any]:
    """Store `--megabytes` answers of 1 MB through the balancer and wait until they are chunked and every
    embedder is at work on them: their embedding, the slow part, then runs under the timed calls."""
    begun = time.monotonic()
    seconds = asyncio.run(store_megabytes(url, run.args.megabytes))
    wait_chunked(run.dsn, f.memory_name)
    chunked = time.monotonic() - begun
    embedders = len(f.indexers) or len(f.serving)  # all-in-one: every replica embeds
    wait_embedding(run.dsn, f.memory_name, min(embedders, run.args.megabytes))  # a job each, at most
    return {
        "count": len(seconds),
        "megabytes": len(seconds),
        "store_p50_ms": round(percentile(seconds, 50) * 1000, 1) if seconds else None,
        "stored_and_chunked_s": round(chunked, 1),
        "until_every_embedder_is_at_work_s": round(time.monotonic() - begun, 1),
    }


def timed_window(run: Run, f: Fleet, url: str, namespace: str) -> Driven:
    """The timed calls while the stored texts are embedded, with what they cost the machine and the fleet."""
    load = os.getloadavg()[0]
    before = vectors_in(run.chroma, f.memory_name)
    client, (busy, total) = time.process_time(), machine_busy()
    started = time.perf_counter()
    with CpuWatch([p.pid for p in [*f.serving, *f.indexers]]) as watch:
        driven = asyncio.run(drive(url, namespace, run.args.requests, run.args.clients))
    window = time.perf_counter() - started
    client = time.process_time() - client
    busy_after, total_after = machine_busy()
    embedded = vectors_in(run.chroma, f.memory_name) - before
    requests = driven.row["requests"]
    driven.row |= {
        **cpu_figures(watch, f, requests, window),
        "embedded_chunks": embedded,
        "embedded_per_s": round(embedded / window, 1),
        "embedded_before": before,
        **memory_figures(f),
        "client_cpu_ms_per_request": round(client * 1000 / requests, 2),
        "cores_all": round((busy_after - busy) / (total_after - total) * (os.cpu_count() or 1), 2),
        "load_1min_before": round(load, 2),
    }
    return driven


def load_phase(run: Run, layout: Layout, round_no: int) -> Driven:
    """One layout under the timed calls while `--megabytes` stored just before are embedded."""
    begun = time.monotonic()
    tag = f"r{round_no}-{layout.tag}"
    with fleet(run, layout, tag) as f, nginx(run.nginx, f.addresses, run.scratch / tag / "nginx") as url:
        namespace = asyncio.run(store_once(url))
        # warm-up: every replica reads the text once (its read-through copy) and loads its lazy parts
        asyncio.run(drive(url, namespace, 6 * layout.replicas * len(mix(namespace)), run.args.clients))
        stored = store_and_chunk(run, f, url)
        driven = timed_window(run, f, url, namespace)
    phase = {"round": round_no, "layout": layout.name, "replicas": layout.replicas, "index_workers": layout.indexers}
    driven.row = phase | driven.row | {"stores": stored, "phase_seconds": round(time.monotonic() - begun, 1)}
    return driven


def schedule(rounds: int) -> list[tuple[int, Layout]]:
    """1 and 3 replicas of both layouts, each round in the reverse order of the one before (noise on every side)."""
    one = [Layout(1, 0), Layout(1, 2), Layout(3, 0), Layout(3, 2)]
    return [(turn + 1, layout) for turn in range(rounds) for layout in (one if turn % 2 == 0 else one[::-1])]


# -- routing session clients ---------------------------------------------------------------------------------------

#: How nginx may route 2025-11-25 session clients over 3 replicas: by client address or bearer token (affinity:
#: every request of a client carries them, its `initialize` too), round-robin, and by the session header (which
#: `initialize` cannot carry yet: nginx routes a request with an empty key round-robin).
ROUTING = (
    ("ip_hash", "ip_hash;"),
    ("hash $http_authorization", "hash $http_authorization consistent;"),  # one token here: one replica
    ("round-robin", ""),
    ("hash $http_mcp_session_id", "hash $http_mcp_session_id consistent;"),
)


async def one_session(url: str, source: str, namespace: str, calls: int) -> list[Answer]:
    client = SessionClient(url, source)
    try:
        answers = await client.open()
        if all(a.ok for a in answers) and len(answers) == 2:
            work = mix(namespace)
            answers += [await client.call(*work[n % len(work)]) for n in range(calls)]
        return answers
    finally:
        await client.aclose()


async def sessions_through(url: str, namespace: str, clients: int, calls: int) -> dict[str, Any]:
    """`clients` session clients, each from its own address (127.0.N.1: ip_hash keys on the first three bytes)."""
    sessions = await asyncio.gather(*(one_session(url, f"127.0.{k + 1}.1", namespace, calls) for k in range(clients)))
    answers = [a for s in sessions for a in s]
    good = [a.seconds for a in answers if a.ok]
    return {
        "sessions": clients,
        "sessions_working": sum(len(s) == calls + 2 and all(a.ok for a in s) for s in sessions),
        "requests": len(answers),
        "ok": len(good),
        "http_404": sum(a.status == 404 for a in answers),
        "other_failures": sum(not a.ok and a.status != 404 for a in answers),
        "replicas_holding_sessions": len({s[0].upstream for s in sessions if s[0].ok}),
        "p95_ms": round(percentile(good, 95) * 1000, 1) if good else None,
    }


def routing_phase(run: Run) -> list[dict[str, Any]]:
    """3 serving replicas (nothing embeds here) behind nginx with each routing of `ROUTING` in turn."""
    with fleet(run, Layout(3, 0), "routing") as f:
        directory = run.scratch / "routing"
        with nginx(run.nginx, f.addresses, directory / "store") as url:
            namespace = asyncio.run(store_once(url))
        rows = []
        for n, (policy, directive) in enumerate(ROUTING):
            with nginx(run.nginx, f.addresses, directory / f"nginx{n}", directive) as url:
                found = asyncio.run(sessions_through(url, namespace, run.args.sessions, run.args.session_calls))
            rows.append({"routing": policy, **found})
    return rows


# -- the kill ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """An indexing job as PostgreSQL has it."""

    stage: str
    owner: str | None
    taken: int
    chunks: int
    done: int


def job_of(conn: Any, memory_name: str, namespace: str) -> Job | None:
    from offprompt.memory.storage.pg import schema_name

    row = conn.execute(
        f'SELECT stage, owner, taken, chunks, done FROM "{schema_name(memory_name)}".jobs WHERE namespace = %s',
        (namespace,),
    ).fetchone()
    return None if row is None else Job(str(row[0]), row[1], int(row[2]), int(row[3]), int(row[4]))


def wait_for(
    dsn: str, memory_name: str, namespace: str, until: Callable[[Job | None], bool], timeout: float
) -> Job | None:
    """Poll the namespace's job every 0.1 s until `until` holds (None: the job is done); that job."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            job = job_of(conn, memory_name, namespace)
            if until(job):
                return job
            if time.monotonic() > deadline:
                raise SystemExit(f"the job of {namespace} did not get there within {timeout:.0f} s: {job}")
            time.sleep(0.1)


def owner_pid(owner: str) -> int:
    """The pid in a job's owner, `host:pid:suffix`."""
    return int(owner.rsplit(":", 2)[1])


def kill_phase(run: Run) -> dict[str, Any]:
    """SIGKILL the index worker embedding a text a few batches in; when the other takes it over and finishes it."""
    lease = run.args.lease
    env = {"OFFPROMPT_JOB_LEASE_SECONDS": str(lease)} if lease else {}
    with fleet(run, Layout(1, 2), "kill", env) as f:
        workers = {p.pid for p in f.indexers}
        text = ("hello__text", {"n_bytes": run.args.kill_kb * 1024})
        namespace, _ = asyncio.run(store(f"http://{f.addresses[0]}/mcp", *text))

        def mid_job(job: Job | None) -> bool:
            return (
                job is not None
                and job.stage == "embed"
                and job.owner is not None
                and 2 * EMBED_BATCH <= job.done <= job.chunks - 4 * EMBED_BATCH
            )

        held = wait_for(run.dsn, f.memory_name, namespace, mid_job, 300)
        assert held is not None
        assert held.owner is not None
        holder = held.owner
        victim = owner_pid(holder)
        if victim not in workers:
            raise SystemExit(f"the job is held by pid {victim}, not by an index worker {sorted(workers)}")
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        taken = wait_for(run.dsn, f.memory_name, namespace, lambda j: j is None or j.owner not in (None, holder), 600)
        took_over = time.monotonic() - killed
        wait_for(run.dsn, f.memory_name, namespace, lambda j: j is None, 600)
        finished = time.monotonic() - killed
        vectors = vectors_in(run.chroma, f.memory_name)
    return {
        "text_kb": run.args.kill_kb,
        "lease_s": lease or 60.0,
        "chunks": held.chunks,
        "done_at_kill": held.done,
        "resumed_at": taken.done if taken is not None else None,
        "taken_over_by_the_other": taken is not None and taken.owner is not None and owner_pid(taken.owner) in workers,
        "taken_over_after_s": round(took_over, 1),
        "finished_after_s": round(finished, 1),
        "vectors": vectors,
    }


# -- the report ----------------------------------------------------------------------------------------------------


def pooled(phases: list[Driven]) -> dict[str, dict[str, Any]]:
    """Per layout and replica count, over every round: throughput, p95, serving CPU per request, serving RSS."""
    groups: dict[str, list[Driven]] = {}
    for d in phases:
        groups.setdefault(f"{d.row['layout']}, {d.row['replicas']}", []).append(d)
    found = {}
    for key, group in groups.items():
        requests = sum(d.row["requests"] for d in group)
        found[key] = {
            "req_per_s": round(requests / sum(d.row["seconds"] for d in group), 1),
            "p95_ms": round(percentile([s for d in group for s in d.latencies], 95) * 1000, 1),
            "serving_cpu_ms_per_request": round(
                sum(d.row["serving_cpu_ms_per_request"] * d.row["requests"] for d in group) / requests, 2
            ),
            "serving_peak_rss_mib": max(max(d.row["serving_peak_rss_mib"]) for d in group),
            "embedded_per_s": round(sum(d.row["embedded_per_s"] for d in group) / len(group), 1),
        }
    return found


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, float]:
    def ratio(a: str, b: str, figure: str) -> float:
        return round(float(summary[a][figure]) / float(summary[b][figure]), 2)

    return {
        "req_per_s separate / all-in-one, 1 replica": ratio("separate, 1", "all-in-one, 1", "req_per_s"),
        "req_per_s separate / all-in-one, 3 replicas": ratio("separate, 3", "all-in-one, 3", "req_per_s"),
        "p95 separate / all-in-one, 1 replica": ratio("separate, 1", "all-in-one, 1", "p95_ms"),
        "p95 separate / all-in-one, 3 replicas": ratio("separate, 3", "all-in-one, 3", "p95_ms"),
        "req_per_s 3 / 1, all-in-one": ratio("all-in-one, 3", "all-in-one, 1", "req_per_s"),
        "req_per_s 3 / 1, separate": ratio("separate, 3", "separate, 1", "req_per_s"),
    }


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| round | layout | replicas | index workers | req/s | p50 ms | p95 ms | errors | serving CPU ms/req "
        "| indexing CPU s | embedded | serving RSS MiB (peak) | model in serving | cores: ours, all |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['round']} | {r['layout']} | {r['replicas']} | {r['index_workers']} | {r['req_per_s']} "
            f"| {r['p50_ms']} | {r['p95_ms']} | {r['errors']} | {r['serving_cpu_ms_per_request']} "
            f"| {r['indexing_cpu_s']} | {r['embedded_chunks']} | {max(r['serving_peak_rss_mib'])} "
            f"| {r['serving_with_onnxruntime']} of {r['replicas']} | {r['cores_ours']}, {r['cores_all']} |"
        )
    return lines


def summary_lines(summary: dict[str, dict[str, Any]], kill: dict[str, Any], routing: list[dict[str, Any]]) -> list[str]:
    lines = ["", "pooled over the rounds:"]
    for key, s in summary.items():
        lines.append(
            f"- {key} replica(s): {s['req_per_s']} req/s, p95 {s['p95_ms']} ms, serving CPU "
            f"{s['serving_cpu_ms_per_request']} ms/req, serving RSS peak {s['serving_peak_rss_mib']} MiB, "
            f"embedded {s['embedded_per_s']} chunks/s"
        )
    lines += [f"- {name}: {value}x" for name, value in ratios(summary).items()]
    lines.append(
        f"\nkill -9 of the index worker embedding a {kill['text_kb']} KB text ({kill['chunks']} chunks) at chunk "
        f"{kill['done_at_kill']}, lease {kill['lease_s']:g} s: the other took it over after "
        f"{kill['taken_over_after_s']} s (from chunk {kill['resumed_at']}) and finished it "
        f"{kill['finished_after_s']} s after the kill; vectors in Chroma: {kill['vectors']} of {kill['chunks']}"
    )
    lines.append("\n2025-11-25 session clients over 3 replicas:")
    for r in routing:
        lines.append(
            f"- {r['routing']}: {r['sessions_working']} of {r['sessions']} sessions work, {r['ok']} of "
            f"{r['requests']} requests ok, {r['http_404']} answered 404, sessions on {r['replicas_holding_sessions']} "
            f"replica(s)"
        )
    return lines


def timed(work: Callable[[], T]) -> tuple[T, float]:
    begun = time.monotonic()
    return work(), round(time.monotonic() - begun, 1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--postgres", help="a PostgreSQL DSN the bench may create schemas in (default: its own)")
    parser.add_argument("--chroma", help="a Chroma server's URL (default: its own `chroma run`)")
    parser.add_argument("--requests", type=int, default=1000, help="timed calls per phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent sessionless clients")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the four load phases")
    parser.add_argument("--megabytes", type=int, default=8, help="1 MB answers stored per load phase")
    parser.add_argument("--lease", type=float, help="the index workers' job lease in the kill phase (default 60 s)")
    parser.add_argument("--kill-kb", type=int, default=128, help="size of the text whose indexer is killed")
    parser.add_argument("--sessions", type=int, default=8, help="session clients per routing")
    parser.add_argument("--session-calls", type=int, default=15, help="calls per session client")
    parser.add_argument("--quick", action="store_true", help="1 round of 400 calls, 2 MB, lease 10 s")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.requests, args.megabytes = 1, 400, 2
        args.lease = args.lease or 10.0
        args.session_calls = 6
    return args


def main() -> int:
    args = parse_args()
    load = load_average()
    binary = nginx_binary()
    version = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False).stderr.strip()
    begun = time.monotonic()
    with ExitStack() as stack:
        dsn = args.postgres or stack.enter_context(throwaway_postgres())
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-replicas-")))
        chroma = args.chroma or stack.enter_context(chroma_server(scratch / "chroma"))
        run = Run(dsn, chroma, binary, scratch, f"bench-replicas-{int(time.time())}", args)
        # the short phases first: one that fails does so before the long ones ran
        routing, routing_seconds = timed(lambda: routing_phase(run))
        kill, kill_seconds = timed(lambda: kill_phase(run))
        phases = [load_phase(run, layout, turn) for turn, layout in schedule(args.rounds)]
    rows = [d.row for d in phases]
    summary = pooled(phases)
    print(
        f"\n{args.clients} concurrent {PROTOCOL} clients (sessionless) through nginx, round-robin, while the "
        f"{args.megabytes} MB stored just before are embedded; {os.cpu_count()} cores\n"
    )
    print("\n".join(table(rows) + summary_lines(summary, kill, routing)))
    report = {
        **stamp(invocation("bench.replicas"), load),
        "minutes": round((time.monotonic() - begun) / 60, 1),
        "clients": args.clients,
        "protocol": PROTOCOL,
        "balancer": f"{version}, round-robin, keepalive 32",
        "mix": [tool for tool, _ in mix("")],
        "megabytes_stored_per_phase": args.megabytes,
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "postgres": "own throw-away cluster on loopback" if not args.postgres else "given DSN",
        "chroma": "own chroma run on loopback" if not args.chroma else "given URL",
        "rows": rows,
        "pooled": summary,
        "ratios": ratios(summary),
        "kill": kill,
        "routing": routing,
        "phase_seconds": {"routing": routing_seconds, "kill": kill_seconds},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
