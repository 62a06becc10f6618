"""The real MCP servers the bench talks to, as commands, and an offprompt config in front of them."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.context import PEERS_BIN

VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Peer:
    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def available(self) -> bool:
        return Path(self.command[0]).exists()

    def config(self, off_prompt: str = "auto") -> dict[str, Any]:
        entry: dict[str, Any] = {"command": self.command[0], "args": self.command[1:], "off_prompt": off_prompt}
        if self.env:
            entry["env"] = self.env
        return entry


def _node_env() -> dict[str, str]:
    # tests/peers ships Node 22 in node_modules/.bin; the servers' `#!/usr/bin/env node` must find it first.
    return {"PATH": f"{PEERS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def hello() -> Peer:
    return Peer("hello", [sys.executable, "-m", "bench.servers.hello"], {"PYTHONPATH": _pythonpath()})


def time_server() -> Peer:
    return Peer("time", [str(VENV_BIN / "mcp-server-time"), "--local-timezone", "UTC"])


def git() -> Peer:
    return Peer("git", [str(VENV_BIN / "mcp-server-git")])


def fetch() -> Peer:
    return Peer("fetch", [str(VENV_BIN / "mcp-server-fetch"), "--allow-private-ips"])


def filesystem(*roots: Path) -> Peer:
    return Peer("fs", [str(PEERS_BIN / "mcp-server-filesystem"), *map(str, roots)], _node_env())


def everything() -> Peer:
    return Peer("everything", [str(PEERS_BIN / "mcp-server-everything"), "stdio"], _node_env())


def _pythonpath() -> str:
    from bench.context import REPO

    return os.pathsep.join([str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def offprompt_supports_config() -> bool:
    import subprocess

    help_text = subprocess.run(offprompt_command("serve", "--help"), capture_output=True, text=True).stdout
    return "--config" in help_text


def offprompt_command(*args: str) -> list[str]:
    script = VENV_BIN / "offprompt"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "offprompt", *args]


def write_config(path: Path, peers: dict[str, dict[str, Any]], settings: dict[str, Any]) -> Path:
    """An offprompt config: the Claude Desktop `mcpServers` block plus offprompt's own settings."""
    path.write_text(json.dumps({"offprompt": settings, "mcpServers": peers}, indent=1), encoding="utf-8")
    return path


def public_name(server: str, tool: str) -> str:
    try:
        from offprompt.proxy.routes import public_name as name
    except ImportError:
        return f"{server}__{tool}"
    return name(server, tool)


@contextmanager
def serving_http(
    command: list[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    ready: str = r"offprompt: serving MCP at (\S+)",
) -> Iterator[tuple[str, int]]:
    """Run `offprompt serve --transport http …` (or another HTTP server whose stderr line `ready` names its URL)
    until the block ends; yields the URL it serves at and its pid."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    urls: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def drain() -> None:  # keep reading, so a chatty server never blocks on a full pipe
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if found := re.search(ready, line):
                urls.put(found[1])
        urls.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        try:
            url = urls.get(timeout=timeout)
        except queue.Empty:
            url = None
        if url is None:
            raise RuntimeError(f"{' '.join(command[-3:])} did not start:\n" + "".join(log[-20:]))
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
