"""Every client `offprompt init` knows, as data: where its settings file is, its syntax, where the servers block
lives in it, how it writes one server entry, and how offprompt's own entry is written there.

Each row follows the client's own documentation (as of the versions pinned in tests/peers): Claude Code's
`~/.claude.json` (user scope `mcpServers`, local scope `projects[<dir>].mcpServers`), Claude Desktop's
`claude_desktop_config.json`, Cursor's `~/.cursor/mcp.json`, VS Code's `mcp.json` (`servers`, `${input:…}`),
Windsurf's `mcp_config.json` (`serverUrl`), Gemini CLI's `~/.gemini/settings.json` and qwen-code's
`~/.qwen/settings.json` (`httpUrl`, `$VAR`, `timeout` in ms), opencode's `opencode.json` (`mcp`, `type: "local"`,
`command` as one array, `environment`, `{env:VAR}`), Codex CLI's `~/.codex/config.toml` (`[mcp_servers.NAME]`,
`env_vars`, `bearer_token_env_var`, `http_headers`) and fast-agent's `fastagent.config.yaml` (`mcp.servers`,
`transport`, `${VAR:default}`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offprompt.config.documents import Syntax

#: Stands for the project's absolute path in a block's key path (Claude Code's local scope).
PROJECT = "{project}"

Entry = dict[str, Any]


@dataclass(frozen=True)
class EntryShape:
    """How one client writes a server entry, read into offprompt's words; and offprompt's own entry in the
    client's words."""

    #: The client's variable syntax rewritten to offprompt's (`${VAR}`, `${VAR:-default}`), in every string.
    variables: tuple[tuple[str, str], ...] = ()
    #: Values only the client can fill in (a prompt, a file it reads): such an entry stays in the client's file.
    client_only: tuple[tuple[str, str], ...] = ()
    #: Keys offprompt has no setting for: left out of offprompt's config, and named.
    dropped: frozenset[str] = frozenset()
    #: The entry's structure in offprompt's words (opencode's command array, Codex's header keys).
    convert: Callable[[Entry], Entry] = dict
    #: offprompt's entry, from its command and arguments.
    write: Callable[[str, list[str]], Entry] = lambda command, args: {"command": command, "args": args}


@dataclass(frozen=True)
class Client:
    name: str
    syntax: Syntax
    #: The settings file, per system ("Linux", "Darwin", "Windows"; "" for every one), with {home}, {config}
    #: (XDG_CONFIG_HOME or ~/.config), {appdata}, {codex_home} and {project} filled in.
    paths: Mapping[str, str]
    #: Where the servers live in the file, with a name for each scope when there are several.
    blocks: tuple[tuple[str, ...], ...]
    shape: EntryShape
    scopes: tuple[str, ...] = ()
    #: A project's own file, shared with its team: its servers stay there, and init says so.
    team_file: str | None = None
    notes: tuple[str, ...] = field(default=())


def _rename(entry: Entry, renames: Mapping[str, str]) -> Entry:
    return {renames.get(key, key): value for key, value in entry.items()}


def _gemini(entry: Entry) -> Entry:
    out = dict(entry)
    if isinstance(out.get("timeout"), int | float):  # milliseconds per request
        out["timeout_seconds"] = out.pop("timeout") / 1000
    return out


def _opencode(entry: Entry) -> Entry:
    out = _rename(entry, {"environment": "env"})
    kind = out.pop("type", None)
    command = out.get("command")
    if kind == "local" and isinstance(command, list) and command:
        out["command"], out["args"] = command[0], command[1:]
    if out.pop("enabled", True) is False:
        out["disabled"] = True
    return out


def _codex(entry: Entry) -> Entry:
    out = _rename(entry, {"http_headers": "headers", "tool_timeout_sec": "timeout_seconds"})
    headers = dict(out.get("headers") or {})
    for header, variable in (out.pop("env_http_headers", None) or {}).items():
        headers[header] = f"${{{variable}}}"
    token = out.pop("bearer_token_env_var", None)
    if token:
        headers["Authorization"] = f"Bearer ${{{token}}}"
    if headers:
        out["headers"] = headers
    forwarded = out.pop("env_vars", None) or []
    if forwarded:  # names Codex passes on from its own environment: offprompt passes them on the same way
        out["env"] = {**{name: f"${{{name}:-}}" for name in forwarded}, **(out.get("env") or {})}
    if out.pop("enabled", True) is False:
        out["disabled"] = True
    return out


def _fast_agent(entry: Entry) -> Entry:
    out = _rename(entry, {"read_timeout_seconds": "timeout_seconds"})
    transport = out.pop("transport", None)
    if transport in ("http", "sse") and "url" in out:
        out["transport"] = "sse" if transport == "sse" else "streamable_http"
    roots = out.get("roots")
    if isinstance(roots, list):
        out["roots"] = [root["uri"] if isinstance(root, dict) else root for root in roots]
    return out


#: Keys the JSON clients write that offprompt has no setting for.
_MCPSERVERS_DROPPED = frozenset(
    {
        "timeout",
        "disabledTools",
        "includeTools",
        "excludeTools",
        "watchPaths",
        "oauth",
        "auth",
        "autoApprove",
        "alwaysAllow",
        "trust",
    }
)
_EDITOR_VARIABLES = (
    (r"\$\{input:[^}]*\}", "uses ${input:…}, which only the editor can prompt for"),
    (r"\$\{(?:workspaceFolder|workspaceFolderBasename|workspaceRoot|fileDirname|file|relativeFile)\}",
     "uses a workspace variable, which only the editor knows"),
    (r"\$\{file:[^}]*\}", "uses ${file:…}, which the client reads itself"),  # Windsurf
)  # fmt: skip

MCPSERVERS = EntryShape(dropped=_MCPSERVERS_DROPPED, client_only=_EDITOR_VARIABLES)
VSCODE = EntryShape(
    dropped=_MCPSERVERS_DROPPED,
    client_only=_EDITOR_VARIABLES,
    write=lambda command, args: {"type": "stdio", "command": command, "args": args},
)
GEMINI = EntryShape(
    variables=((r"\$([A-Za-z_][A-Za-z0-9_]*)", r"${\1}"),),  # $VAR as well as ${VAR}
    dropped=frozenset(
        {"trust", "includeTools", "excludeTools", "oauth", "authProviderType", "targetAudience",
         "targetServiceAccount", "tcp", "extensionName"}
    ),
    convert=_gemini,
)  # fmt: skip
OPENCODE = EntryShape(
    variables=((r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}", r"${\1}"),),
    client_only=((r"\{file:[^}]*\}", "uses {file:…}, which opencode reads itself"),),
    dropped=frozenset({"oauth", "timeout"}),
    convert=_opencode,
    write=lambda command, args: {"type": "local", "command": [command, *args], "enabled": True},
)
CODEX = EntryShape(
    dropped=frozenset(
        {"startup_timeout_sec", "startup_timeout_ms", "enabled_tools", "disabled_tools", "scopes", "oauth",
         "required", "bearer_token", "oauth_resource"}
    ),
    convert=_codex,
)  # fmt: skip
FAST_AGENT = EntryShape(
    variables=((r"\$\{([A-Za-z_][A-Za-z0-9_]*):(?!-)([^}]*)\}", r"${\1:-\2}"),),  # ${VAR:default}
    dropped=frozenset(
        {"sampling", "auth", "elicitation", "load_on_start", "include_instructions", "name",
         "http_timeout_seconds", "read_transport_sse_timeout_seconds", "reconnect_on_disconnect",
         "ping_interval_seconds", "max_missed_pings", "implementation"}
    ),
    convert=_fast_agent,
    write=lambda command, args: {"transport": "stdio", "command": command, "args": args},
)  # fmt: skip

_MCP = (("mcpServers",),)
CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client("claude-desktop", "json", {
            "Darwin": "{home}/Library/Application Support/Claude/claude_desktop_config.json",
            "Windows": "{appdata}/Claude/claude_desktop_config.json",
            "Linux": "{config}/Claude/claude_desktop_config.json",
        }, _MCP, MCPSERVERS),
        Client("cursor", "json", {"": "{home}/.cursor/mcp.json"}, _MCP, MCPSERVERS, team_file=".cursor/mcp.json"),
        Client("claude-code", "json", {"": "{home}/.claude.json"},
               (("mcpServers",), ("projects", PROJECT, "mcpServers")), MCPSERVERS, scopes=("user", "local"),
               team_file=".mcp.json"),
        Client("vscode", "json", {
            "Darwin": "{home}/Library/Application Support/Code/User/mcp.json",
            "Windows": "{appdata}/Code/User/mcp.json",
            "Linux": "{config}/Code/User/mcp.json",
        }, (("servers",),), VSCODE, team_file=".vscode/mcp.json"),
        Client("windsurf", "json", {"": "{home}/.codeium/windsurf/mcp_config.json"}, _MCP, MCPSERVERS),
        Client("gemini", "json", {"": "{home}/.gemini/settings.json"}, _MCP, GEMINI,
               team_file=".gemini/settings.json"),
        Client("qwen-code", "json", {"": "{home}/.qwen/settings.json"}, _MCP, GEMINI,
               team_file=".qwen/settings.json"),
        Client("opencode", "json", {"": "{config}/opencode/opencode.json"}, (("mcp",),), OPENCODE,
               team_file="opencode.json"),
        Client("codex", "toml", {"": "{codex_home}/config.toml"}, (("mcp_servers",),), CODEX,
               team_file=".codex/config.toml"),
        Client("fast-agent", "yaml", {"": "{project}/fastagent.config.yaml"}, (("mcp", "servers"),), FAST_AGENT),
    )
}  # fmt: skip


def settings_path(client: Client, system: str, home: Path, environ: Mapping[str, str], project: Path) -> Path:
    """Where `client` keeps its MCP servers on `system`, as its documentation says."""
    template = client.paths.get(system) or client.paths[""]
    return Path(
        template.format(
            home=home,
            config=environ.get("XDG_CONFIG_HOME") or home / ".config",
            appdata=environ.get("APPDATA") or home / "AppData" / "Roaming",
            codex_home=environ.get("CODEX_HOME") or home / ".codex",
            project=project,
        )
    )


def in_offprompt_words(shape: EntryShape, entry: Entry) -> tuple[Entry, list[str], str | None]:
    """The entry as offprompt's config holds it, the keys left out, and why it must stay with the client (None:
    it moves)."""
    text = repr(entry)
    for pattern, reason in shape.client_only:
        if re.search(pattern, text):
            return entry, [], reason
    converted = shape.convert(_rewrite(entry, shape.variables))
    dropped = sorted(key for key in converted if key in shape.dropped)
    return {k: v for k, v in converted.items() if k not in shape.dropped}, dropped, None


def _rewrite(value: Any, variables: tuple[tuple[str, str], ...]) -> Any:
    if isinstance(value, str):
        for pattern, replacement in variables:
            value = re.sub(pattern, replacement, value)
        return value
    if isinstance(value, dict):
        return {key: _rewrite(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewrite(item, variables) for item in value]
    return value
