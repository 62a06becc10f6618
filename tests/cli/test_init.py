"""`offprompt init --client …` on copies of each client's documented config file, and `--undo`."""

from __future__ import annotations

import io
import json
import stat
import sys
from pathlib import Path

import pytest

from offprompt.commands.clients import client_config_path
from offprompt.config import load_config

from .run import run

# Each client's config as its documentation shows it (servers, a secret in env or headers, other keys kept).
CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop"]
    },
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_s3cret" }
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"""
CURSOR = """{
  "mcpServers": {
    "server-name": {
      "url": "http://localhost:3000/mcp",
      "headers": { "API_KEY": "ghp_s3cret" }
    },
    "mcp-server": {
      "command": "python",
      "args": ["mcp-server.py"],
      "env": { "API_KEY": "value" }
    }
  }
}
"""
CLAUDE_CODE = """{
  "numStartups": 12,
  "projects": { "/home/me/app": { "allowedTools": [] } },
  "mcpServers": {
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp",
      "headers": { "Authorization": "Bearer ghp_s3cret" }
    },
    "airtable": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "airtable-mcp-server"],
      "env": { "AIRTABLE_API_KEY": "ghp_s3cret" }
    }
  }
}
"""
VSCODE = """{
  // 'inputs' prompt for the key: only VS Code can ask for it.
  "inputs": [
    { "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true }
  ],
  "servers": {
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}" }
    },
    "fetch": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-fetch"],
      "env": { "TOKEN": "ghp_s3cret" }
    }
  }
}
"""
WINDSURF = """{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_s3cret" }
    },
    "remote": { "serverUrl": "https://example.com/mcp" },
    "keyed": { "command": "keyed-mcp", "env": { "KEY": "${file:/run/secrets/key}" } }
  }
}
"""

CASES = {
    "claude-desktop": (CLAUDE_DESKTOP, "mcpServers", {"filesystem", "github"}, set()),
    "cursor": (CURSOR, "mcpServers", {"server-name", "mcp-server"}, set()),
    "claude-code": (CLAUDE_CODE, "mcpServers", {"sentry", "airtable"}, set()),
    "vscode": (VSCODE, "servers", {"fetch"}, {"Perplexity"}),
    "windsurf": (WINDSURF, "mcpServers", {"github", "remote"}, {"keyed"}),
}


@pytest.mark.parametrize(
    ("client", "system", "expected"),
    [
        ("claude-desktop", "Darwin", "home/Library/Application Support/Claude/claude_desktop_config.json"),
        ("claude-desktop", "Windows", "appdata/Claude/claude_desktop_config.json"),
        ("claude-desktop", "Linux", "home/.config/Claude/claude_desktop_config.json"),
        ("vscode", "Darwin", "home/Library/Application Support/Code/User/mcp.json"),
        ("vscode", "Windows", "appdata/Code/User/mcp.json"),
        ("vscode", "Linux", "home/.config/Code/User/mcp.json"),
        ("cursor", "Darwin", "home/.cursor/mcp.json"),
        ("cursor", "Windows", "home/.cursor/mcp.json"),
        ("cursor", "Linux", "home/.cursor/mcp.json"),
        ("claude-code", "Darwin", "home/.claude.json"),
        ("claude-code", "Windows", "home/.claude.json"),
        ("claude-code", "Linux", "home/.claude.json"),
        ("windsurf", "Darwin", "home/.codeium/windsurf/mcp_config.json"),
        ("windsurf", "Windows", "home/.codeium/windsurf/mcp_config.json"),
        ("windsurf", "Linux", "home/.codeium/windsurf/mcp_config.json"),
        ("gemini", "Darwin", "home/.gemini/settings.json"),
        ("gemini", "Windows", "home/.gemini/settings.json"),
        ("qwen-code", "Linux", "home/.qwen/settings.json"),
        ("opencode", "Linux", "home/.config/opencode/opencode.json"),
        ("codex", "Darwin", "home/.codex/config.toml"),
        ("codex", "Windows", "home/.codex/config.toml"),
    ],
)
def test_each_clients_config_is_found_where_it_documents_it(
    client: str, system: str, expected: str, tmp_path: Path
) -> None:
    environ = {"APPDATA": str(tmp_path / "appdata")}
    assert client_config_path(client, system, tmp_path / "home", environ) == tmp_path / expected


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: nobody to ask
    return home


@pytest.mark.parametrize("client", list(CASES))
def test_init_moves_the_servers_behind_offprompt_and_undo_restores_the_file(
    client: str, home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    original, key, moved, kept = CASES[client]
    path = client_config_path(client, "Linux", home, {"APPDATA": str(tmp_path / "appdata")})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original)
    ours = tmp_path / "offprompt" / "mcp.json"
    flags = ["init", "--client", client, "--offprompt-config", str(ours)]

    code, out, err = run(capfd, *flags)
    assert code == 0  # a preview is no failure
    assert "nothing written: run again with --yes" in err
    assert path.read_text() == original
    assert not ours.exists()
    assert out.startswith(f"--- {path}")
    assert "ghp_s3cret" not in out  # env and headers values are not printed

    code, out, err = run(capfd, *flags, "--yes", "--no-start")
    assert code == 0, err
    after = json.loads(_strip(path.read_text()))
    assert set(after[key]) == {"offprompt"} | kept
    for comment in ("//" + line.split("//", 1)[1] for line in original.splitlines() if line.strip().startswith("//")):
        assert comment in path.read_text()  # the client's comments are kept
    entry = after[key]["offprompt"]
    assert entry["args"] == ["serve", "--config", str(ours), "--memory-name", client]
    assert entry["command"].endswith("offprompt")
    for other in set(json.loads(_strip(original))) - {key}:
        assert after[other] == json.loads(_strip(original))[other]

    assert stat.S_IMODE(ours.stat().st_mode) == 0o600
    theirs = json.loads(_strip(original))[key]
    written = json.loads(ours.read_text())["mcpServers"]
    assert written == {name: theirs[name] for name in moved}  # env and headers as they were
    loaded = load_config(ours, check_paths=False)
    assert set(loaded.servers) | set(loaded.problems) == moved
    for name in kept:
        assert f"stays in {path.name}: {name} (uses $" in out

    code, out, _ = run(capfd, "init", "--client", client, "--undo")
    assert code == 0
    assert out.startswith(f"restored {path}")
    assert path.read_bytes() == original.encode()
    assert not ours.exists()  # init made it; undo takes it away
    assert [p.name for p in path.parent.iterdir() if "offprompt-backup" in p.name] == []


def test_init_merges_into_an_existing_offprompt_config_never_duplicating_a_name_and_undo_puts_it_back(
    home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A name already in the client's offprompt config is that client's own server (init run again after it
    changed): its entry is brought up to date, offprompt's own keys kept, never a `mcp-server-2` beside it."""
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(CURSOR)
    ours = tmp_path / "offprompt.json"
    existing = (
        '{\n  "offprompt": {"threshold_tokens": 3000},\n'
        '  "mcpServers": {"mcp-server": {"command": "other", "off_prompt": "always"}}\n}\n'
    )
    ours.write_text(existing)
    code, out, err = run(capfd, "init", "--client", "cursor", "--offprompt-config", str(ours), "--yes", "--no-start")
    assert code == 0, err
    merged = json.loads(ours.read_text())
    assert merged["offprompt"] == {"threshold_tokens": 3000}
    assert set(merged["mcpServers"]) == {"mcp-server", "server-name"}
    assert merged["mcpServers"]["mcp-server"] == {
        "command": "python",
        "args": ["mcp-server.py"],
        "env": {"API_KEY": "value"},
        "off_prompt": "always",
    }
    assert "brought up to date there (offprompt's own keys kept): mcp-server" in out
    assert run(capfd, "init", "--client", "cursor", "--undo")[0] == 0
    assert path.read_bytes() == CURSOR.encode()
    assert ours.read_bytes() == existing.encode()


def _strip(text: str) -> str:
    from offprompt.config.jsonc import strip_jsonc

    return strip_jsonc(text)


def test_init_for_claude_code_moves_user_and_local_scope_servers_and_undo_puts_them_back(
    home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`claude mcp add` writes to the local scope by default (`projects[<dir>].mcpServers`): those move too; the
    project's shared `.mcp.json` stays and is named; undo puts each entry back in its scope although Claude Code
    has rewritten its file since."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"team-db": {"command": "db-mcp"}}}))
    local = {"fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}
    user = {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}}
    path = home / ".claude.json"
    path.write_text(
        json.dumps({"numStartups": 3, "mcpServers": user, "projects": {str(project): {"mcpServers": local}}})
    )
    ours = tmp_path / "offprompt.json"
    code, out, err = run(
        capfd,
        "init",
        "--client",
        "claude-code",
        "--project",
        str(project),
        "--offprompt-config",
        str(ours),
        "--yes",
        "--no-start",
    )
    assert code == 0, err
    assert "fs [local scope]" in out
    assert "sentry [user scope]" in out
    assert "stays in" in out
    assert "team-db" in out
    after = json.loads(path.read_text())
    assert set(after["mcpServers"]) == {"offprompt"}
    assert after["projects"][str(project)]["mcpServers"] == {}
    assert json.loads(ours.read_text())["mcpServers"] == {**user, **local}

    after["numStartups"] = 4  # Claude Code writes its file on every start
    path.write_text(json.dumps(after))
    code, out, _ = run(capfd, "init", "--client", "claude-code", "--undo")
    assert code == 0
    assert out.startswith(f"put its moved entries back in {path}")
    restored = json.loads(path.read_text())
    assert restored["numStartups"] == 4  # what Claude Code wrote since is kept
    assert restored["mcpServers"] == user
    assert restored["projects"][str(project)]["mcpServers"] == local
    assert not ours.exists()


def test_init_merging_into_a_commented_offprompt_config_keeps_its_comments(
    home: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"notion": {"url": "https://mcp.notion.com/mcp"}}}))
    ours = tmp_path / "offprompt.jsonc"
    commented = (
        "{\n"
        "  // results over 3,000 tokens go off the prompt\n"
        '  "offprompt": {"threshold_tokens": 3000},\n'
        '  "mcpServers": {\n'
        '    "git": {"command": "uvx", "args": ["mcp-server-git"]}, // the repository tools\n'
        "    /* more to come */\n"
        "  },\n"
        "}\n"
    )
    ours.write_text(commented)
    code, _, err = run(capfd, "init", "--client", "cursor", "--offprompt-config", str(ours), "--yes", "--no-start")
    assert code == 0, err
    merged = ours.read_text()
    for comment in ("// results over 3,000 tokens go off the prompt", "// the repository tools", "/* more to come */"):
        assert comment in merged
    loaded = load_config(ours, check_paths=False)
    assert set(loaded.servers) | set(loaded.problems) == {"git", "notion"}
    assert loaded.settings.threshold_tokens == 3000
