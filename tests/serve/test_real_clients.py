"""offprompt as real clients nobody here wrote see it: Claude Code's CLI (`claude mcp add`, `claude mcp list`)
and fast-agent (its `passthrough` model needs no LLM: a message `***CALL_TOOL name {json}` calls a tool, and a
sampling request is answered with its own text).

Claude Code gives `tools/list` 5 s; before offprompt answered lists from each server's last list, a downstream
that takes 8 s to start (every `npx -y` server's first run) made it show "tools fetch failed". No API key and no
login: `claude mcp list` only starts each server and checks that it initializes and lists its tools. Claude Code
keeps its config in `$HOME/.claude.json`, here a home of the test's own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..serving import offprompt_serving
from ..support import PEERS, REPO, node_peer, offprompt_command, require_installed

pytestmark = pytest.mark.node

CLAUDE = PEERS / ".bin" / "claude"
#: fast-agent needs Python >= 3.12: .ci/run puts it in a venv of its own made with pyenv's 3.12 or 3.13.
FAST_AGENT = Path(os.environ.get("OFFPROMPT_TEST_FAST_AGENT") or REPO / ".venv-fast-agent" / "bin" / "fast-agent")
NAMESPACE = re.compile(r'artifact_namespace "([a-z0-9]+)"')
COUNTER = REPO / "tests" / "servers" / "counter.py"
TOKEN = "a-token-for-the-claude-code-test-0123456789"


def claude(home: Path, *args: str) -> str:
    """Run Claude Code's CLI in `home`'s project directory; what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(HOME=str(home), DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", CI="true")
    done = subprocess.run(
        [str(CLAUDE), *args], cwd=home / "project", env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def line_of(listing: str, name: str) -> str:
    return next(line for line in listing.splitlines() if line.startswith(f"{name}:"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    require_installed([CLAUDE], "npm ci --prefix tests/peers")
    (tmp_path / "home" / "project").mkdir(parents=True)
    return tmp_path / "home"


def test_claude_code_lists_offprompt_connected_with_a_server_that_starts_slowly(home: Path, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    slow = {"command": "bash", "args": ["-c", f"sleep 8; exec {sys.executable} {COUNTER}"]}
    servers = {
        "fs": node_peer("@modelcontextprotocol/server-filesystem/dist/index.js", str(files)),
        "everything": node_peer("@modelcontextprotocol/server-everything/dist/index.js", "stdio"),
        "slow": slow,
    }
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    serve = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    cache = ["-e", f"OFFPROMPT_CACHE_DIR={tmp_path / 'cache'}"]
    claude(home, "mcp", "add", "offprompt", *cache, "--", *serve)
    claude(home, "mcp", "list")  # the first start: the slow server's list is not cached yet
    listing = claude(home, "mcp", "list")  # the second start, as a user's every later one
    shown = line_of(listing, "offprompt")
    assert "✔ Connected" in shown
    assert "failed" not in shown.lower()
    got = claude(home, "mcp", "get", "offprompt")
    assert "Status: ✔ Connected" in got
    assert "Scope: Local config" in got


def test_claude_code_connects_over_http_with_a_header_and_shows_why_a_wrong_token_fails(
    home: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "OFFPROMPT_AUTH_TOKEN": TOKEN}
    with offprompt_serving(tmp_path / "data", "--transport", "http", env=env) as served:
        claude(
            home, "mcp", "add", "--transport", "http", "good", served.url, "--header", f"Authorization: Bearer {TOKEN}"
        )
        claude(home, "mcp", "add", "--transport", "http", "wrong", served.url, "--header", "Authorization: Bearer x")
        listing = claude(home, "mcp", "list")
    assert "✔ Connected" in line_of(listing, "good")
    wrong = line_of(listing, "wrong")
    assert "HTTP 401" in wrong
    assert "the bearer token is not valid" in wrong  # our JSON error_description, as Claude Code shows it


def fast_agent(tmp_path: Path, message: str) -> str:
    """One fast-agent run with offprompt (and counter.py behind it) as its one server; what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(HOME=str(tmp_path / "home"), OFFPROMPT_CACHE_DIR=str(tmp_path / "cache"))
    config = tmp_path / "fastagent.config.yaml"
    command = [str(FAST_AGENT), "go", "-c", str(config), "--servers", "offprompt", "--model", "passthrough"]
    done = subprocess.run(
        [*command, "--quiet", "--message", message],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_fast_agent_calls_a_proxied_tool_reads_the_reference_back_and_samples_through_offprompt(
    tmp_path: Path,
) -> None:
    require_installed(
        [FAST_AGENT], "python3.12 -m venv .venv-fast-agent && .venv-fast-agent/bin/pip install fast-agent-mcp"
    )
    (tmp_path / "home").mkdir()
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [str(COUNTER)]}}}))
    serve = offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data"))
    (tmp_path / "fastagent.config.yaml").write_text(
        "default_model: passthrough\n"
        "mcp:\n  servers:\n    offprompt:\n"
        f"      command: {json.dumps(serve[0])}\n"
        f"      args: {json.dumps(serve[1:])}\n"
        "      sampling:\n        model: passthrough\n"
    )
    stored = fast_agent(tmp_path, '***CALL_TOOL offprompt__counter__lines {"count": 3000}')
    assert 'Output of "counter.lines" was stored in memory' in stored
    found = NAMESPACE.search(stored)
    assert found is not None, stored
    load = {"artifact_namespace": found[1], "line": 18, "max_tokens": 40}
    loaded = fast_agent(tmp_path, f"***CALL_TOOL offprompt__memory_load {json.dumps(load)}")
    assert "2026-11-30T00:00:17 INFO worker-3 handled request 17" in loaded
    sampled = fast_agent(tmp_path, '***CALL_TOOL offprompt__counter__ask {"question": "what is 2+2?"}')
    assert "the model said: what is 2+2?" in sampled  # the downstream's sampling request reached fast-agent
