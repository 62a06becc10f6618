"""Each downstream's last tool list, kept between runs so a client's `tools/list` is answered at once.

A client gives `tools/list` a few seconds (Claude Code 5); an `npx -y` server on its first run, or any server
that loads a model, takes longer to start. With the list it gave last time, offprompt answers at once and a call
to one of its tools waits for the server; when the server's live list differs, the clients are told with
`notifications/tools/list_changed`.

The cache sits in the user's cache directory (`OFFPROMPT_CACHE_DIR` sets another), not in a memory's, so every
memory, `--ephemeral` runs and sibling processes share it. A server's entry is found by a hash of its config
entry as written (`${env:…}` unexpanded, so no secret is hashed) and of the program its command resolves to.
Files are 0600 and hold tool schemas only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as mt

__all__ = ["CACHE_ENV", "ListCache", "entry_key"]

logger = logging.getLogger(__name__)

CACHE_ENV = "OFFPROMPT_CACHE_DIR"
_VERSION = 1  # of the file's shape: a file of another version is ignored


def entry_key(name: str, written: Mapping[str, Any], command: str | None) -> str:
    """The cache key of a server: its name, its entry as written, and the program its command resolves to."""
    resolved = (shutil.which(command) or command) if command else ""
    text = json.dumps([_VERSION, name, written, resolved], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ListCache:
    """The cached tool lists in one directory."""

    directory: Path

    @classmethod
    def default(cls) -> ListCache:
        configured = os.environ.get(CACHE_ENV)
        if configured:
            return cls(Path(configured).expanduser() / "lists")
        import platformdirs

        return cls(Path(platformdirs.user_cache_dir("offprompt")) / "lists")

    def tools(self, key: str) -> list[mt.Tool] | None:
        """The tools the server listed last time, or None (never listed, or the file is unreadable)."""
        try:
            data = json.loads((self.directory / f"{key}.json").read_text())
            if data.get("version") != _VERSION:
                return None
            return [mt.Tool.model_validate(tool) for tool in data["tools"]]
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged cache costs a wait, never a start
            logger.debug("the cached tool list %s is unreadable: %r", key, exc)
            return None

    def save_tools(self, key: str, tools: list[mt.Tool]) -> None:
        """Keep `tools` as the server's last list (written whole or not at all)."""
        listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")  # 0600
            with os.fdopen(fd, "w") as out:
                json.dump({"version": _VERSION, "tools": listed}, out)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError as exc:  # a read-only cache: the next start waits for the server, nothing more
            logger.info("could not keep the tool list in %s: %s", self.directory, exc)
