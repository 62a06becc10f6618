"""The three systems, each an MCP server over stdio in front of the same outputs, and where their installs live.

    .venv/bin/python -m bench.answer_peers.systems install   # the peers, pinned, into bench/.peers (git-ignored)

offprompt and sift-gateway proxy `@modelcontextprotocol/server-filesystem` (tests/peers' pin) serving the outputs'
folder; context-mode is no proxy: a model runs commands through it (`ctx_batch_execute`), so it `cat`s the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.context import PEERS_BIN, REPO
from bench.peers import filesystem, offprompt_command

PEERS = REPO / "bench" / ".peers"
SIFT_BIN = PEERS / "sift" / "bin"
CONTEXT_MODE = PEERS / "npm" / "node_modules" / "context-mode"
#: sift-gateway 0.4.4 declares `fastmcp>=2.0.0` but imports `fastmcp.tools.tool`, which fastmcp 4 dropped: the
#: versions of its own lock file (uv.lock at its 0.4.x tag) are pinned beside it.
SIFT_PINS = ("sift-gateway==0.4.4", "fastmcp==2.14.5", "mcp==1.26.0")
CONTEXT_MODE_PIN = "context-mode@1.0.169"
NAMES = ("offprompt", "sift-gateway", "context-mode")


@dataclass(frozen=True)
class Served:
    """A running system: its session and what its tools are called."""

    name: str
    session: ClientSession
    docs: Path


def _node_path() -> str:
    # tests/peers ships Node 22 (context-mode needs >= 22.5; the filesystem server's shebang finds it first).
    return f"{PEERS_BIN}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin"


def _fs_entry(docs: Path) -> dict[str, object]:
    peer = filesystem(docs)
    return {"command": peer.command[0], "args": peer.command[1:], "env": {"PATH": _node_path()}}


def _offprompt(docs: Path, work: Path) -> StdioServerParameters:
    config = work / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"fs": _fs_entry(docs)}}), encoding="utf-8")
    command, *args = offprompt_command("serve", "--config", str(config), "--data-dir", str(work / "offprompt"))
    return StdioServerParameters(command=command, args=args, env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=work)


def _sift(docs: Path, work: Path) -> StdioServerParameters:
    state = work / "sift" / "state"
    state.mkdir(parents=True)
    (state / "config.json").write_text(json.dumps({"mcpServers": {"fs": _fs_entry(docs)}}), encoding="utf-8")
    env = {"PATH": _node_path(), "HOME": str(work)}
    args = ["--data-dir", str(work / "sift")]
    return StdioServerParameters(command=str(SIFT_BIN / "sift-gateway"), args=args, env=env, cwd=work)


def _context_mode(docs: Path, work: Path) -> StdioServerParameters:
    # Its own HOME and working folder: it writes routing instructions and its knowledge base there.
    env = {"PATH": _node_path(), "HOME": str(work)}
    command = [str(PEERS_BIN / "node"), str(CONTEXT_MODE / "cli.bundle.mjs")]
    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=work)


PARAMS = {"offprompt": _offprompt, "sift-gateway": _sift, "context-mode": _context_mode}


def available(name: str) -> bool:
    installed = {"sift-gateway": SIFT_BIN / "sift-gateway", "context-mode": CONTEXT_MODE / "cli.bundle.mjs"}
    return name not in installed or installed[name].exists()


@asynccontextmanager
async def serve(name: str, docs: Path, work: Path) -> AsyncIterator[Served]:
    work.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before the server starts
    params = PARAMS[name](docs, work)
    async with AsyncExitStack() as stack:
        # the servers' logs, kept out of the bench's output; closed by the stack
        errlog = stack.enter_context(open(work / "stderr.log", "w"))  # noqa: ASYNC230, SIM115
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield Served(name, session, docs)


def install() -> None:
    """sift-gateway into a venv of its own, context-mode with npm, both at exact versions."""
    PEERS.mkdir(exist_ok=True)
    if not (SIFT_BIN / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS / "sift")], check=True)
    subprocess.run([str(SIFT_BIN / "python"), "-m", "pip", "install", "-q", *SIFT_PINS], check=True)
    npm = PEERS / "npm"
    npm.mkdir(exist_ok=True)
    if not (npm / "package.json").exists():
        (npm / "package.json").write_text('{"name": "offprompt-bench-peers", "private": true}\n', encoding="utf-8")
    env = {**os.environ, "PATH": _node_path()}
    command = ["npm", "install", "--no-audit", "--no-fund", "--save-exact", CONTEXT_MODE_PIN]
    subprocess.run(command, cwd=npm, env=env, check=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        raise SystemExit(__doc__)
    install()
