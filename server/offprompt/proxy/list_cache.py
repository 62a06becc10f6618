"""Each downstream's last lists (tools, prompts, resources, resource templates), kept between runs so a
client's lists are answered at once.

A client gives `tools/list` a few seconds (Claude Code 5); an `npx -y` server on its first run, or any server
that loads a model, takes longer to start. With the lists it gave last time, offprompt answers at once and a
call to one of its tools (or a prompt or resource read) waits for the server; when the server's live lists
differ, the clients are told with `notifications/{tools,prompts,resources}/list_changed`.

The cache sits in the user's cache directory (`OFFPROMPT_CACHE_DIR` sets another), not in a memory's, so every
memory, `--ephemeral` runs and sibling processes share it. A server's entry is found by a hash of its config
entry as written (`${env:…}` unexpanded, so no secret is hashed) and of the program its command resolves to.
Files are 0600 and hold the lists only (names, descriptions, schemas, URIs), never a call's result, and their
secrets as handles (`list_secrets.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as mt

from offprompt.cache_dir import CACHE_ENV, cache_directory
from offprompt.private_dirs import private_dir

__all__ = ["CACHE_ENV", "CachedLists", "ListCache", "as_wire", "entry_key"]

logger = logging.getLogger(__name__)

_VERSION = 3  # of the file's shape: a file of another version is ignored (1 held the tools alone, 2 secrets raw)


def entry_key(name: str, written: Mapping[str, Any], command: str | None) -> str:
    """The cache key of a server: its name, its entry as written, and the program its command resolves to."""
    resolved = (shutil.which(command) or command) if command else ""
    text = json.dumps([_VERSION, name, written, resolved], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def as_wire(items: Sequence[Any]) -> list[dict[str, Any]]:
    """Listed items as the JSON a server sent, to keep them or to compare two lists."""
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]


@dataclass(frozen=True, slots=True)
class CachedLists:
    """What a server listed: its tools, and its prompts, resources and templates (empty if it offers none)."""

    tools: list[mt.Tool]
    prompts: list[mt.Prompt] = field(default_factory=list)
    resources: list[mt.Resource] = field(default_factory=list)
    templates: list[mt.ResourceTemplate] = field(default_factory=list)

    def wire(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "tools": as_wire(self.tools),
            "prompts": as_wire(self.prompts),
            "resources": as_wire(self.resources),
            "templates": as_wire(self.templates),
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> CachedLists:
        return cls(
            tools=[mt.Tool.model_validate(t) for t in data["tools"]],
            prompts=[mt.Prompt.model_validate(p) for p in data.get("prompts", [])],
            resources=[mt.Resource.model_validate(r) for r in data.get("resources", [])],
            templates=[mt.ResourceTemplate.model_validate(t) for t in data.get("templates", [])],
        )


@dataclass(frozen=True, slots=True)
class ListCache:
    """The cached lists in one directory, a file per server."""

    directory: Path

    @classmethod
    def default(cls) -> ListCache:
        return cls(cache_directory("lists"))

    def lists(self, key: str) -> CachedLists | None:
        """What the server listed last time, or None (never listed, or the file is unreadable)."""
        try:
            data = json.loads((self.directory / f"{key}.json").read_text())
            if data.get("version") != _VERSION:
                return None
            return CachedLists.from_wire(data)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged cache costs a wait, never a start
            logger.debug("the cached lists %s are unreadable: %r", key, exc)
            return None

    def save(self, key: str, lists: CachedLists) -> None:
        """Keep `lists` as the server's last ones (written whole or not at all)."""
        try:
            private_dir(self.directory)  # the cache root too: it holds every server's tool lists
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")  # 0600
            with os.fdopen(fd, "w") as out:
                json.dump({"version": _VERSION, **lists.wire()}, out)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError as exc:  # a read-only cache: the next start waits for the server, nothing more
            logger.info("could not keep the lists in %s: %s", self.directory, exc)
