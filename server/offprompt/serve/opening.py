"""A client's opening answered from data: `initialize` for any client and protocol version, `server/discover`, and
the lists, as the SDK server `offprompt serve` runs would answer them.

`data/opening.json` holds that server's own answers, asked of it by `serve.opening_data` (which regenerates the
file; a test keeps it equal to the code) and stamped with the SDK's and offprompt's versions: when either is not
the installed one, nothing is answered from it and the real server answers. The standard library only: the stdio
prelude reads this before anything else has loaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offprompt._version import __version__

__all__ = ["OPENING_FILE", "Opening", "envelope", "has_envelope", "installed_sdk_version", "pick", "variants"]

OPENING_FILE = Path(__file__).resolve().parent.parent / "data" / "opening.json"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
UNSUPPORTED_PROTOCOL_VERSION = -32022


def envelope(version: str) -> dict[str, Any]:
    """The per-request `_meta` of a 2026-07-28-era request at `version`, with no client capabilities."""
    return {VERSION_KEY: version, CAPABILITIES_KEY: {}}


def has_envelope(params: Any) -> bool:
    """Whether a request's params carry the 2026-07-28 envelope (its protocol version key): such a request opens
    a 2026-era connection, as the SDK decides it."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and VERSION_KEY in meta


def variants(by_version: Mapping[str, Any]) -> dict[str, Any]:
    """Answers by protocol version, each distinct answer kept once (most versions list the same tools)."""
    kept: list[Any] = []
    versions: dict[str, int] = {}
    for version, answer in by_version.items():
        if answer not in kept:
            kept.append(answer)
        versions[version] = kept.index(answer)
    return {"variants": kept, "versions": versions}


def pick(answers: Mapping[str, Any], version: str) -> Any | None:
    """The answer `variants` kept for `version`, or None."""
    index = answers.get("versions", {}).get(version)
    return None if index is None else answers["variants"][index]


def installed_sdk_version() -> str | None:
    """The installed `mcp` distribution's version, read from its `.dist-info` directory's name beside the package
    (a tenth of importlib.metadata's cost, and nothing imported)."""
    import importlib.util

    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    try:
        names = os.listdir(site)
    except OSError:
        return None
    found = [n[4 : -len(".dist-info")] for n in names if n.startswith("mcp-") and n.endswith(".dist-info")]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True, slots=True)
class Opening:
    """The answers of `data/opening.json`."""

    data: Mapping[str, Any]

    @classmethod
    def load(cls, path: Path = OPENING_FILE) -> Opening | None:
        """The file's answers, or None when it is missing or made for another SDK or offprompt."""
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("offprompt") != __version__:
            return None
        if data.get("sdk") != installed_sdk_version():
            return None
        return cls(data)

    @property
    def lists(self) -> Mapping[str, Any]:
        """`tools/list` and `prompts/list` of the memory tools alone (offprompt with no config), by version."""
        return dict(self.data["lists"])

    def initialize(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The result of `initialize`: the client's protocol version if it is one the server speaks, else the latest
        one (as the specification says); None for params the server would refuse (it answers those itself)."""
        version, info = params.get("protocolVersion"), params.get("clientInfo")
        if not (isinstance(version, str) and isinstance(params.get("capabilities"), dict) and isinstance(info, dict)):
            return None
        if not (isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
            return None
        answers: Mapping[str, Any] = self.data["initialize"]
        return dict(answers.get(version) or answers[max(answers)])

    def modern(self, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """A 2026-era request's protocol version: ("version", {"version": …}) for one the server speaks, ("error",
        …) naming those it speaks for another; None for an envelope it refuses otherwise (it answers those)."""
        version = self.modern_version(params, known_only=False)
        if version is None:
            return None
        answers: Mapping[str, Any] = self.data["discover"]
        if version in answers:
            return "version", {"version": version}
        refused = self.data["discover_refused"]
        data = {"supported": sorted(answers), "requested": version}
        return "error", {"code": refused["code"], "message": refused["message"], "data": data}

    def discover(self, version: str) -> dict[str, Any]:
        """The result of `server/discover` at a version the server speaks."""
        return dict(self.data["discover"][version])

    def modern_version(self, params: Mapping[str, Any], *, known_only: bool = True) -> str | None:
        """The protocol version a 2026-era request's envelope names, when the envelope is whole (and, with
        `known_only`, names a version the server speaks)."""
        meta = params.get("_meta")
        if not isinstance(meta, dict) or not isinstance(meta.get(CAPABILITIES_KEY), dict):
            return None
        version = meta.get(VERSION_KEY)
        if not isinstance(version, str) or (known_only and version not in self.data["discover"]):
            return None
        return version

    def list_answer(self, lists: Mapping[str, Any], method: str, version: str) -> dict[str, Any] | None:
        """`method`'s answer at `version` from `lists` (composed by `serve.front_lists`, or this file's own), with
        the 2026-era envelope fields the server adds (result type, cache hints, its serverInfo stamp)."""
        answers = lists.get(method)
        answer = pick(answers, version) if isinstance(answers, dict) else None
        if answer is None:
            return None
        if version in self.data["discover"]:
            return {**self.data["modern_list_envelope"][method], **answer}
        return dict(answer)
