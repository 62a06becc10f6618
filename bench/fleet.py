"""The processes a bench of several offprompt servers runs: PostgreSQL, a Chroma server, nginx, `offprompt serve`
replicas and `offprompt index` workers, each in a scratch directory of its own; and what /proc says of them
(CPU per thread and niceness, resident memory, whether onnxruntime is loaded)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from bench.peers import serving_http

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- PostgreSQL, Chroma and nginx ----------------------------------------------------------------------------------


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


def _stop(process: subprocess.Popen[Any], how: int = signal.SIGTERM) -> None:
    process.send_signal(how)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_listening(port: int, process: subprocess.Popen[Any], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited {process.returncode} before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} did not listen within {timeout:.0f} s") from None
            time.sleep(0.05)


@contextmanager
def chroma_server(directory: Path) -> Iterator[str]:
    """`chroma run` (shipped with chromadb, beside this interpreter) on a free loopback port; yields its URL."""
    port = free_port()
    command = [str(Path(sys.executable).with_name("chroma")), "run", "--path", str(directory / "data")]
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "log", "wb") as log:
        process = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log)
    try:
        _wait_listening(port, process, "chroma run")
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)


def _collections(chroma: str) -> str:
    return f"{chroma}/api/v2/tenants/default_tenant/databases/default_database/collections"


def vectors_in(chroma: str, memory_name: str) -> int:
    """How many vectors the memory's collection holds (0 before its first one)."""
    from offprompt.memory.storage.dense import collection_name

    found = httpx.get(f"{_collections(chroma)}/{collection_name(memory_name)}", timeout=30)
    if found.status_code == 404:
        return 0
    found.raise_for_status()
    count = httpx.get(f"{_collections(chroma)}/{found.json()['id']}/count", timeout=30)
    count.raise_for_status()
    return int(count.json())


def drop_memory(dsn: str, chroma: str, memory_name: str) -> None:
    """The memory's schema and its Chroma collection, gone: every phase starts on an empty queue."""
    import psycopg

    from offprompt.memory.storage.dense import collection_name
    from offprompt.memory.storage.pg import schema_name

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema_name(memory_name)}" CASCADE')
    httpx.delete(f"{_collections(chroma)}/{collection_name(memory_name)}", timeout=30)


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
    client_max_body_size 8m;  # the 1 MB stores' bodies (offprompt's own limit is 4 MiB)
    upstream offprompt {{
        {balance}
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
            add_header X-Upstream $upstream_addr always;  # which replica answered: the routing phase counts them
        }}
    }}
}}
"""


@contextmanager
def nginx(binary: str, upstreams: list[str], directory: Path, balance: str = "") -> Iterator[str]:
    """nginx in the foreground (`daemon off`) with its own config and logs in `directory`, over `upstreams`
    (host:port) by `balance` (a directive such as `ip_hash;`; none: round-robin); yields its URL."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = directory / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user="user root;\n" if os.geteuid() == 0 else "",  # its workers read and write this scratch dir
            dir=directory,
            port=port,
            balance=balance,
            servers="\n".join(f"        server {u};" for u in upstreams),
        )
    )
    command = [binary, "-p", str(directory), "-c", str(conf), "-e", str(directory / "error.log"), "-g", "daemon off;"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, process, "nginx")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(process, signal.SIGQUIT)  # graceful


# -- offprompt's processes -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    """A started offprompt process: its pid, and the host:port it serves at (None: an index worker)."""

    pid: int
    address: str | None = None


def _offprompt() -> list[str]:
    # `-m`, not the venv's `offprompt` script: that script is whatever tree installed it last, this one is
    # the tree on PYTHONPATH (the one under test)
    return [sys.executable, "-m", "offprompt"]


@contextmanager
def replica(config: Path, data_dir: Path, env: Mapping[str, str]) -> Iterator[Proc]:
    """`offprompt serve --transport http --host 127.0.0.1 --port 0` until the block ends."""
    command = [*_offprompt(), "serve", "--config", str(config), "--data-dir", str(data_dir)]
    command += ["--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    with serving_http(command, env, timeout=180) as (url, pid):
        yield Proc(pid, urlsplit(url).netloc)


@contextmanager
def index_worker(config: Path, env: Mapping[str, str]) -> Iterator[Proc]:
    """`offprompt index --config FILE` until the block ends, once it says it is indexing."""
    command = [*_offprompt(), "index", "--config", str(config)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    ready = threading.Event()
    log: list[str] = []

    def drain() -> None:  # keep reading, so a chatty worker never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if "indexing the shared memory" in line:
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not ready.wait(180) or process.poll() is not None:
            raise RuntimeError("offprompt index did not start:\n" + "".join(log[-20:]))
        yield Proc(process.pid)
    finally:
        _stop(process)


def enter_all(stack: ExitStack, managers: Sequence[AbstractContextManager[T]]) -> list[T]:
    """Enter the context managers at once (each waits for its own process to say it is ready) and leave them
    with `stack`; if one fails, its error is raised once the others are on the stack, which then leaves them."""
    with ThreadPoolExecutor(max_workers=len(managers)) as pool:
        futures = [pool.submit(manager.__enter__) for manager in managers]
    failure: BaseException | None = None
    entered = []
    for manager, future in zip(managers, futures, strict=True):
        if (error := future.exception()) is not None:
            failure = failure or error
            continue
        stack.push(manager.__exit__)
        entered.append(future.result())
    if failure is not None:
        raise failure
    return entered


# -- /proc: CPU per thread, resident memory --------------------------------------------------------------------------


def _stat_fields(path: Path) -> list[str]:
    return path.read_text().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of the process so far, its ended threads' included."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def thread_times(pid: int) -> dict[int, tuple[int, float]]:
    """Each live thread of the process: (niceness, CPU seconds so far)."""
    found = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            fields = _stat_fields(stat)
        except OSError:
            continue  # the thread ended meanwhile
        found[int(stat.parent.name)] = (int(fields[16]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return found


class CpuWatch:
    """The CPU processes spend while the block runs, split into their threads at the process's niceness
    (serving) and the niced ones (offprompt's indexing, the model's thread pool). Threads are sampled every
    `period` s, so one that ends midway (the thread that loads the model) keeps the kind it was."""

    def __init__(self, pids: list[int], period: float = 0.25) -> None:
        self.pids = pids
        self.period = period
        self._first: dict[int, dict[int, tuple[int, float]]] = {}
        self._last: dict[int, dict[int, tuple[int, float]]] = {}
        self._totals: dict[int, float] = {}
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def __enter__(self) -> CpuWatch:
        for pid in self.pids:
            self._first[pid] = thread_times(pid)
            self._last[pid] = dict(self._first[pid])
            self._totals[pid] = process_cpu(pid)
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sampler.join()
        self._sample()
        self._totals = {pid: process_cpu(pid) - before for pid, before in self._totals.items()}

    def _sample(self) -> None:
        for pid in self.pids:
            self._last[pid].update(thread_times(pid))

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.period):
            self._sample()

    def total(self, pid: int) -> float:
        return self._totals[pid]

    def background(self, pid: int) -> float:
        """CPU seconds of the process's niced threads over the block."""
        base = self._last[pid][pid][0]  # the main thread's niceness is the process's own
        first = self._first[pid]
        return sum(cpu - first.get(tid, (0, 0.0))[1] for tid, (nice, cpu) in self._last[pid].items() if nice > base)

    def foreground(self, pid: int) -> float:
        return self.total(pid) - self.background(pid)


def status_mib(pid: int, key: str) -> float:
    """A size from /proc/PID/status (VmRSS, VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return round(int(line.split()[1]) * 1024 / MIB, 1)
    return 0.0


def maps_onnxruntime(pid: int) -> bool:
    """Whether the process has loaded onnxruntime, which offprompt imports only to load the embedding model."""
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return float(sum(values) - idle), float(sum(values))
