"""Throughput of 1 and then 3 `offprompt serve` replicas on one shared memory, behind a local nginx (issue #15).

    python -m bench.replicas [--postgres DSN] [--requests 1500] [--clients 8] [--rounds 2] [--out FILE]

Each phase starts N replicas (`serve --transport http`, each with a data directory of its own, all on one
memory in PostgreSQL) and one nginx in front of them (Debian's package, installed with apt-get if `nginx` is
missing; its own config, pid file and logs in a scratch directory; round-robin upstream with keep-alive). The
same load then goes through nginx: `--clients` concurrent 2026-07-28 clients, sessionless (one self-contained
POST per call, no `Mcp-Session-Id`, so round-robin is right for them), cycling memory_list / memory_query
(lexical) / memory_load on one namespace stored once, through the balancer, before the first phase. Each
phase warms every replica first (their first read of the text copies it from PostgreSQL), then times
`--requests` calls. The clients are raw httpx (no SDK models) so they take little of the CPU the replicas
need; they, nginx and PostgreSQL all share the machine with the replicas. "CPU ms/req" is the replicas' own
CPU time per request; "cores" how many cores the replicas kept busy ("ours") and all processes of the machine
(other users' too) during the timed calls: with "all" at the core count the machine is the limit, and more
replicas can only take a larger share of it from the other processes. Phases
alternate (1, 3, 1, 3 with `--rounds 2`) so the shared machine's noise falls on both sides.

Without `--postgres` the bench starts a throw-away PostgreSQL cluster on a free loopback port the way
`.ci/run` does (initdb/pg_ctl, as the postgres user when run as root). It prints one table and writes
`bench/results/replicas.json` with the ratio 3 replicas / 1 replica of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.peers import serving_http
from bench.report import invocation, load_average, stamp
from bench.timing import percentile

RESULTS = Path(__file__).parent / "results" / "replicas.json"
HELLO = Path(__file__).parent / "servers" / "hello.py"
TOKEN = "bench-replicas-token-0123456789abcdef"
PROTOCOL = "2026-07-28"
MARKER = "quartzlily"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- PostgreSQL and nginx ------------------------------------------------------------------------------------------


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not found and shutil.which("pg_ctl") is None:
        _apt_install("postgresql")
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    return found[-1] if found else Path(str(shutil.which("pg_ctl"))).parent


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL cluster in a scratch directory on a free loopback port (PostgreSQL refuses to run as root,
    so as root it runs as the postgres user); stopped and removed afterwards."""
    bindir = _pg_bin()
    directory = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    data = directory / "data"
    initdb = [*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
    subprocess.run(initdb, check=True, stdout=subprocess.DEVNULL)
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    start = [*pg_ctl, "-l", str(directory / "log"), "-w", "-o", options, "start"]
    subprocess.run(start, check=True, stdout=subprocess.DEVNULL)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], check=False, stdout=subprocess.DEVNULL)
        shutil.rmtree(directory, ignore_errors=True)


def _apt_install(package: str) -> None:
    print(f"installing {package} from Debian's packages (apt-get) ...", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True, env=env, stdout=subprocess.DEVNULL)


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found is None:
        _apt_install("nginx")
        found = shutil.which("nginx", path="/usr/sbin:/sbin:" + os.environ.get("PATH", ""))
    if found is None:
        raise SystemExit("nginx is still missing after `apt-get install -y nginx`")
    return found


NGINX_CONF = """\
{user}worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream offprompt {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://offprompt;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;  # offprompt answers only to local names (the default would be "offprompt")
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


@contextmanager
def nginx(binary: str, upstreams: list[str], directory: Path) -> Iterator[str]:
    """nginx in the foreground (`daemon off`) with its own config and logs in `directory`, round-robin over
    `upstreams` (host:port); yields its URL, stopped (SIGQUIT, then killed) afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = directory / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user="user root;\n" if os.geteuid() == 0 else "",  # its workers read and write this scratch dir
            dir=directory,
            port=port,
            servers="\n".join(f"        server {u};" for u in upstreams),
        )
    )
    command = [binary, "-p", str(directory), "-c", str(conf), "-e", str(directory / "error.log"), "-g", "daemon off;"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode() if process.stderr else ""
                raise SystemExit(f"nginx exited {process.returncode}: {err}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("nginx did not listen within 30 s") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.send_signal(3)  # SIGQUIT: graceful shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- replicas ------------------------------------------------------------------------------------------------------


@contextmanager
def replica(config: Path, data_dir: Path) -> Iterator[tuple[str, int]]:
    """`offprompt serve --transport http --host 127.0.0.1 --port 0`; yields its host:port and pid."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFPROMPT_")}
    env |= {"HF_HUB_OFFLINE": "1", "OFFPROMPT_AUTH_TOKEN": TOKEN}
    offprompt = Path(sys.executable).with_name("offprompt")
    command = [str(offprompt), "serve", "--config", str(config), "--data-dir", str(data_dir)]
    command += ["--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    with serving_http(command, env, timeout=180) as (url, pid):
        yield urlsplit(url).netloc, pid


# -- the 2026-07-28 client -----------------------------------------------------------------------------------------


class Caller:
    """Self-contained 2026-07-28 `tools/call` POSTs (no initialize, no session), raw JSON over one httpx pool."""

    def __init__(self, url: str, clients: int) -> None:
        self.url = url
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        self.http = httpx.AsyncClient(timeout=120, limits=limits, headers={"Authorization": f"Bearer {TOKEN}"})
        self.ids = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(ok, result): ok is False on an HTTP error, a JSON-RPC error or an isError result."""
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientInfo": {"name": "bench.replicas", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
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
        if response.status_code != 200:
            return False, {"error": f"HTTP {response.status_code}: {response.text[:200]}"}
        text = response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            text = data[-1] if data else "{}"
        message = json.loads(text)
        result = message.get("result")
        if not isinstance(result, dict):
            return False, {"error": message.get("error")}
        return not result.get("isError", False), result

    async def aclose(self) -> None:
        await self.http.aclose()


def stored_text() -> str:
    lines = [f"2026-05-20 10:{n % 60:02d}:00 INFO worker-{n % 4} request {n} served in {n % 17} ms" for n in range(400)]
    return "\n".join([*lines, f"2026-05-20 11:00:00 ERROR the {MARKER} checksum failed"])


async def store_once(url: str) -> str:
    """Store one ~25 KB text through the balancer and wait until it is queryable; its namespace."""
    caller = Caller(url, 1)
    try:
        ok, result = await caller.call("hello__echo", {"text": stored_text()})
        meta = result.get("_meta", {}).get("offprompt", {})
        if not ok or "artifact_namespace" not in meta:
            raise SystemExit(f"the store through nginx failed: {result}")
        namespace = str(meta["artifact_namespace"])
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


def query_args(namespace: str) -> dict[str, Any]:
    return {"query": f"{MARKER} checksum", "artifact_namespace": namespace, "mode": "lexical"}


def mix(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("memory_list", {"limit": 20}),
        ("memory_query", query_args(namespace)),
        ("memory_load", {"artifact_namespace": namespace, "max_tokens": 500}),
    ]


async def drive(url: str, namespace: str, requests: int, clients: int) -> dict[str, Any]:
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
    return {
        "requests": len(every),
        "seconds": round(seconds, 3),
        "req_per_s": round(len(every) / seconds, 1),
        "p50_ms": round(percentile(every, 50) * 1000, 1),
        "p95_ms": round(percentile(every, 95) * 1000, 1),
        "errors": len(errors),
        "first_errors": errors[:3],
        "per_tool_p50_ms": {tool: round(percentile(s, 50) * 1000, 1) for tool, s in latencies.items() if s},
    }


# -- the run -------------------------------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return float(sum(values) - idle), float(sum(values))


def phase(
    replicas: int, config: Path, scratch: Path, binary: str, namespace: str | None, args: argparse.Namespace
) -> tuple[str, dict[str, Any]]:
    with ExitStack() as stack:
        served = [stack.enter_context(replica(config, scratch / f"data{n}")) for n in range(replicas)]
        url = stack.enter_context(nginx(binary, [address for address, _ in served], scratch / "nginx"))
        if namespace is None:
            namespace = asyncio.run(store_once(url))
        # warm-up: every replica reads the text once (its read-through copy) and loads its lazy parts
        asyncio.run(drive(url, namespace, 6 * replicas * len(mix(namespace)), args.clients))
        load = os.getloadavg()[0]
        pids = [pid for _, pid in served]
        cpu, client, (busy, total) = cpu_seconds(pids), time.process_time(), machine_busy()
        row = asyncio.run(drive(url, namespace, args.requests, args.clients))
        cpu, client = cpu_seconds(pids) - cpu, time.process_time() - client
        busy, total = machine_busy()[0] - busy, machine_busy()[1] - total
        cores = os.cpu_count() or 1
        row = {
            "replicas": replicas,
            **row,
            "replica_cpu_ms_per_request": round(cpu * 1000 / row["requests"], 2),
            "replicas_cores_busy": round(cpu / row["seconds"], 2),
            "client_cpu_ms_per_request": round(client * 1000 / row["requests"], 2),
            "machine_cores_busy": round(busy / total * cores, 2),
            "load_1min_before": round(load, 2),
        }
    return namespace, row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="a PostgreSQL DSN the bench may create a schema in (default: its own)")
    parser.add_argument("--requests", type=int, default=1500, help="timed calls per phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (1 replica, 3 replicas)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load = load_average()
    binary = nginx_binary()
    version = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False).stderr.strip()
    with ExitStack() as stack:
        dsn = args.postgres or stack.enter_context(throwaway_postgres())
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-replicas-")))
        config = scratch / "offprompt.json"
        hello = {"command": sys.executable, "args": [str(HELLO)], "off_prompt": "always"}
        name = f"bench-replicas-{int(time.time())}"
        config.write_text(
            json.dumps({"offprompt": {"memory_name": name, "postgres": dsn}, "mcpServers": {"hello": hello}})
        )
        rows = []
        namespace = None
        for turn in range(args.rounds):  # 1, 3, 1, 3 ...: the shared machine's noise falls on both sides
            for replicas in (1, 3):
                directory = scratch / f"round{turn}-{replicas}"
                namespace, row = phase(replicas, config, directory, binary, namespace, args)
                rows.append({"round": turn + 1, **row})

    def throughput(replicas: int) -> float:
        mine = [r for r in rows if r["replicas"] == replicas]
        return sum(r["requests"] for r in mine) / sum(r["seconds"] for r in mine)

    ratio = round(throughput(3) / throughput(1), 2)
    per_round = [round(b["req_per_s"] / a["req_per_s"], 2) for a, b in zip(rows[::2], rows[1::2], strict=True)]
    print(
        f"\n{args.clients} concurrent {PROTOCOL} clients (sessionless) through nginx, round-robin; "
        f"{os.cpu_count()} cores\n"
    )
    print(
        "| round | replicas | requests | seconds | req/s | p50 ms | p95 ms | errors | CPU ms/req | cores: ours, all |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['round']} | {row['replicas']} | {row['requests']} | {row['seconds']} | {row['req_per_s']} "
            f"| {row['p50_ms']} | {row['p95_ms']} | {row['errors']} | {row['replica_cpu_ms_per_request']} "
            f"| {row['replicas_cores_busy']}, {row['machine_cores_busy']} |"
        )
    print(f"\nthroughput 3 replicas / 1 replica: {ratio}x (per round: {', '.join(f'{r}x' for r in per_round)})")
    report = {
        **stamp(invocation("bench.replicas"), load),
        "clients": args.clients,
        "protocol": PROTOCOL,
        "balancer": f"{version}, round-robin, keepalive 32",
        "mix": [tool for tool, _ in mix("")],
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "postgres": "own throw-away cluster on loopback" if not args.postgres else "given DSN",
        "rows": rows,
        "ratio_3_over_1": ratio,
        "ratio_per_round": per_round,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
