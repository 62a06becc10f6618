"""`offprompt init --client NAME`: move a client's MCP servers behind offprompt, and `--undo` it.

The client's servers go into offprompt's config file (merged with what it holds, written 0600 since `env` and
`headers` values move as they are), and the client's file keeps one `offprompt` entry that serves them. The
client's file is backed up byte for byte first; `--undo` puts the newest backup (and offprompt's config as it
was) back. Nothing is written without `--yes` unless a person at a terminal says yes.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import difflib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from offprompt.config.jsonc import insert_members, strip_jsonc
from offprompt.errors import ConfigError, NotFoundError

ENTRY_NAME = "offprompt"
BACKUP_TAG = ".offprompt-backup-"
_SECRET_KEYS = ("env", "headers")
_VSCODE_INPUT = "${input:"


def client_config_path(client: str, system: str, home: Path, environ: Mapping[str, str]) -> Path:
    """Where `client` keeps its MCP servers on `system` ("Linux", "Darwin", "Windows"), as each documents it."""
    appdata = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    if client == "claude-desktop":
        if system == "Darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if system == "Windows":
            return appdata / "Claude" / "claude_desktop_config.json"
        return config_home / "Claude" / "claude_desktop_config.json"
    if client == "vscode":
        if system == "Darwin":
            return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
        if system == "Windows":
            return appdata / "Code" / "User" / "mcp.json"
        return config_home / "Code" / "User" / "mcp.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "claude-code":
        return home / ".claude.json"  # user scope: the top-level mcpServers
    if client == "windsurf":
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    raise ConfigError(f"unknown client {client!r}")


def default_offprompt_config() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("offprompt", appauthor=False)) / "mcp.json"


def _system() -> str:
    return {"darwin": "Darwin", "win32": "Windows"}.get(sys.platform, "Linux")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(strip_jsonc(path.read_text(encoding="utf-8-sig")))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); fix it first") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the file holds no JSON object")
    return data


def _masked(value: Any) -> Any:
    """A copy with `env` and `headers` values hidden, for printing."""
    if isinstance(value, dict):
        return {
            k: ({n: "***" for n in v} if k in _SECRET_KEYS and isinstance(v, dict) else _masked(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _offprompt_command() -> str:
    found = shutil.which("offprompt")
    script = Path(sys.executable).with_name("offprompt.exe" if sys.platform == "win32" else "offprompt")
    return str(Path(found).absolute()) if found else str(script)


def offprompt_entry(client: str, config: Path) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": _offprompt_command(), "args": ["serve", "--config", str(config)]}
    entry["args"] += ["--memory-name", client]
    return {"type": "stdio", **entry} if client == "vscode" else entry


def _write(path: Path, text: str, mode: int | None) -> None:
    """Write through a temporary file and a rename, so the file is never half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.offprompt.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if mode is None else mode)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


class Plan:
    """What `init` would change: the client's file and offprompt's config, before and after.

    Claude Code keeps servers in three scopes: user (`mcpServers` of `~/.claude.json`), local (the default of
    `claude mcp add`: `projects[<project dir>].mcpServers` of the same file) and project (`.mcp.json`, shared
    with the team). The first two move; the project's file is left to its team and said so.
    """

    def __init__(self, client: str, client_path: Path, offprompt_path: Path, project: Path | None = None) -> None:
        self.client, self.client_path, self.offprompt_path = client, client_path, offprompt_path
        self.key = "servers" if client == "vscode" else "mcpServers"
        self.before = _read_json(client_path)
        servers = dict(self.before.get(self.key) or {})
        if not isinstance(self.before.get(self.key) or {}, dict):
            raise ConfigError(f"{client_path}: {self.key} is not an object")
        self.scopes: dict[str, str] = dict.fromkeys(servers, "user")  # claude-code: where each came from
        self.project = str((project or Path.cwd()).absolute()) if client == "claude-code" else None
        self.project_file_servers: list[str] = []  # claude-code: .mcp.json's, which stay
        local: dict[str, Any] = {}
        if self.project is not None:
            entry = (self.before.get("projects") or {}).get(self.project) or {}
            local = dict(entry.get("mcpServers") or {}) if isinstance(entry, dict) else {}
            for name, server in local.items():
                if name not in servers:  # Claude Code prefers the local entry; the user one is shadowed
                    self.scopes[name] = "local"
                servers[name] = server
            shared = Path(self.project) / ".mcp.json"
            if shared.exists():
                self.project_file_servers = [n for n in (_read_json(shared).get("mcpServers") or {}) if n != ENTRY_NAME]
        self.offprompt_before = _read_json(offprompt_path) if offprompt_path.exists() else None
        target = copy.deepcopy(self.offprompt_before or {})
        target_key = "servers" if "servers" in target and "mcpServers" not in target else "mcpServers"
        merged: dict[str, Any] = dict(target.get(target_key) or {})
        self.moved: dict[str, str] = {}  # client name -> name in offprompt's config
        self.kept: list[str] = []  # VS Code entries that use ${input:…}: only VS Code can prompt for them
        kept: dict[str, Any] = {}
        for name, server in servers.items():
            if name == ENTRY_NAME:
                continue
            if client == "vscode" and _VSCODE_INPUT in json.dumps(server):
                kept[name] = server
                self.kept.append(name)
                continue
            new_name = name
            n = 2
            while new_name in merged and merged[new_name] != server:
                new_name, n = f"{name}-{n}", n + 1
            merged[new_name] = server
            self.moved[name] = new_name
        target[target_key] = merged
        self.target_key = target_key
        self.offprompt_after = target
        self.after = copy.deepcopy(self.before)
        self.after[self.key] = {**kept, ENTRY_NAME: offprompt_entry(client, offprompt_path)}
        if self.project is not None and local:
            self.after["projects"][self.project]["mcpServers"] = {}

    @property
    def changes(self) -> bool:
        return self.after != self.before

    def diff(self) -> str:
        lines = list(
            difflib.unified_diff(
                _dump(_masked(self.before)).splitlines(keepends=True),
                _dump(_masked(self.after)).splitlines(keepends=True),
                fromfile=str(self.client_path),
                tofile=f"{self.client_path} (after)",
            )
        )
        return "".join(lines)

    def write(self, stamp: str) -> Path:
        backup = self.client_path.with_name(f"{self.client_path.name}{BACKUP_TAG}{stamp}")
        shutil.copy2(self.client_path, backup)
        manifest: dict[str, Any] = {
            "client_config": str(self.client_path),
            "offprompt_config": str(self.offprompt_path),
            "offprompt_backup": None,
        }
        if self.offprompt_before is not None:
            saved = self.offprompt_path.with_name(f"{self.offprompt_path.name}{BACKUP_TAG}{stamp}")
            shutil.copy2(self.offprompt_path, saved)
            manifest["offprompt_backup"] = str(saved)
        written = _dump(self.after)
        if self.client == "claude-code":
            # Claude Code rewrites its file all the time: undo puts the moved entries back where they were,
            # unless the file is still as init wrote it (then it is restored byte for byte).
            manifest["moved"] = [
                {"name": name, "scope": self.scopes.get(name, "user"), "entry": self._entry(name)}
                for name in self.moved
            ]
            manifest["project"] = self.project
            manifest["written_sha256"] = hashlib.sha256(written.encode()).hexdigest()
        _write(Path(f"{backup}.json"), _dump(manifest), 0o600)
        _write(self.offprompt_path, self._offprompt_text(), 0o600)  # env and headers values are in it
        mode = self.client_path.stat().st_mode & 0o777
        _write(self.client_path, written, mode)
        return backup

    def _entry(self, name: str) -> Any:
        if self.scopes.get(name) == "local" and self.project is not None:
            return self.before["projects"][self.project]["mcpServers"][name]
        return self.before[self.key][name]

    def _offprompt_text(self) -> str:
        """offprompt's config as it will be written: the new servers put into the file's own text, so its
        comments and layout stay (`//` comments, trailing commas), or a fresh file."""
        if self.offprompt_before is None:
            return _dump(self.offprompt_after)
        text = self.offprompt_path.read_text(encoding="utf-8-sig")
        added = {
            new: self.offprompt_after[self.target_key][new]
            for new in self.moved.values()
            if new not in (self.offprompt_before.get(self.target_key) or {})
        }
        return insert_members(text, self.target_key, added)


def _backups(client_path: Path) -> list[Path]:
    pattern = f"{client_path.name}{BACKUP_TAG}*"
    return sorted(p for p in client_path.parent.glob(pattern) if not p.name.endswith(".json"))


def undo(client_path: Path) -> str:
    """Put the newest backup of the client's file back byte for byte (Claude Code's: the entries init moved, if
    the file changed since), and offprompt's config as it was."""
    backups = _backups(client_path)
    if not backups:
        raise NotFoundError(f"no offprompt backup of {client_path} to restore (`offprompt init` makes one)")
    backup = backups[-1]
    manifest_path = Path(f"{backup}.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    current = hashlib.sha256(client_path.read_bytes()).hexdigest()
    if "moved" in manifest and current != manifest.get("written_sha256"):
        _put_back(client_path, manifest)
        how = "put its moved entries back in"
    else:
        shutil.copy2(backup, client_path)
        how = "restored"
    offprompt_config = manifest.get("offprompt_config")
    if offprompt_config:
        saved = manifest.get("offprompt_backup")
        if saved:
            shutil.copy2(saved, offprompt_config)
            Path(saved).unlink()
        else:
            Path(offprompt_config).unlink(missing_ok=True)  # init created it
    backup.unlink()
    manifest_path.unlink(missing_ok=True)
    return f"{how} {client_path} from {backup.name}"


def _put_back(client_path: Path, manifest: dict[str, Any]) -> None:
    """Claude Code's file as it is now, with the offprompt entry gone and the moved entries in their scopes."""
    data = _read_json(client_path)
    user = dict(data.get("mcpServers") or {})
    user.pop(ENTRY_NAME, None)
    for moved in manifest["moved"]:
        if moved["scope"] == "local" and manifest.get("project"):
            project = data.setdefault("projects", {}).setdefault(manifest["project"], {})
            project.setdefault("mcpServers", {})[moved["name"]] = moved["entry"]
        else:
            user[moved["name"]] = moved["entry"]
    data["mcpServers"] = user
    _write(client_path, _dump(data), client_path.stat().st_mode & 0o777)


def _confirm() -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input("Write these changes? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def run(args: argparse.Namespace) -> int:
    home = Path.home()
    client_path: Path = (
        args.config.expanduser() if args.config else client_config_path(args.client, _system(), home, os.environ)
    )
    if args.undo:
        print(undo(client_path))
        return 0
    if not client_path.exists():
        raise NotFoundError(
            f"{client_path}: no {args.client} config there; pass --config PATH to name the file it uses"
        )
    offprompt_path = (args.offprompt_config or default_offprompt_config()).expanduser().absolute()
    plan = Plan(args.client, client_path, offprompt_path, getattr(args, "project", None))
    if not plan.moved and not plan.changes:
        print(f"{client_path} already starts offprompt alone; nothing to do")
        return 0
    print(plan.diff(), end="")
    if plan.moved:
        names = ", ".join(
            (n if n == m else f"{n} (as {m})") + (f" [{plan.scopes[n]} scope]" if plan.project else "")
            for n, m in plan.moved.items()
        )
        print(f"\nmoves to {offprompt_path} (written 0600, env and headers as they are): {names}")
    if plan.project_file_servers:
        print(
            f"stays in {Path(plan.project or '.') / '.mcp.json'} (project scope, shared with the team): "
            f"{', '.join(plan.project_file_servers)}; move them to {offprompt_path} and out of .mcp.json "
            "yourself if the whole team uses offprompt"
        )
    if plan.kept:
        print(
            f"stays in {client_path.name}: {', '.join(plan.kept)} (uses ${{input:…}}, which only VS Code can "
            "prompt for); keep it there, or put the value in offprompt's config yourself"
        )
    if not (args.yes or _confirm()):
        print("nothing written: run again with --yes to write these changes", file=sys.stderr)
        return 1
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    backup = plan.write(stamp)
    print(f"wrote {client_path} (backup: {backup.name}; `offprompt init --client {args.client} --undo` restores it)")
    if not getattr(args, "no_start", False):
        _list_for_the_first_start(offprompt_path)
    print(f"restart {args.client} to use it; `offprompt check --config {offprompt_path}` checks the servers")
    return 0


def _list_for_the_first_start(offprompt_path: Path) -> None:
    """Start every server once and keep the lists, so the client's first start lists every tool at once."""
    from offprompt.serve.front_lists import prime_front_lists

    if prime_front_lists(offprompt_path):
        print(f"started the servers of {offprompt_path} once: the first start lists all their tools at once")
