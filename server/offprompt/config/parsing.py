"""Reading the config file: JSONC text → `${VAR}` expanded → the models, with every problem named by its key and
line. A problem inside one server's block drops that server only (`LoadedConfig.problems`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from offprompt.config.jsonc import key_lines, strip_jsonc
from offprompt.config.messages import kind_of, place, pydantic_message, show, suggest
from offprompt.config.models import (
    HttpServer,
    LoadedConfig,
    OffpromptSettings,
    ServerBase,
    ServerConfig,
    StdioServer,
)
from offprompt.config.variables import Loc, interpolate
from offprompt.errors import ConfigError

# --- reading -----------------------------------------------------------------------------------------------


def load_config(
    path: Path | str, *, environ: Mapping[str, str] | None = None, check_paths: bool = True, keep_going: bool = False
) -> LoadedConfig:
    """Read a config file. Raises `ConfigError` for a missing file, bad JSON or a bad `offprompt` block.

    `environ` (default `os.environ`) feeds `${VAR}`. With `check_paths`, a server whose `command` is not found on
    PATH or whose `cwd` is not a directory is reported in `problems`. With `keep_going`, a bad `offprompt` block
    or an unknown top-level key is reported in `file_problems` (the defaults stand in) and the servers are read.
    """
    path = Path(path).expanduser()
    what_to_do = "pass --config the path of a JSON file holding an mcpServers block (see mcp.json.example)"
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: Notepad's byte-order mark
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; {what_to_do}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file; {what_to_do}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None
    clean = strip_jsonc(text)
    try:
        data = json.loads(clean)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    return parse_config(
        data,
        source=str(path),
        text=clean,
        base_dir=path.parent.absolute(),
        environ=environ,
        check_paths=check_paths,
        keep_going=keep_going,
    )


def parse_config(
    data: object,
    source: str = "<config>",
    text: str | None = None,
    *,
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    check_paths: bool = False,
    keep_going: bool = False,
) -> LoadedConfig:
    """Validate a config already parsed from JSON. `text`, the file it came from, gives messages line numbers.

    `base_dir` anchors relative `data_dir`, `cwd` and `envFile` paths (default: left relative).
    """
    lines, duplicates = key_lines(strip_jsonc(text)) if text is not None else ({}, [])
    ctx = _Context(source, lines, os.environ if environ is None else environ, base_dir)
    warnings = [
        f"{ctx.place(loc)}: given twice (lines {first} and {lines[loc]}); the last one is used"
        for loc, first in duplicates
    ]
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be an object holding mcpServers (and optionally offprompt), "
            f"not {kind_of(data)}"
        )
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(
            f"{ctx.place(('servers',))}: both mcpServers and servers are given; keep one "
            "(servers is VS Code's name for mcpServers)"
        )
    settings, file_problems = _file_level(data, ctx, keep_going)
    servers_key = "servers" if "servers" in data else "mcpServers"
    blocks = data.get(servers_key, {})
    if not isinstance(blocks, dict):
        raise ConfigError(f"{ctx.place((servers_key,))}: must be an object of named servers, not {kind_of(blocks)}")
    servers, problems, disabled = _parse_servers(blocks, servers_key, ctx, warnings, check_paths)
    return LoadedConfig(
        settings=settings,
        servers=servers,
        problems={name: "; ".join(found) for name, found in problems.items()},
        server_problems={name: tuple(found) for name, found in problems.items()},
        file_problems=tuple(file_problems),
        disabled=tuple(disabled),
        warnings=tuple(warnings),
        source=source,
        servers_key=servers_key,
        lines=lines,
    )


def _file_level(data: dict[str, Any], ctx: _Context, keep_going: bool) -> tuple[OffpromptSettings, list[str]]:
    """The `offprompt` block and the top-level keys: a problem raises, or with `keep_going` is listed (the
    defaults stand in)."""
    file_problems: list[str] = []
    settings = OffpromptSettings()
    try:
        _check_top_level(data, ctx)
    except ConfigError as exc:
        if not keep_going:
            raise
        file_problems += str(exc).splitlines()
    try:
        settings = _parse_settings(data.get("offprompt", {}), ctx)
    except ConfigError as exc:
        if not keep_going:
            raise
        file_problems += str(exc).splitlines()
    return settings, file_problems


def _parse_servers(
    blocks: dict[str, Any], servers_key: str, ctx: _Context, warnings: list[str], check_paths: bool
) -> tuple[dict[str, ServerConfig], dict[str, list[str]], list[str]]:
    """Each server's block: the good ones, the problems of the others by name, and the disabled ones' names."""
    servers: dict[str, ServerConfig] = {}
    problems: dict[str, list[str]] = {}
    disabled: list[str] = []
    for name, block in blocks.items():
        loc: Loc = (servers_key, name)
        if isinstance(block, dict) and block.get("disabled") is True:
            disabled.append(name)  # not validated: a switched-off server's unset token is no problem
            continue
        try:
            server = _parse_server(block, loc, ctx, warnings)
            if check_paths:
                _check_server_paths(server, loc, ctx)
        except _BlockError as exc:
            problems[name] = [ctx.message(error_loc, text) for error_loc, text in exc.errors]
            continue
        servers[name] = server
    return servers, problems, disabled


_TOP_LEVEL = ("offprompt", "mcpServers", "servers", "inputs", "$schema")  # inputs: VS Code's prompts, unused


def _check_top_level(data: dict[str, Any], ctx: _Context) -> None:
    errors = []
    for key in data:
        if key not in _TOP_LEVEL:
            hint = suggest(key, _TOP_LEVEL)
            errors.append(
                ctx.message(
                    (key,),
                    f"unknown key '{key}' — did you mean '{hint}'?"
                    if hint
                    else f"unknown key '{key}'; the top level takes offprompt and mcpServers (or servers). "
                    "If this is a client's own settings file, copy its mcpServers block into a file of its own",
                )
            )
    if errors:
        raise ConfigError("\n".join(errors))


def _parse_settings(block: object, ctx: _Context) -> OffpromptSettings:
    loc: Loc = ("offprompt",)
    if not isinstance(block, dict):
        raise ConfigError(ctx.message(loc, f"must be an object, not {kind_of(block)}"))
    errors: list[tuple[Loc, str]] = []
    expanded = interpolate(block, loc, ctx.environ, errors)
    if not errors:
        try:
            return OffpromptSettings.model_validate(expanded, context={"base_dir": ctx.base_dir})
        except ValidationError as exc:
            errors = _translate(exc, loc, OffpromptSettings, block, {})
    raise ConfigError("\n".join(ctx.message(error_loc, text) for error_loc, text in errors))


# --- one server block --------------------------------------------------------------------------------------

# Keys clients write for their own use. They change nothing in offprompt, so they are dropped without a word.
_CLIENT_KEYS = frozenset({"autoApprove", "alwaysAllow", "description", "dev", "gallery", "version", "trust"})
# Keys that mean something offprompt does not do: dropped, with a warning so nobody relies on them.
_UNSUPPORTED_KEYS = {
    "timeout": "offprompt reads timeout_seconds (in seconds) instead",
    "disabledTools": "offprompt lists every tool; set their off_prompt under tools instead",
    "includeTools": "offprompt lists every tool",
    "excludeTools": "offprompt lists every tool",
    "watchPaths": "offprompt does not restart servers when files change",
    "oauth": "offprompt does no OAuth sign-in; send a token in headers instead",
    "auth": "offprompt does no OAuth sign-in; send a token in headers instead",
}
_LOCAL_KEYS = ("command", "args", "env", "envFile", "cwd")
_REMOTE_KEYS = ("url", "headers", "transport")
_ACCEPTED_KEYS = ("type", "transportType", "serverUrl", "httpUrl", "envFile", *_CLIENT_KEYS, *_UNSUPPORTED_KEYS)


class _BlockError(Exception):
    def __init__(self, errors: list[tuple[Loc, str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def _transport_kind(value: object) -> Literal["stdio", "streamable_http", "sse"] | None:
    """Every spelling clients use: "http" (Claude Code, VS Code), "streamableHttp" (Cline), "streamable-http"."""
    if not isinstance(value, str):
        return None
    word = value.lower().replace("-", "").replace("_", "")
    if word == "stdio":
        return "stdio"
    if word in ("http", "streamablehttp"):
        return "streamable_http"
    if word == "sse":
        return "sse"
    return None


def _parse_server(raw: object, loc: Loc, ctx: _Context, warnings: list[str]) -> ServerConfig:
    if not isinstance(raw, dict):
        raise _BlockError(
            [(loc, f"must be an object with command (a local server) or url (a remote one), not {kind_of(raw)}")]
        )
    block = _own_keys(raw, loc, ctx, warnings)
    errors: list[tuple[Loc, str]] = []
    renamed: dict[str, str] = {}  # our key → the key the file used, for messages
    kind, kind_key = _transport(block, loc, errors, renamed)
    local = _is_local(block, loc, kind, kind_key, errors, renamed)

    model: type[StdioServer] | type[HttpServer] = StdioServer if local else HttpServer
    if model is HttpServer and kind is not None and "transport" not in block:
        block["transport"] = kind
    env_file = block.pop("envFile", None) if model is StdioServer else None
    expanded = interpolate(block, loc, ctx.environ, errors)
    if env_file is not None:
        env_file = interpolate(env_file, (*loc, "envFile"), ctx.environ, errors)
    if errors and env_file is not None:
        raise _BlockError(errors)
    assert isinstance(expanded, dict)
    if env_file is not None:
        file_env = _read_env_file(env_file, (*loc, "envFile"), ctx)
        if isinstance(expanded.get("env", {}), dict):
            expanded["env"] = {**file_env, **expanded.get("env", {})}
    try:
        server = model.model_validate(expanded, context={"base_dir": ctx.base_dir})
    except ValidationError as exc:
        said = {where for where, _ in errors}  # a variable not set is the problem there, not the value's form
        raise _BlockError(errors + [e for e in _translate(exc, loc, model, raw, renamed) if e[0] not in said]) from None
    if errors:  # a typo read on, or a variable not set: every problem of the block is said at once
        raise _BlockError(errors)
    server._written = dict(raw)
    return server


def _own_keys(raw: dict[str, Any], loc: Loc, ctx: _Context, warnings: list[str]) -> dict[str, Any]:
    """The block without the keys clients write for their own use (dropped silently) or that offprompt does
    not do (dropped with a warning)."""
    block: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _UNSUPPORTED_KEYS:
            warnings.append(ctx.message((*loc, key), f"ignored: {_UNSUPPORTED_KEYS[key]}"))
        elif key not in _CLIENT_KEYS:
            block[key] = value
    return block


def _transport(
    block: dict[str, Any], loc: Loc, errors: list[tuple[Loc, str]], renamed: dict[str, str]
) -> tuple[str | None, str]:
    """The transport the block's keys name (`type`, `transportType`, `transport`, a URL alias), and the key
    that names it; the aliases of `url` read as `url`."""
    kind: str | None = None
    kind_key = ""
    for key in ("type", "transportType", "transport"):
        if key not in block:
            continue
        value = block[key] if key == "transport" else block.pop(key)
        found = _transport_kind(value)
        if found is None or (key == "transport" and found == "stdio"):
            allowed = '"streamable_http" or "sse"' if key == "transport" else '"stdio", "http" or "sse"'
            errors.append(((*loc, key), f"unknown transport {json.dumps(value)}; use {allowed}"))
        elif kind is not None and found != kind:
            errors.append(((*loc, key), f"says {json.dumps(value)} but {kind_key} says another transport; keep one"))
        else:
            kind, kind_key = found, key
            if key == "transport":
                block[key] = found
    for alias in ("serverUrl", "httpUrl"):  # Windsurf; Gemini CLI (always streamable HTTP)
        if alias not in block:
            continue
        if "url" in block:
            errors.append(((*loc, alias), f"both url and {alias} are given; keep one"))
            continue
        block["url"] = block.pop(alias)
        renamed["url"] = alias
        if alias == "httpUrl" and kind is None:
            kind, kind_key = "streamable_http", alias
    return kind, kind_key


def _is_local(
    block: dict[str, Any],
    loc: Loc,
    kind: str | None,
    kind_key: str,
    errors: list[tuple[Loc, str]],
    renamed: dict[str, str],
) -> bool:
    """Whether the block is a local server (a command) or a remote one (a url), a typo of either read on as if
    spelled right; raises when there is no transport to read the rest against."""
    local, remote = "command" in block, "url" in block
    typos: dict[str, str] = {}
    if not local and not remote:
        typos = {key: hint for key in block if (hint := suggest(key, ("command", "url")))}
        errors += [((*loc, key), f"unknown key '{key}' — did you mean '{hint}'?") for key, hint in typos.items()]
        for key, hint in typos.items():  # read on as if it were spelled right: the block's other problems too
            block[hint] = block.pop(key)
            renamed[hint] = key
        local, remote = "command" in block, "url" in block
        if not typos:
            errors.append(
                (loc, "has neither command (a local server offprompt starts) nor url (a remote one); add one")
            )
    if local and remote:
        errors.append((loc, "has both command (a local server) and url (a remote one); split it into two servers"))
    elif local and kind not in (None, "stdio"):
        errors.append(((*loc, kind_key), 'says a remote transport, but the server has a command; use "stdio" or a url'))
    elif remote and kind == "stdio":
        errors.append(((*loc, kind_key), 'says "stdio", but the server has a url; use "http" or "sse", or a command'))
    if errors and (local == remote or len(errors) > len(typos)):
        raise _BlockError(errors)  # no transport to read the rest against
    return local


def _read_env_file(value: object, loc: Loc, ctx: _Context) -> dict[str, str]:
    """A dotenv file as VS Code and Cursor read it: KEY=VALUE lines, `#` comments, optional quotes and `export`."""
    if not isinstance(value, str):
        raise _BlockError([(loc, f"should be the path of a .env file (got {show(value)})")])
    path = Path(value).expanduser()
    if not path.is_absolute() and ctx.base_dir is not None:
        path = ctx.base_dir / path
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise _BlockError([(loc, f"cannot read {path} ({reason}); create it or remove envFile")]) from None
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, val = line.removeprefix("export ").partition("=")
        key, val = key.strip(), val.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise _BlockError([(loc, f"{path} line {number} is not KEY=VALUE; fix or remove that line")])
        if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
            val = val[1:-1]
        elif " #" in val:
            val = val.split(" #", 1)[0].rstrip()
        env[key] = val
    return env


def _check_server_paths(server: ServerConfig, loc: Loc, ctx: _Context) -> None:
    if not isinstance(server, StdioServer):
        return
    errors: list[tuple[Loc, str]] = []
    if server.cwd is not None and not server.cwd.is_dir():
        errors.append(((*loc, "cwd"), f"{server.cwd} is not a directory; create it or fix the path"))
    command = Path(server.command).expanduser()
    if len(command.parts) > 1 and not command.is_absolute():
        command = (server.cwd or Path.cwd()) / command  # a relative path runs from the server's cwd
        found = command.is_file() and os.access(command, os.X_OK)
    elif len(command.parts) > 1:
        found = command.is_file() and os.access(command, os.X_OK)
    else:
        search = server.env.get("PATH", ctx.environ.get("PATH", os.defpath))
        found = shutil.which(server.command, path=search) is not None
    if not found:
        errors.append(
            ((*loc, "command"), f"{json.dumps(server.command)} was not found on PATH; install it or give its full path")
        )
    if errors:
        raise _BlockError(errors)


# --- messages ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    source: str
    lines: Mapping[Loc, int]
    environ: Mapping[str, str]
    base_dir: Path | None

    def place(self, loc: Loc) -> str:
        return place(self.source, self.lines, loc)

    def message(self, loc: Loc, text: str) -> str:
        return f"{self.place(loc)}: {text}"


def _translate(
    exc: ValidationError, loc: Loc, model: type[BaseModel], raw: object, renamed: Mapping[str, str]
) -> list[tuple[Loc, str]]:
    """Pydantic's errors as (place, message). Values shown are the file's, before `${VAR}`: no secret leaks."""
    errors: list[tuple[Loc, str]] = []
    for error in exc.errors():
        where: Loc = tuple(error["loc"])
        if where and isinstance(where[0], str) and where[0] in renamed:
            where = (renamed[where[0]], *where[1:])
        if error["type"] == "extra_forbidden":
            key = str(where[-1])
            text = _unknown_key(key, _model_at(model, where[:-1]))
        elif error["type"] == "missing":
            text = f"missing required key '{where[-1]}'"
        else:
            text = pydantic_message(error)
            value = _value_at(raw, where)
            if value is not _ABSENT and not isinstance(value, dict | list) and "(got" not in text:
                text += f" (got {show(value)})"
        errors.append(((*loc, *where), text))
    return errors


def _unknown_key(key: str, model: type[BaseModel] | None) -> str:
    if model is None:
        return f"unknown key '{key}'"
    fields = list(model.model_fields)
    accepted = fields
    if issubclass(model, ServerBase):  # the transport's own keys first, then the shared ones
        fields = sorted(fields, key=lambda name: name in ServerBase.model_fields)
        accepted = [*fields, *_ACCEPTED_KEYS]
    if model is HttpServer and key in _LOCAL_KEYS:
        return f"'{key}' is for a local server (one with a command); a remote one (url) takes {', '.join(fields)}"
    if model is StdioServer and key in (*_REMOTE_KEYS, "serverUrl", "httpUrl"):
        return f"'{key}' is for a remote server (one with a url); a local one (command) takes {', '.join(fields)}"
    hint = suggest(key, accepted)
    if hint:
        return f"unknown key '{key}' — did you mean '{hint}'?"
    return f"unknown key '{key}'; allowed here: {', '.join(fields)}"


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model that validates the object at `loc` inside `model`, to list the keys allowed there."""
    current: Any = model
    expect_key = False
    for part in loc:
        if expect_key:  # the key of a dict[str, Model]
            expect_key = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return None
        annotation = current.model_fields[str(part)].annotation
        if typing.get_origin(annotation) is dict:
            current, expect_key = typing.get_args(annotation)[1], True
        else:
            members = typing.get_args(annotation) or (annotation,)
            current = next((m for m in members if isinstance(m, type) and issubclass(m, BaseModel)), None)
    return current if isinstance(current, type) and issubclass(current, BaseModel) and not expect_key else None


_ABSENT = object()


def _value_at(value: object, loc: Loc) -> object:
    for part in loc:
        if isinstance(value, dict) and part in value:  # noqa: SIM114 (one test per type reads better)
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return _ABSENT
    return value
