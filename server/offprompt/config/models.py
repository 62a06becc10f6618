"""The config's models: the `offprompt` block's settings, one server's block (local or remote) and its tools'
entries, and `LoadedConfig`, a file as read. Validation of one value is here; reading a file is `parsing.py`."""

from __future__ import annotations

import difflib
import json
import re
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

from offprompt.config.messages import place, pydantic_message
from offprompt.config.variables import Loc
from offprompt.errors import ConfigError
from offprompt.niceness import BACKGROUND
from offprompt.secret_kinds import SECRET_KINDS

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
                lines.append(f"{flag}: {pydantic_message(error)}")
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


class ServerBase(BaseModel):
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


class StdioServer(ServerBase):
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


class HttpServer(ServerBase):
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
        return place(self.source, self.lines, (self.servers_key, server, *keys))
