"""`offprompt init --client NAME`: move a client's MCP servers behind offprompt, and `--undo` it.

One engine for every client of `client_table.CLIENTS`. The client's servers go into an offprompt config of its
own (`<config dir>/offprompt/<client>.json`, written 0600 since `env` and `headers` values move as they are),
in offprompt's words (each client's variable syntax rewritten, keys offprompt has no setting for named); the
client's file keeps one entry that starts offprompt on them, every other line of it as it was (JSONC, TOML and
YAML comments kept). The client's file is backed up byte for byte first, with a manifest of each entry moved:
`--undo` restores the backup when the file is still as init wrote it, else (the client rewrote it since) takes
offprompt's entry out and puts each moved entry back where it was. A client whose entry still starts offprompt
on the config every client once shared is moved to a config of its own, with its own servers only. Nothing is
written without `--yes` unless a person at a terminal says yes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offprompt.commands.client_table import CLIENTS, PROJECT, Client, Entry, in_offprompt_words, settings_path
from offprompt.config import HttpServer, StdioServer
from offprompt.config.documents import Document, JsoncDocument, parse_document, read_document
from offprompt.errors import ConfigError, NotFoundError

ENTRY_NAME = "offprompt"
BACKUP_TAG = ".offprompt-backup-"
_SECRET_KEYS = ("env", "headers", "environment", "http_headers")
#: Keys of a server entry that only offprompt reads: kept when the client's entry is moved again.
_OFFPROMPT_KEYS = frozenset(StdioServer.model_fields) & frozenset(HttpServer.model_fields) - {"disabled"}


def client_config_path(client: str, system: str, home: Path, environ: Mapping[str, str]) -> Path:
    """Where `client` keeps its MCP servers on `system` ("Linux", "Darwin", "Windows"), as each documents it."""
    if client not in CLIENTS:
        raise ConfigError(f"unknown client {client!r}; the clients are: {', '.join(CLIENTS)}")
    return settings_path(CLIENTS[client], system, home, environ, Path.cwd())


def offprompt_config_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("offprompt", appauthor=False))


def _system() -> str:
    return {"darwin": "Darwin", "win32": "Windows"}.get(sys.platform, "Linux")


def _offprompt_command() -> str:
    found = shutil.which("offprompt")
    script = Path(sys.executable).with_name("offprompt.exe" if sys.platform == "win32" else "offprompt")
    return str(Path(found).absolute()) if found else str(script)


def _starts_offprompt(entry: Entry) -> bool:
    args = entry.get("args") or []
    command = str(entry.get("command") or "")
    return Path(command).stem == "offprompt" and bool(args) and args[0] == "serve"


def _config_of(entry: Entry) -> Path | None:
    args = [str(a) for a in entry.get("args") or []]
    return Path(args[args.index("--config") + 1]).expanduser() if "--config" in args[:-1] else None


def _client_side(entry: Entry) -> Entry:
    return {key: value for key, value in entry.items() if key not in _OFFPROMPT_KEYS}


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


@dataclass
class Found:
    """One server entry in the client's file."""

    name: str
    at: tuple[str, ...]  # the key path of its block
    scope: str
    entry: Entry  # as the client wrote it
    converted: Entry  # as offprompt's config holds it
    dropped: list[str]  # keys offprompt has no setting for
    stays: str | None  # why it stays with the client (None: it moves)


def find_servers(client: Client, data: Mapping[str, Any], project: str) -> list[Found]:
    """Every server entry of the client's file, block by block (a name in an earlier block shadows none: the
    later, narrower scope wins, as Claude Code's local scope over its user scope)."""
    found: list[Found] = []
    for index, block in enumerate(client.blocks):
        at = tuple(project if key == PROJECT else key for key in block)
        servers: Any = data
        for key in at:
            servers = servers.get(key) if isinstance(servers, dict) else None
        if servers is None:
            continue
        if not isinstance(servers, dict):
            raise ConfigError(f"{'.'.join(at)} is not a table of servers; fix the client's file first")
        scope = client.scopes[index] if client.scopes else ""
        for name, entry in servers.items():
            if not isinstance(entry, dict):
                continue
            converted, dropped, stays = in_offprompt_words(client.shape, entry)
            found.append(Found(str(name), at, scope, entry, converted, dropped, stays))
    return found


def _secret_values(entries: list[Found]) -> list[str]:
    """The values under env and headers of every entry, longest first, to hide them in what init prints."""
    values: set[str] = set()
    for found in entries:
        for key in _SECRET_KEYS:
            block = found.entry.get(key)
            if isinstance(block, dict):
                values.update(str(v) for v in block.values() if len(str(v)) >= 4)
    return sorted(values, key=len, reverse=True)


def _lookup(data: Any, at: list[str] | tuple[str, ...]) -> Any:
    for key in at:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _servers_key(data: Mapping[str, Any]) -> str:
    return "servers" if "servers" in data and "mcpServers" not in data else "mcpServers"


class Plan:
    """What `init` would change: the client's file and its offprompt config, before and after."""

    def __init__(self, client: Client, client_path: Path, offprompt_path: Path, project: Path) -> None:
        self.client, self.client_path, self.offprompt_path = client, client_path, offprompt_path
        self.project = str(project.absolute())
        self.before = client_path.read_text(encoding="utf-8-sig")
        self.doc = parse_document(self.before, client.syntax, client_path)
        found = find_servers(client, self.doc.data(), self.project)
        self.entries = found
        ours = [f for f in found if _starts_offprompt(f.converted)]
        self.stays = [f for f in found if f.stays and f not in ours]
        self.moved: dict[str, Found] = {}  # by name: the narrower scope's entry wins
        self.removed: list[Found] = []
        for f in found:
            if f in ours or f.stays:
                continue
            earlier = self.moved.get(f.name)
            if earlier is not None and earlier.converted != f.converted:
                earlier.stays = f"shadowed by the {f.scope} scope's entry of the same name"
                self.stays.append(earlier)
                self.removed.remove(earlier)
            self.moved[f.name] = f
            self.removed.append(f)
        self.offprompt_before = offprompt_path.read_text(encoding="utf-8-sig") if offprompt_path.exists() else None
        self.migrated_from: Path | None = None
        self.migrated: list[str] = []
        base = self.offprompt_before if self.offprompt_before is not None else self._migrated(ours)
        self.updated: list[str] = []
        self.offprompt_after = self._offprompt_text(base or "{}\n")
        for f in self.removed:
            self.doc.remove(f.at, f.name)
        self.entry_at = tuple(self.project if k == PROJECT else k for k in client.blocks[0])
        if self.removed or not any(_config_of(o.converted) == offprompt_path for o in ours):
            command = client.shape.write(
                _offprompt_command(), ["serve", "--config", str(offprompt_path), "--memory-name", client.name]
            )
            self.doc.set(self.entry_at, ENTRY_NAME, command)
        self.after = self.doc.text

    def _offprompt_text(self, base: str) -> str:
        """offprompt's config with the moved servers in, its other lines (comments too) as they were. A name
        already there is this client's own server: its entry is brought up to date, offprompt's keys kept."""
        target = JsoncDocument(base, self.offprompt_path)
        key = _servers_key(target.data())
        existing = target.data().get(key) or {}
        for name, f in self.moved.items():
            old = existing.get(name)
            if old is None:
                target.set((key,), name, f.converted)
            elif _client_side(old) != _client_side(f.converted):
                kept = {k: v for k, v in old.items() if k in _OFFPROMPT_KEYS}
                target.set((key,), name, {**f.converted, **kept})
                self.updated.append(name)
        return target.text

    def _migrated(self, ours: list[Found]) -> str | None:
        """The text of the config this client's entry shares with others, with this client's servers only (under
        the names the client gives them), when its entry starts offprompt on such a config; else None."""
        shared = next(
            (c for o in ours if (c := _config_of(o.converted)) and c != self.offprompt_path and c.is_file()), None
        )
        if shared is None:
            return None
        doc = JsoncDocument(shared.read_text(encoding="utf-8-sig"), shared)
        key = _servers_key(doc.data())
        theirs: dict[str, Any] = doc.data().get(key) or {}
        mine = self._originals()
        keep: dict[str, str] = {n: n for n in theirs} if mine is None else {}  # name there -> name here
        for name, converted in (mine or {}).items():
            same = [n for n, e in theirs.items() if n not in keep and _client_side(e) == _client_side(converted)]
            match = name if name in same else next(iter(same), None)
            if match is not None:
                keep[match] = name
        for name in theirs:
            if name not in keep:
                doc.remove((key,), name)
        for there, here in keep.items():
            if there != here:
                doc.remove((key,), there)
                doc.set((key,), here, theirs[there])
        self.migrated_from = shared
        self.migrated = [here if here == there else f"{here} ({there} there)" for there, here in keep.items()]
        return doc.text

    def _originals(self) -> dict[str, Entry] | None:
        """The servers the client's file held before its last `init` (its newest backup), in offprompt's words."""
        backups = _backups(self.client_path)
        if not backups:
            return None
        data = parse_document(backups[-1].read_text(encoding="utf-8-sig"), self.client.syntax, backups[-1]).data()
        found = find_servers(self.client, data, self.project)
        return {f.name: f.converted for f in found if not f.stays and not _starts_offprompt(f.converted)}

    @property
    def changes(self) -> bool:
        return self.after != self.before or self.offprompt_after != (self.offprompt_before or "")

    def diff(self) -> str:
        text = "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=str(self.client_path),
                tofile=f"{self.client_path} (after)",
            )
        )
        for value in _secret_values(self.entries):
            text = text.replace(value, "***")
        return text

    def write(self, stamp: str) -> Path:
        backup = self.client_path.with_name(f"{self.client_path.name}{BACKUP_TAG}{stamp}")
        shutil.copy2(self.client_path, backup)
        manifest: dict[str, Any] = {
            "client": self.client.name,
            "client_config": str(self.client_path),
            "offprompt_config": str(self.offprompt_path),
            "offprompt_backup": None,
            "written_sha256": hashlib.sha256(self.after.encode()).hexdigest(),
            "added": {"at": list(self.entry_at), "name": ENTRY_NAME},
            "removed": [{"at": list(f.at), "name": f.name, "entry": f.entry} for f in self.removed],
        }
        if self.offprompt_before is not None:
            saved = self.offprompt_path.with_name(f"{self.offprompt_path.name}{BACKUP_TAG}{stamp}")
            shutil.copy2(self.offprompt_path, saved)
            manifest["offprompt_backup"] = str(saved)
        _write(Path(f"{backup}.json"), json.dumps(manifest, indent=2) + "\n", 0o600)
        _write(self.offprompt_path, self.offprompt_after, 0o600)  # env and headers values are in it
        _write(self.client_path, self.after, self.client_path.stat().st_mode & 0o777)
        return backup


def _backups(client_path: Path) -> list[Path]:
    pattern = f"{client_path.name}{BACKUP_TAG}*"
    return sorted(p for p in client_path.parent.glob(pattern) if not p.name.endswith(".json"))


def undo(client: Client, client_path: Path) -> str:
    """Put the newest backup of the client's file back byte for byte (or, when the client rewrote the file
    since, take offprompt's entry out and put each moved entry back where it was), and offprompt's config as it
    was."""
    backups = _backups(client_path)
    if not backups:
        raise NotFoundError(f"no offprompt backup of {client_path} to restore (`offprompt init` makes one)")
    backup = backups[-1]
    manifest_path = Path(f"{backup}.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    _read_legacy(manifest)
    current = hashlib.sha256(client_path.read_bytes()).hexdigest() if client_path.exists() else None
    how, skipped = "restored", []
    if "removed" in manifest and current != manifest.get("written_sha256"):
        skipped = _put_back(client, client_path, manifest)
        how = "put its moved entries back in"
    else:
        shutil.copy2(backup, client_path)
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
    left = f"; left as the client has them now: {', '.join(skipped)}" if skipped else ""
    return f"{how} {client_path} from {backup.name}{left}"


def _read_legacy(manifest: dict[str, Any]) -> None:
    """A manifest an earlier offprompt wrote (Claude Code's `moved` with scopes) in today's words."""
    if "moved" not in manifest or "removed" in manifest:
        return
    project = manifest.get("project")
    manifest["added"] = {"at": ["mcpServers"], "name": ENTRY_NAME}
    manifest["removed"] = [
        {
            "at": ["projects", project, "mcpServers"] if m["scope"] == "local" and project else ["mcpServers"],
            "name": m["name"],
            "entry": m["entry"],
        }
        for m in manifest["moved"]
    ]


def _put_back(client: Client, client_path: Path, manifest: dict[str, Any]) -> list[str]:
    """The client's file as it is now, without offprompt's entry and with the moved entries back in their
    blocks; the names the client has given another entry since are left as they are (and returned)."""
    doc: Document = read_document(client_path, client.syntax)
    data = doc.data()
    added = manifest["added"]
    if _starts_offprompt(in_offprompt_words(client.shape, _lookup(data, added["at"]).get(added["name"]) or {})[0]):
        doc.remove(added["at"], added["name"])
    skipped = []
    for removed in manifest["removed"]:
        if removed["name"] in _lookup(data, removed["at"]):
            skipped.append(removed["name"])
        else:
            doc.set(removed["at"], removed["name"], removed["entry"])
    _write(client_path, doc.text, client_path.stat().st_mode & 0o777)
    return skipped


def _confirm() -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input("Write these changes? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _report(plan: Plan) -> None:
    """What moves, what stays and why, in a line each."""
    scoped = len(plan.client.blocks) > 1
    if plan.moved:
        names = ", ".join(n + (f" [{f.scope} scope]" if scoped else "") for n, f in plan.moved.items())
        print(f"\nmoves to {plan.offprompt_path} (written 0600, env and headers as they are): {names}")
    if plan.updated:
        print(f"brought up to date there (offprompt's own keys kept): {', '.join(plan.updated)}")
    if plan.migrated_from is not None:
        print(
            f"moves this client's servers from the config clients used to share, {plan.migrated_from}, to its own: "
            f"{', '.join(plan.migrated) or 'none'} (the shared file stays as it is; --undo goes back to it)"
        )
    dropped = [f"{f.name}.{key}" for f in plan.moved.values() for key in f.dropped]
    if dropped:
        print(f"not carried over (offprompt has no such setting): {', '.join(dropped)}")
    for f in plan.stays:
        print(f"stays in {plan.client_path.name}: {f.name} ({f.stays}); keep it there, or move it yourself")
    team = Path(plan.project) / plan.client.team_file if plan.client.team_file else None
    if team is not None and team.is_file() and team.absolute() != plan.client_path.absolute():
        doc = read_document(team, plan.client.syntax)
        shared = [f.name for f in find_servers(plan.client, doc.data(), plan.project) if f.name != ENTRY_NAME]
        if shared:
            print(
                f"stays in {team} (the project's, shared with its team): {', '.join(shared)}; "
                f"`offprompt init --client {plan.client.name} --config {team}` moves them if the whole team uses "
                "offprompt"
            )


def _prepare_first_start(offprompt_path: Path) -> None:
    """What a client's first start after `init --yes` needs besides the files; called once, last. Nothing yet:
    each server's lists are cached at its first start."""
    del offprompt_path


def run(args: argparse.Namespace) -> int:
    client = CLIENTS[args.client]
    project = (args.project or Path.cwd()).expanduser().absolute()
    client_path: Path = (
        args.config.expanduser().absolute()
        if args.config
        else settings_path(client, _system(), Path.home(), os.environ, project)
    )
    if args.undo:
        print(undo(client, client_path))
        return 0
    if not client_path.exists():
        raise NotFoundError(
            f"{client_path}: no {args.client} config there; pass --config PATH to name the file it uses"
        )
    offprompt_path = (args.offprompt_config or offprompt_config_dir() / f"{client.name}.json").expanduser().absolute()
    plan = Plan(client, client_path, offprompt_path, project)
    if not plan.changes:
        print(f"{client_path} already starts offprompt alone; nothing to do")
        _report(plan)
        return 0
    print(plan.diff(), end="")
    _report(plan)
    if not (args.yes or _confirm()):
        print("nothing written: run again with --yes to write these changes", file=sys.stderr)
        return 0
    backup = plan.write(dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f"))
    print(f"wrote {client_path} (backup: {backup.name}; `offprompt init --client {args.client} --undo` restores it)")
    if not getattr(args, "no_start", False):
        _list_for_the_first_start(offprompt_path)
    print(f"restart {args.client} to use it; `offprompt check --config {offprompt_path}` checks the servers")
    _prepare_first_start(offprompt_path)
    return 0


def _list_for_the_first_start(offprompt_path: Path) -> None:
    """Start every server once and keep the lists, so the client's first start lists every tool at once."""
    from offprompt.serve.front_lists import prime_front_lists

    if prime_front_lists(offprompt_path):
        print(f"started the servers of {offprompt_path} once: the first start lists all their tools at once")
