"""`offprompt init` for the clients beyond the JSON `mcpServers` ones: Gemini CLI, qwen-code, opencode, Codex CLI
(TOML) and fast-agent (YAML), each on a file of the shape its documentation shows (written here by hand, after
google-gemini/gemini-cli docs/tools/mcp-server.md, opencode.ai/docs/mcp-servers, openai/codex docs/config.md and
fast-agent.ai's configuration page): the servers carried over in offprompt's words, the client's comments kept,
an exact `--undo`, entry by entry when the client rewrote its file since; and a client moved off the config every
client once shared."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from offprompt.config import load_config
from offprompt.config.documents import parse_document

from .run import run

GEMINI = """{
  "theme": "GitHub",
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "env": { "DATABASE_URL": "$DB_CONNECTION_STRING", "API_KEY": "${EXTERNAL_API_KEY}" },
      "timeout": 15000,
      "trust": true
    },
    "httpServer": {
      "httpUrl": "http://localhost:3000/mcp",
      "headers": { "Authorization": "Bearer ghp_s3cret" }
    },
    "sseServer": { "url": "http://localhost:8080/sse" }
  }
}
"""
GEMINI_MOVED = {
    "pythonTools": {
        "command": "python",
        "args": ["-m", "my_mcp_server", "--port", "8080"],
        "env": {"DATABASE_URL": "${DB_CONNECTION_STRING}", "API_KEY": "${EXTERNAL_API_KEY}"},
        "timeout_seconds": 15.0,
    },
    "httpServer": {"httpUrl": "http://localhost:3000/mcp", "headers": {"Authorization": "Bearer ghp_s3cret"}},
    "sseServer": {"url": "http://localhost:8080/sse"},
}
OPENCODE = """{
  "$schema": "https://opencode.ai/config.json",
  // the model is chosen per project
  "mcp": {
    "my-local": {
      "type": "local",
      "command": ["bun", "x", "my-mcp-command"],
      "enabled": true,
      "environment": { "MY_ENV_VAR": "{env:MY_TOKEN}" }
    },
    "my-remote": {
      "type": "remote",
      "url": "https://my-mcp-server.com/mcp",
      "headers": { "Authorization": "Bearer {env:MY_API_KEY}" }
    },
    "from-file": { "type": "local", "command": ["x-mcp"], "environment": { "KEY": "{file:~/.secrets/k}" } }
  }
}
"""
OPENCODE_MOVED = {
    "my-local": {"command": "bun", "args": ["x", "my-mcp-command"], "env": {"MY_ENV_VAR": "${MY_TOKEN}"}},
    "my-remote": {"url": "https://my-mcp-server.com/mcp", "headers": {"Authorization": "Bearer ${MY_API_KEY}"}},
}
CODEX = """model = "o4-mini"  # the default model

# Local documentation server
[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server"]
env = { "API_KEY" = "value" }
env_vars = ["HOME_TOKEN"]
startup_timeout_sec = 20
tool_timeout_sec = 60

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }

[profiles.fast]
model = "gpt-5"  # for quick questions
"""
CODEX_MOVED = {
    "docs": {
        "command": "npx",
        "args": ["-y", "mcp-server"],
        "env": {"HOME_TOKEN": "${HOME_TOKEN:-}", "API_KEY": "value"},
        "timeout_seconds": 60,
    },
    "figma": {
        "url": "https://mcp.figma.com/mcp",
        "headers": {"X-Figma-Region": "us-east-1", "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}"},
    },
}
FAST_AGENT = """default_model: passthrough  # no LLM needed

# the servers the agents use
mcp:
  servers:
    fetch:
      command: "uvx"
      args: ["mcp-server-fetch"]
    github:
      transport: http
      url: "https://api.githubcopilot.com/mcp/"
      headers:
        Authorization: "Bearer ${GITHUB_TOKEN}"
    db:
      command: "db-mcp"
      env:
        DB_URL: "${DB_URL:postgres://localhost/app}"  # a default after the colon
      sampling:
        model: passthrough
"""
FAST_AGENT_MOVED = {
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
    "github": {
        "url": "https://api.githubcopilot.com/mcp/",
        "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
        "transport": "streamable_http",
    },
    "db": {"command": "db-mcp", "env": {"DB_URL": "${DB_URL:-postgres://localhost/app}"}},
}


@dataclass(frozen=True)
class Case:
    text: str
    where: str  # under the test's home, or "project/…"
    syntax: Any
    block: tuple[str, ...]
    moved: dict[str, Any]
    comments: tuple[str, ...]
    said: tuple[str, ...]  # lines init prints about what is not carried or stays


CASES = {
    "gemini": Case(GEMINI, ".gemini/settings.json", "json", ("mcpServers",), GEMINI_MOVED, (), ("pythonTools.trust",)),
    "qwen-code": Case(GEMINI, ".qwen/settings.json", "json", ("mcpServers",), GEMINI_MOVED, (), ()),
    "opencode": Case(
        OPENCODE,
        ".config/opencode/opencode.json",
        "json",
        ("mcp",),
        OPENCODE_MOVED,
        ("// the model is chosen per project",),
        ("stays in opencode.json: from-file (uses {file:…}, which opencode reads itself)",),
    ),
    "codex": Case(
        CODEX,
        ".codex/config.toml",
        "toml",
        ("mcp_servers",),
        CODEX_MOVED,
        ("# the default model", "# for quick questions"),
        ("not carried over (offprompt has no such setting): docs.startup_timeout_sec",),
    ),
    "fast-agent": Case(
        FAST_AGENT,
        "project/fastagent.config.yaml",
        "yaml",
        ("mcp", "servers"),
        FAST_AGENT_MOVED,
        ("# no LLM needed", "# the servers the agents use"),
        ("db.sampling",),
    ),
}
ENVIRON = {
    "DB_CONNECTION_STRING": "postgres://x",
    "EXTERNAL_API_KEY": "k",
    "MY_TOKEN": "t",
    "MY_API_KEY": "k",
    "FIGMA_OAUTH_TOKEN": "f",
    "GITHUB_TOKEN": "g",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(home / "project")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: nobody to ask
    return home


def _servers(case: Case, text: str, path: Path) -> dict[str, Any]:
    data: Any = parse_document(text, case.syntax, path).data()
    for key in case.block:
        data = data[key]
    return dict(data)


@pytest.mark.parametrize("client", list(CASES))
def test_init_carries_each_clients_servers_over_in_offprompt_words_and_undo_is_exact(
    client: str, home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    case = CASES[client]
    path = home / case.where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case.text)
    ours = home / ".config" / "offprompt" / f"{client}.json"  # a config of its own for each client

    code, out, err = run(capfd, "init", "--client", client)
    assert code == 0, err  # the preview is no failure
    assert "nothing written: run again with --yes" in err
    assert path.read_text() == case.text
    assert "ghp_s3cret" not in out

    code, out, err = run(capfd, "init", "--client", client, "--yes")
    assert code == 0, err
    for line in case.said:
        assert line in out
    written = path.read_text()
    for comment in case.comments:
        assert comment in written  # the client's comments are kept
    servers = _servers(case, written, path)
    entry = servers["offprompt"]
    command = entry["command"] if isinstance(entry["command"], list) else [entry["command"], *entry["args"]]
    assert command[1:] == ["serve", "--config", str(ours), "--memory-name", client]
    assert set(servers) == {"offprompt", "from-file"} if client == "opencode" else {"offprompt"}
    moved = json.loads(ours.read_text())["mcpServers"]
    assert moved == case.moved
    loaded = load_config(ours, environ=ENVIRON, check_paths=False)
    assert set(loaded.servers) == set(case.moved)
    assert not loaded.problems
    assert not loaded.warnings

    code, out, _ = run(capfd, "init", "--client", client, "--undo")
    assert code == 0
    assert out.startswith(f"restored {path}")
    assert path.read_text() == case.text
    assert not ours.exists()


@pytest.mark.parametrize("client", ["gemini", "codex", "fast-agent", "opencode"])
def test_undo_puts_each_entry_back_when_the_client_rewrote_its_file_since(
    client: str, home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    case = CASES[client]
    path = home / case.where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case.text)
    assert run(capfd, "init", "--client", client, "--yes")[0] == 0
    doc = parse_document(path.read_text(), case.syntax, path)
    doc.set(case.block, "added-since", {"command": "new-mcp"})  # the client's own edit after init
    path.write_text(doc.text)

    code, out, err = run(capfd, "init", "--client", client, "--undo")
    assert code == 0, err
    assert out.startswith(f"put its moved entries back in {path}")
    restored = path.read_text()
    for comment in case.comments:
        assert comment in restored
    original = _servers(case, case.text, path)
    assert _servers(case, restored, path) == {**original, "added-since": {"command": "new-mcp"}}


def test_a_client_on_the_shared_config_moves_to_its_own_with_its_own_servers_and_both_undos_work(
    home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Before: every client's servers went into one `mcp.json` (Cursor's `think` became `think-2` there beside
    VS Code's). init moves Cursor to `cursor.json` with its own servers under its own names; the first undo goes
    back to the shared file, the second to Cursor's file as it was before any init."""
    config_dir = home / ".config" / "offprompt"
    config_dir.mkdir(parents=True)
    shared = config_dir / "mcp.json"
    shared_before = '{\n  "mcpServers": {\n    "think": {"command": "vscode-think"}\n  }\n}\n'
    shared.write_text(shared_before)
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    original = (
        '{\n  "mcpServers": {\n    "think": {"command": "cursor-think"},\n    "git": {"command": "git-mcp"}\n  }\n}\n'
    )
    cursor.write_text(original)
    flags = ["init", "--client", "cursor", "--offprompt-config", str(shared), "--yes"]
    assert run(capfd, *flags)[0] == 0  # as an earlier offprompt did it: into the shared file
    assert set(json.loads(shared.read_text())["mcpServers"]) == {"think", "git"}  # (never think-2 now)
    shared_data = json.loads(shared.read_text())
    shared_data["mcpServers"] = {
        "think": {"command": "vscode-think"},
        "think-2": {"command": "cursor-think"},
        "git": {"command": "git-mcp"},
        "windsurf-only": {"command": "w"},
    }
    shared.write_text(json.dumps(shared_data, indent=2))  # the shared file as several clients left it

    code, out, err = run(capfd, "init", "--client", "cursor", "--yes")
    assert code == 0, err
    own = config_dir / "cursor.json"
    assert json.loads(own.read_text())["mcpServers"] == {
        "think": {"command": "cursor-think"},
        "git": {"command": "git-mcp"},
    }
    assert f"moves this client's servers from the config clients used to share, {shared}" in out
    assert "think (think-2 there)" in out
    assert str(own) in json.loads(cursor.read_text())["mcpServers"]["offprompt"]["args"]

    assert run(capfd, "init", "--client", "cursor", "--undo")[0] == 0
    assert not own.exists()
    assert str(shared) in json.loads(cursor.read_text())["mcpServers"]["offprompt"]["args"]
    assert run(capfd, "init", "--client", "cursor", "--undo")[0] == 0
    assert cursor.read_text() == original
    assert shared.read_text() == shared_before


def test_init_run_again_changes_nothing_and_keeps_what_the_user_set_in_offprompts_config(
    home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI)
    assert run(capfd, "init", "--client", "gemini", "--yes")[0] == 0
    ours = home / ".config" / "offprompt" / "gemini.json"
    edited = ours.read_text().replace('"sseServer": {', '"sseServer": {\n      "off_prompt": "always",')
    ours.write_text(edited)  # the user's own setting for one server
    code, out, _ = run(capfd, "init", "--client", "gemini", "--yes")
    assert code == 0
    assert out.startswith(f"{path} already starts offprompt alone; nothing to do")
    assert ours.read_text() == edited
