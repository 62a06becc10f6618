"""The config file: the `mcpServers` block MCP clients already write, plus offprompt's own `offprompt` block.

`load_config(path)` reads a file, `parse_config(data)` a dict already in memory. A problem with the file as a
whole or with the `offprompt` block raises `ConfigError`. A problem inside one server's block only drops that
server: it lands in `LoadedConfig.problems` and the other servers still serve. Every message names the key as a
dotted path (`mcpServers.fs.tools.read_file.off_prompt`), the line it is on, and what is allowed.

Blocks pasted from Claude Desktop, Cursor, Claude Code (`.mcp.json`), VS Code (`servers`, `inputs`), Cline,
Roo Code, Windsurf (`serverUrl`) and Gemini CLI (`httpUrl`) load as they are: their transport keys (`type`,
`transportType`) pick the transport, their `envFile` is read, and their client-side keys (`autoApprove`,
`alwaysAllow`, ...) are ignored. The file may hold `//` and `/* */` comments and trailing commas (JSONC), as
VS Code's `mcp.json` does.

`${VAR}`, `${env:VAR}` and `${VAR:-default}` in any string value come from the environment, so secrets stay out of
the file; `$${` writes a literal `${`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from offprompt.config.jsonc import key_lines, strip_jsonc
from offprompt.config.variables import Loc, interpolate
from offprompt.errors import ConfigError
from offprompt.niceness import BACKGROUND
from offprompt.secret_kinds import SECRET_KINDS

__all__ = [
    "ChromaSettings",
    "HttpServer",
    "LoadedConfig",
    "OffPrompt",
    "OffpromptSettings",
    "SecretsMode",
    "ServerConfig",
    "StdioServer",
    "ToolPolicy",
    "Transport",
    "load_config",
    "parse_config",
    "redact_dsn",
]

OffPrompt: TypeAlias = Literal["auto", "always", "never"]
#: What happens to known-format secrets in a tool's results: replaced by handles, or passed as they are.
SecretsMode: TypeAlias = Literal["redact", "pass"]
Transport: TypeAlias = Literal["streamable_http", "sse"]

_MEMORY_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?")


def _resolve_path(value: Path | None, info: ValidationInfo) -> Path | None:
    """`~` is the home directory; a relative path is relative to the config file's directory."""
    if value is None:
        return None
    path = value.expanduser()
    base = info.context.get("base_dir") if isinstance(info.context, dict) else None
    if not path.is_absolute() and isinstance(base, Path):
        path = base / path
    return path


def _http_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL with a host, e.g. https://example.com/mcp")
    return value


def _scalars_to_str(value: object) -> object:
    """`{"PORT": 8080}` is what people write; the process environment and HTTP headers only hold strings."""
    if not isinstance(value, dict):
        return value
    return {k: json.dumps(v) if isinstance(v, bool | int | float) else v for k, v in value.items()}


class ChromaSettings(BaseModel):
    """Where the vector store lives: on disk (default), in memory, or in a `chroma run` server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["persistent", "ephemeral", "http"] = "persistent"
    url: str | None = None
    auth_token: str | None = Field(default=None, repr=False)  # a secret: kept out of reprs and logs

    _check_url = field_validator("url")(_http_url)

    @model_validator(mode="after")
    def _url_only_for_http(self) -> Self:
        if self.mode == "http" and self.url is None:
            raise ValueError(
                'mode "http" needs a url, the address of `chroma run`, e.g. "url": "http://localhost:8000"'
            )
        if self.mode != "http" and (self.url is not None or self.auth_token is not None):
            raise ValueError(f'url and auth_token are used only with mode "http" (mode is "{self.mode}"); set the mode')
        return self


def redact_dsn(dsn: str) -> str:
    """A connection string fit for a log or an error: its password (in the URL or a `password=` parameter) as ***."""
    parts = urlsplit(dsn)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(^|&)(password)=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _postgres_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("postgresql", "postgres") or not (parts.netloc or "host=" in parts.query):
        # The value may hold a password: show it redacted here, so the message adds no "(got ...)" of its own.
        raise ValueError(
            'must be a PostgreSQL URL, e.g. "postgresql://offprompt@db.example:5432/offprompt" '
            f"(got {redact_dsn(value)!r})"
        )
    return value


class EmbeddingSettings(BaseModel):
    """Which embedding function builds the memory's vectors: a name Chroma knows, and its config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="offprompt-minilm-int8", min_length=1)  # the bundled offline model
    config: dict[str, Any] = Field(default_factory=dict)  # what that function's build_from_config reads


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    return value


class AllowRow(BaseModel):
    """One row of `secrets_allowlist`: a `key = value` finding whose whole value matches `value` (and whose key
    holds `key`, when given) is not a secret (docs/secrets.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    value: str
    key: str = ""
    reason: str = ""

    _check_regex = field_validator("value", "key")(_regex)


class OffpromptSettings(BaseModel):
    """The `offprompt` block: offprompt's own settings. Every key is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_name: str = "default"
    data_dir: Path | None = None  # None: the platform's user data directory
    threshold_tokens: int = Field(default=4000, gt=0)  # clients warn at 10k tokens; stay well below
    preview_tokens: int = Field(default=0, ge=0)  # 0: the reference carries no preview
    outline_tokens: int = Field(default=400, ge=0)  # of a stored text's outline in its reference; 0: none
    intent: bool = True  # proxied tools take an `intent`; a stored result's reference shows passages for it
    blob_threshold_bytes: int = Field(default=256 * 1024, ge=0)  # under "auto", a bigger image/blob is stored
    call_timeout_seconds: float = Field(default=120, gt=0)  # for servers without their own timeout_seconds
    ttl_days: float | None = Field(default=30, gt=0)  # None: keep forever
    max_bytes: int | None = Field(default=2 * 1024**3, gt=0)  # quota of one memory; None: no quota
    max_sessions_per_token: int = Field(default=100, gt=0)  # open HTTP sessions one bearer token may hold
    session_idle_seconds: float = Field(default=600, gt=0)  # an HTTP session without requests this long closes
    #: Rows of exceptions of the user's own, read with the secrets rules' table (docs/secrets.md).
    secrets_allowlist: list[AllowRow] = Field(default_factory=list)
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)
    #: A shared memory: the catalog, texts, lexical index, blobs and indexing queue in this PostgreSQL database.
    postgres: str | None = Field(default=None, repr=False)  # may hold a password: never in a repr or a log
    #: Where the memory lives: "files" (this machine's data directory) or "postgres" (a shared memory, in the
    #: database `postgres` names). Unset: "postgres" when `postgres` is set, else "files".
    store: Literal["files", "postgres"] | None = None
    #: A shared memory's serving replica embeds texts itself (True), or only chunks them and leaves embedding
    #: to `offprompt index` workers (False): it then loads the model only to embed a question.
    indexer: bool = True
    #: A shared memory's local copies of the texts it read, at most (least recently read go first).
    cache_bytes: int = Field(default=512 * 1024**2, gt=0)
    #: The records of one text (a table's, a log's rows for memory_select) take at most this many bytes of JSON.
    records_max_bytes: int = Field(default=64 * 1024**2, gt=0)
    #: How far below the server's priority the embedder runs (its threads and the model's), applied as it starts:
    #: a thread cannot raise its priority again without a privilege.
    embedder_niceness: int = Field(default=BACKGROUND, ge=0, le=19)
    #: A shared memory's secrets table is kept in its database, sealed with this key (at least 32 characters,
    #: the same on every server, e.g. "${env:OFFPROMPT_SECRETS_KEY}"): a handle one server gives, any resolves.
    secrets_key: str | None = Field(default=None, repr=False, min_length=32)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)

    _resolve_data_dir = field_validator("data_dir")(_resolve_path)
    _check_postgres = field_validator("postgres")(_postgres_url)

    @field_validator("memory_name")
    @classmethod
    def _check_memory_name(cls, value: str) -> str:
        if not _MEMORY_NAME.fullmatch(value):
            raise ValueError(
                "must be 1-64 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _store_matches_postgres(self) -> Self:
        if self.store == "postgres" and self.postgres is None:
            raise ValueError('"store": "postgres" needs "postgres", the database URL of the shared memory')
        if self.store == "files" and self.postgres is not None:
            raise ValueError(
                '"store": "files" and "postgres" are both set: remove "postgres", or set "store": "postgres"'
            )
        return self

    @model_validator(mode="after")
    def _indexer_needs_a_shared_memory(self) -> Self:
        if not self.indexer and self.postgres is None:
            raise ValueError(
                '"indexer": false needs a shared memory ("postgres" set): a memory of files is indexed by the '
                "server that stores in it"
            )
        return self

    @model_validator(mode="after")
    def _preview_below_threshold(self) -> Self:
        if self.preview_tokens >= self.threshold_tokens:
            raise ValueError(
                f"preview_tokens ({self.preview_tokens}) must be smaller than threshold_tokens "
                f"({self.threshold_tokens}), else the preview puts the whole result back in the prompt"
            )
        return self

    def override(self, **values: object) -> OffpromptSettings:
        """A copy with command-line values applied (None: flag not given), validated like the file.

        Raises `ConfigError` naming the flag (`memory_name` → `--memory-name`). Relative paths are relative to the
        current directory.
        """
        given = {key: value for key, value in values.items() if value is not None}
        try:
            return OffpromptSettings.model_validate(
                {**self.model_dump(), **given}, context={"base_dir": Path.cwd().absolute()}
            )
        except ValidationError as exc:
            lines = []
            for error in exc.errors():
                flag = "--" + str(error["loc"][0]).replace("_", "-") if error["loc"] else "flags"
                lines.append(f"{flag}: {_pydantic_message(error)}")
            raise ConfigError("\n".join(lines)) from None


def _known_secret_kinds(value: list[str]) -> list[str]:
    unknown = [kind for kind in value if kind not in SECRET_KINDS]
    if unknown:
        raise ValueError(f"unknown kind of secret {unknown[0]!r}; the kinds are: {', '.join(sorted(SECRET_KINDS))}")
    return value


#: A server's `max_argument_bytes` when the config gives none.
DEFAULT_MAX_ARGUMENT_BYTES = 32 * 1024 * 1024


class ToolPolicy(BaseModel):
    """One tool's entry under a server's `tools`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    off_prompt: OffPrompt | None = None
    secrets: SecretsMode | None = None
    secrets_allow: list[str] = Field(default_factory=list)

    _known_kinds = field_validator("secrets_allow")(_known_secret_kinds)


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    off_prompt: OffPrompt = "auto"
    secrets: SecretsMode = "redact"  # "pass" for a tool whose job is to show a secret to the user
    #: Kinds of secret (detector names) left as they are in this server's results: a narrower way out than "pass".
    secrets_allow: list[str] = Field(default_factory=list)
    tools: dict[str, ToolPolicy] = Field(default_factory=dict)  # keyed by the downstream tool name
    timeout_seconds: float | None = Field(default=None, gt=0)  # None: offprompt.call_timeout_seconds
    disabled: bool = False
    roots: list[str] = Field(default_factory=list)  # roots/list for clients that send none (paths or URIs)
    prefix: bool = True  # False: its tools, prompts and resources keep their own names (no `{server}__`)
    per_session: bool = False  # True: over HTTP, a process of its own for each client session
    #: Other servers that may receive this server's secrets (their handles' values) and sensitive outputs.
    share_with: list[str] = Field(default_factory=list)
    #: The servers this server's stored outputs may be passed to as `⟦memory:…⟧` (None: any; its own always).
    flows_to: list[str] | None = None
    #: The largest arguments a call to this server may go out with once `⟦memory:…⟧` references are filled in.
    max_argument_bytes: int = Field(default=DEFAULT_MAX_ARGUMENT_BYTES, gt=0)
    #: The entry as the file wrote it (`${env:…}` unexpanded): what the tool-list cache is keyed by.
    _written: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def written(self) -> dict[str, Any]:
        return self._written

    def policy_for(self, tool_name: str) -> OffPrompt:
        """The tool's own `off_prompt` if set, else the server's."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.off_prompt is not None:
            return tool.off_prompt
        return self.off_prompt

    _known_kinds = field_validator("secrets_allow")(_known_secret_kinds)

    def secrets_allow_for(self, tool_name: str) -> frozenset[str]:
        """The kinds of secret left as they are in this tool's results: the server's and the tool's own."""
        tool = self.tools.get(tool_name)
        return frozenset(self.secrets_allow) | frozenset(tool.secrets_allow if tool is not None else ())

    def secrets_for(self, tool_name: str) -> SecretsMode:
        """The tool's own `secrets` if set, else the server's."""
        tool = self.tools.get(tool_name)
        if tool is not None and tool.secrets is not None:
            return tool.secrets
        return self.secrets


class StdioServer(_ServerBase):
    """A local server offprompt starts as a subprocess and talks to over stdin/stdout."""

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # `envFile` is already merged in (env wins)
    cwd: Path | None = None

    _env_to_str = field_validator("env", mode="before")(_scalars_to_str)
    _resolve_cwd = field_validator("cwd")(_resolve_path)

    @field_validator("command")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name the program to start, e.g. npx or uvx")
        return value

    @property
    def transport(self) -> Literal["stdio"]:
        return "stdio"


class HttpServer(_ServerBase):
    """A remote server reached over streamable HTTP or SSE."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Transport = "streamable_http"  # when omitted: "sse" if the URL path ends with /sse

    _check_url = field_validator("url")(_http_url)
    _headers_to_str = field_validator("headers", mode="before")(_scalars_to_str)

    @model_validator(mode="before")
    @classmethod
    def _transport_from_url(cls, data: Any) -> Any:
        if isinstance(data, dict) and "transport" not in data and isinstance(data.get("url"), str):
            path = urlsplit(data["url"]).path.rstrip("/")
            return {**data, "transport": "sse" if path.endswith("/sse") else "streamable_http"}
        return data


ServerConfig: TypeAlias = StdioServer | HttpServer


def unknown_tool_entries(server: ServerConfig, tool_names: Collection[str]) -> list[tuple[str, str | None]]:
    """The per-tool entries under a server's `tools` that name none of its tools, each with the closest real
    name (a typo there would leave the real tool on the server's default, secrets into the prompt)."""
    found = []
    for entry in server.tools:
        if entry not in tool_names:
            close = difflib.get_close_matches(entry, list(tool_names), n=1, cutoff=0.6)
            found.append((entry, close[0] if close else None))
    return found


def unknown_tool_message(place: str, server: str, entry: str, suggestion: str | None) -> str:
    """One line: where the entry is, that the server has no such tool, and what happens because of it."""
    hint = f'; did you mean "{suggestion}"?' if suggestion else ""
    return (
        f'{place}: MCP server "{server}" has no tool "{entry}", so this entry applies to nothing{hint} '
        f"Its tools follow the server's off_prompt until the name is fixed."
    )


@dataclass(frozen=True)
class LoadedConfig:
    """A config file, read. `servers` holds only the good, enabled servers, in file order."""

    settings: OffpromptSettings
    servers: dict[str, ServerConfig]
    problems: dict[str, str] = field(default_factory=dict)  # server name → one line: where, what, what to do
    #: The same problems one by one: server name → each problem (a line each).
    server_problems: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Problems of the file as a whole and its `offprompt` block, when read with `keep_going` (else raised).
    file_problems: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()  # servers with "disabled": true
    warnings: tuple[str, ...] = ()  # keys that were ignored, keys given twice
    source: str = "<config>"
    servers_key: str = "mcpServers"  # or "servers", as VS Code writes it
    lines: Mapping[Loc, int] = field(default_factory=dict, repr=False)

    def place(self, server: str, *keys: str | int) -> str:
        """`file:line: mcpServers.name.key`, to name a field in a message (e.g. a `url` that can't be reached)."""
        return _place(self.source, self.lines, (self.servers_key, server, *keys))


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
            f"not {_kind(data)}"
        )
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(
            f"{ctx.place(('servers',))}: both mcpServers and servers are given; keep one "
            "(servers is VS Code's name for mcpServers)"
        )
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
    servers_key = "servers" if "servers" in data else "mcpServers"
    blocks = data.get(servers_key, {})
    if not isinstance(blocks, dict):
        raise ConfigError(f"{ctx.place((servers_key,))}: must be an object of named servers, not {_kind(blocks)}")

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


_TOP_LEVEL = ("offprompt", "mcpServers", "servers", "inputs", "$schema")  # inputs: VS Code's prompts, unused


def _check_top_level(data: dict[str, Any], ctx: _Context) -> None:
    errors = []
    for key in data:
        if key not in _TOP_LEVEL:
            hint = _suggest(key, _TOP_LEVEL)
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
        raise ConfigError(ctx.message(loc, f"must be an object, not {_kind(block)}"))
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
            [(loc, f"must be an object with command (a local server) or url (a remote one), not {_kind(raw)}")]
        )
    block: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _UNSUPPORTED_KEYS:
            warnings.append(ctx.message((*loc, key), f"ignored: {_UNSUPPORTED_KEYS[key]}"))
        elif key not in _CLIENT_KEYS:
            block[key] = value
    errors: list[tuple[Loc, str]] = []
    renamed: dict[str, str] = {}  # our key → the key the file used, for messages

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

    local, remote = "command" in block, "url" in block
    typos: dict[str, str] = {}
    if not local and not remote:
        typos = {key: hint for key in block if (hint := _suggest(key, ("command", "url")))}
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


def _read_env_file(value: object, loc: Loc, ctx: _Context) -> dict[str, str]:
    """A dotenv file as VS Code and Cursor read it: KEY=VALUE lines, `#` comments, optional quotes and `export`."""
    if not isinstance(value, str):
        raise _BlockError([(loc, f"should be the path of a .env file (got {_show(value)})")])
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
        return _place(self.source, self.lines, loc)

    def message(self, loc: Loc, text: str) -> str:
        return f"{self.place(loc)}: {text}"


def _place(source: str, lines: Mapping[Loc, int], loc: Loc) -> str:
    """`file:line: dotted.path`; the line of the deepest part of the path that is in the file."""
    line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
    where = source if line is None else f"{source}:{line}"
    return f"{where}: {_dotted(loc)}" if loc else where


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            shown = part if re.fullmatch(r"[A-Za-z0-9_$-]+", part) else json.dumps(part)
            out += f".{shown}" if out else shown
    return out


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def _show(value: object) -> str:
    if isinstance(value, dict | list):
        return _kind(value)
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:57] + '..."'


def _suggest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The choice `word` is most likely a typo of, ignoring case."""
    by_lower = {choice.lower(): choice for choice in choices}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.7)
    return by_lower[found[0]] if found else None


_FRIENDLY = {
    "dict_type": "should be an object",
    "list_type": "should be a list",
    "string_type": "should be a string",
    "int_type": "should be a whole number",
    "int_parsing": "should be a whole number",
    "int_from_float": "should be a whole number",
    "float_type": "should be a number",
    "float_parsing": "should be a number",
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
}


def _pydantic_message(error: Any) -> str:
    text = _FRIENDLY.get(error["type"]) or str(error["msg"])
    text = text.removeprefix("Value error, ").removeprefix("Input ")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


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
            text = _pydantic_message(error)
            value = _value_at(raw, where)
            if value is not _ABSENT and not isinstance(value, dict | list) and "(got" not in text:
                text += f" (got {_show(value)})"
        errors.append(((*loc, *where), text))
    return errors


def _unknown_key(key: str, model: type[BaseModel] | None) -> str:
    if model is None:
        return f"unknown key '{key}'"
    fields = list(model.model_fields)
    accepted = fields
    if issubclass(model, _ServerBase):  # the transport's own keys first, then the shared ones
        fields = sorted(fields, key=lambda name: name in _ServerBase.model_fields)
        accepted = [*fields, *_ACCEPTED_KEYS]
    if model is HttpServer and key in _LOCAL_KEYS:
        return f"'{key}' is for a local server (one with a command); a remote one (url) takes {', '.join(fields)}"
    if model is StdioServer and key in (*_REMOTE_KEYS, "serverUrl", "httpUrl"):
        return f"'{key}' is for a remote server (one with a url); a local one (command) takes {', '.join(fields)}"
    hint = _suggest(key, accepted)
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
