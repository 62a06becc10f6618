"""The public names of the downstreams' tools, prompts and resources (`{server}__{name}`, cut to 64 with a
stable hash; a server's own names with `"prefix": false`), and the `Route` a public tool name goes by."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcp_types as mt

from offprompt.config import OffPrompt, SecretsMode
from offprompt.proxy.intent import with_intent

if TYPE_CHECKING:
    from offprompt.proxy.downstream import Downstream

MAX_NAME = 64
SEPARATOR = "__"
#: Names offprompt keeps for its own tools (memory_load, ...): an unprefixed server's tool may not take one.
RESERVED_PREFIX = "memory_"


def public_name(server: str, tool: str, *, force_hash: bool = False) -> str:
    """`{server}__{tool}` with characters outside [A-Za-z0-9_-] made `_`, cut to 64 with a stable hash."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}{SEPARATOR}{tool}")
    if len(name) <= MAX_NAME and not force_hash:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def collision_message(server: str, kind: str, name: str, other: str | None) -> str:
    """One line: which unprefixed name clashes with what, that it is left out, and the fix."""
    clash = (
        f'names starting with "{RESERVED_PREFIX}" are offprompt\'s own tools'
        if other is None
        else f'MCP server "{other}" lists a {kind} under that name too'
    )
    fix = f'"prefix": true on "{server}"' if other is None else f'"prefix": true on "{server}" or "{other}"'
    return (
        f'MCP server "{server}" lists {kind} "{name}" under its own name ("prefix": false), but {clash}: '
        f'"{server}"\'s {kind} is left out. Set {fix} in the offprompt config (mcpServers.{server}.prefix).'
    )


def tool_labels(server: str, tools: Sequence[mt.Tool]) -> tuple[list[str], list[str]]:
    """Each tool's name, the second and later of one name given `__2`, `__3`, … so no two are listed alike (a
    client keeps one of two tools of one name, or refuses the list); and a line for each name listed twice."""
    seen: dict[str, int] = {}
    labels: list[str] = []
    for tool in tools:
        seen[tool.name] = seen.get(tool.name, 0) + 1
        labels.append(tool.name if seen[tool.name] == 1 else f"{tool.name}{SEPARATOR}{seen[tool.name]}")
    repeated = [
        f'MCP server "{server}" lists tool "{name}" {count} times; offprompt lists them as "{name}", '
        + ", ".join(f'"{name}{SEPARATOR}{n}"' for n in range(2, count + 1))
        + f' (each calls "{name}"). Tell the server\'s authors.'
        for name, count in seen.items()
        if count > 1
    ]
    return labels, repeated


@dataclass(frozen=True, slots=True)
class Route:
    """Where a public tool name goes, and what the config says of that tool: settled when the routes are built,
    so a call reads them here instead of asking the config each time. Two routes are equal by server and tool."""

    server: str
    tool: str
    mode: OffPrompt = field(default="auto", compare=False)
    secrets: SecretsMode = field(default="redact", compare=False)
    #: The tool's `intent` argument is offprompt's (added to its schema when listed): never forwarded.
    intent: bool = field(default=False, compare=False)
    secrets_allow: frozenset[str] = field(default=frozenset(), compare=False)
    #: The tool's input schema as its server lists it (without offprompt's `intent`).
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    max_argument_bytes: int | None = field(default=None, compare=False)


def route_tools(
    downstreams: Mapping[str, Downstream],
    intent: bool,
    clash_of: Callable[[str, str, str, Route | str | None], str | None],
) -> tuple[dict[str, Route], list[mt.Tool], list[str], list[str]]:
    """Every downstream tool under its public name (with offprompt's `intent` when `intent`) and its route; the
    clashes of unprefixed names (`clash_of` says each, or None when the name is free) and the names a server
    lists more than once."""
    routes: dict[str, Route] = {}
    listed: list[mt.Tool] = []
    collisions: list[str] = []
    duplicates: list[str] = []
    for name, downstream in downstreams.items():
        labels, repeated = tool_labels(name, downstream.tools)
        duplicates += repeated
        for tool, label in zip(downstream.tools, labels, strict=True):
            if downstream.config.prefix:
                public = public_name(name, label)
                if public in routes:  # "a__b"+"c" and "a"+"b__c" meet: keep both, apart
                    public = public_name(name, label, force_hash=True)
            else:
                public = label
                clash = clash_of(name, "tool", public, routes.get(public))
                if clash is not None:
                    collisions.append(clash)
                    continue
            update: dict[str, Any] = {"name": public, "output_schema": None}
            schema = with_intent(tool.input_schema) if intent else None
            if schema is not None:
                update["input_schema"] = schema
            config = downstream.config
            mode, secrets = config.policy_for(tool.name), config.secrets_for(tool.name)
            allow = config.secrets_allow_for(tool.name)
            routes[public] = Route(
                name,
                tool.name,
                mode,
                secrets,
                schema is not None,
                allow,
                tool.input_schema,
                config.max_argument_bytes,
            )
            listed.append(tool.model_copy(update=update))
    return routes, listed, collisions, duplicates
