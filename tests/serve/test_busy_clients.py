"""Real clients start offprompt on a busy machine, as a user sets it up: the client's own command (or file) adds
a server, `offprompt init --client NAME --yes` puts offprompt in front of it, and the client's health check must
show offprompt connected on its first start (a fresh HOME: no cache, no memory) and on its second, with the
client's DEFAULT timeouts, while two CPU-bound loops keep both cores busy (a developer's machine during a build).

No login and no API key: `claude mcp list`, `gemini mcp list`, `qwen mcp list` and `opencode mcp list` only
start each server and check that it answers; fast-agent's `passthrough` model calls a tool by name. Gemini CLI
and qwen-code show servers only in a trusted folder: the test trusts the project the way their trust dialog
does, in `~/.gemini/trustedFolders.json` (`~/.qwen/trustedFolders.json`). opencode's servers are written in
its `opencode.json` by hand (its `mcp add` asks questions on a terminal).

These tests run as a step of their own after the suite (`.ci/run`): `OFFPROMPT_BUSY_CLIENTS=1 pytest -n 0 -m
busy_clients`; in the suite they are skipped (they would make every other test's machine busy too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support import PEERS, require_installed

pytestmark = [pytest.mark.busy_clients, pytest.mark.node]

COUNTER = Path(__file__).parents[1] / "servers" / "counter.py"
BIN = PEERS / ".bin"
FAST_AGENT = Path(
    os.environ.get("OFFPROMPT_TEST_FAST_AGENT") or Path(__file__).parents[2] / ".venv-fast-agent" / "bin" / "fast-agent"
)
#: Variables of the tester's own that would change what a client does (a key, a login, a cache of offprompt's).
_UNSET = ("ANTHROPIC_", "CLAUDE_", "GEMINI_", "GOOGLE_", "QWEN_", "OPENAI_", "OPENCODE_", "OFFPROMPT_", "XDG_")


@pytest.fixture
def busy() -> Iterator[None]:
    """Two CPU-bound loops, one per core, for the test's whole length."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for loop in loops:
        loop.kill()
        loop.wait()


@dataclass(frozen=True)
class Machine:
    """A fresh user: a home of its own (no cache, no memory), a project directory, and its environment."""

    home: Path
    project: Path
    env: dict[str, str]

    def run(self, *command: str, timeout: float = 300) -> str:
        """Run a client's command in the project; what it printed (it must succeed)."""
        done = subprocess.run(
            [*command], cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    def init(self, client: str) -> str:
        return self.run("offprompt", "init", "--client", client, "--yes")


@pytest.fixture
def machine(tmp_path: Path, busy: None) -> Machine:
    require_installed([BIN / "node"], "npm ci --prefix tests/peers")
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `offprompt` on PATH runs the code under test (a clone's .venv, or a worktree's tree): `init` writes this
    # command into the client's file, as it writes a user's `offprompt` found on PATH.
    package = Path(__import__("offprompt").__file__).parents[1]
    script = bin_dir / "offprompt"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={package} exec {sys.executable} -m offprompt "$@"\n')
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_UNSET)}
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{env.get('PATH', '')}",  # Node 22 from tests/peers first
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        CI="true",
        NO_COLOR="1",
    )
    return Machine(home, project, env)


def _line(listing: str, name: str) -> str:
    return next((line for line in listing.splitlines() if f"{name}:" in line or f" {name} " in line), listing)


def _two_starts(machine: Machine, command: list[str], connected: str) -> None:
    """The client's health check on its first start after init and on its second: offprompt connected both times."""
    for start in ("first", "second"):
        shown = _line(machine.run(*command), "offprompt")
        assert connected in shown, f"{start} start: {shown}"


def test_claude_code_shows_offprompt_connected_on_its_first_and_second_start(machine: Machine) -> None:
    require_installed([BIN / "claude"], "npm ci --prefix tests/peers")
    machine.run("claude", "mcp", "add", "counter", "--", sys.executable, str(COUNTER))  # the local scope
    said = machine.init("claude-code")
    assert "counter [local scope]" in said
    _two_starts(machine, ["claude", "mcp", "list"], "✔ Connected")


@pytest.mark.parametrize(("client", "cli", "folder"), [("gemini", "gemini", ".gemini"), ("qwen-code", "qwen", ".qwen")])
def test_gemini_and_qwen_show_offprompt_connected_on_their_first_and_second_start(
    machine: Machine, client: str, cli: str, folder: str
) -> None:
    require_installed([BIN / cli], "npm ci --prefix tests/peers")
    machine.run(cli, "mcp", "add", "--scope", "user", "counter", sys.executable, str(COUNTER))
    trusted = machine.home / folder / "trustedFolders.json"
    trusted.write_text(json.dumps({str(machine.project): "TRUST_FOLDER"}))
    machine.init(client)
    _two_starts(machine, [cli, "mcp", "list"], "- Connected")


def test_opencode_shows_offprompt_connected_on_its_first_and_second_start(machine: Machine) -> None:
    require_installed([BIN / "opencode"], "npm ci --prefix tests/peers")
    config = machine.home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"$schema": "https://opencode.ai/config.json", "mcp": {
            "counter": {"type": "local", "command": [sys.executable, str(COUNTER)], "enabled": True}
        }}, indent=2)
    )  # fmt: skip
    machine.init("opencode")
    _two_starts(machine, ["opencode", "mcp", "list"], "connected")


def test_fast_agent_calls_a_proxied_tool_on_its_first_start_after_init(machine: Machine) -> None:
    """fast-agent does not follow `tools/list_changed` in a one-shot run: its first list must hold the tool."""
    require_installed([FAST_AGENT], ".ci/run (a venv of its own with fast-agent-mcp)")
    (machine.project / "fastagent.config.yaml").write_text(
        "default_model: passthrough\n"
        "mcp:\n"
        "  servers:\n"
        "    counter:\n"
        f"      command: {json.dumps(sys.executable)}\n"
        f"      args: [{json.dumps(str(COUNTER))}]\n"
    )
    machine.init("fast-agent")
    call = '***CALL_TOOL offprompt__counter__echo {"text": "hello from the first start"}'
    command = [str(FAST_AGENT), "go", "--servers", "offprompt", "--model", "passthrough", "--quiet", "--message"]
    said = machine.run(*command, call)
    assert "hello from the first start" in said
    assert "not available" not in said.lower()
