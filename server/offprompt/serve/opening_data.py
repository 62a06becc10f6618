"""Writes `data/opening.json`: what the SDK server `offprompt serve` runs answers to a client's opening, for the
stdio prelude to give before the SDK is imported (`serve.opening`).

The answers are the real server's, asked in this process over its own streams, once per protocol version:
`initialize` of each handshake version, `server/discover` of each 2026-07-28-era version (and its refusal of an
unknown one), and `tools/list` and `prompts/list` of both eras. The file is stamped with the versions of the SDK
and of offprompt; the prelude answers from it only when both are the installed ones. `tests/serve/test_opening.py`
checks that the file equals what this module makes now, so it never drifts from the code.

Regenerate it after a change to the memory tools, the instructions or the SDK:

    python -m offprompt.serve.opening_data
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from offprompt._version import __version__
from offprompt.config import OffpromptSettings
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.serve.opening import OPENING_FILE, envelope, variants

__all__ = ["generate", "main"]

#: A version no SDK serves: its refusal, as the server words it, is kept to answer any unknown one.
UNKNOWN_VERSION = "0000-00-00"
LISTS = ("tools/list", "prompts/list")


def generate() -> dict[str, Any]:
    """The opening answers of the server `offprompt serve` runs with no config, as the file holds them."""
    with tempfile.TemporaryDirectory(prefix="offprompt-opening-") as scratch:
        memory = TaskMemory.open(MemorySettings(name="opening", data_dir=Path(scratch)), resume_indexing=False)
        try:
            answers = anyio.run(_ask_every_version, memory)
        finally:
            memory.close()
    initialize = {v: answers[("initialize", v)] for v in HANDSHAKE_PROTOCOL_VERSIONS}
    discover = {v: answers[("server/discover", v)] for v in MODERN_PROTOCOL_VERSIONS}
    versions = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
    lists = {method: variants({v: answers[(method, v)] for v in versions}) for method in LISTS}
    modern_lists = {
        method: {
            k: v for k, v in answers[(method, MODERN_PROTOCOL_VERSIONS[-1])].items() if k not in ("tools", "prompts")
        }
        for method in LISTS
    }
    refusal = answers[("server/discover", UNKNOWN_VERSION)]
    unknown_method = answers[("server/discover", "")]
    return {
        "sdk": importlib.metadata.version("mcp"),
        "offprompt": __version__,
        "initialize": initialize,
        "discover": discover,
        "discover_refused": {"code": refusal["code"], "message": refusal["message"]},
        "discover_without_envelope": unknown_method,
        "lists": lists,
        "modern_list_envelope": modern_lists,
    }


async def _ask_every_version(memory: TaskMemory) -> dict[tuple[str, str], Any]:
    proxy = Proxy({})
    answers: dict[tuple[str, str], Any] = {}
    async with proxy.running():
        server = build_server(memory, proxy, OffpromptSettings())
        for version in HANDSHAKE_PROTOCOL_VERSIONS:
            params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "opening", "version": "1"}}
            opening = [("initialize", params), ("notifications/initialized", None), ("tools/list", None)]
            got = await _session(server, [*opening, ("prompts/list", None)])
            answers.update({(method, version): got[method] for method in ("initialize", *LISTS)})
        # A client that probes server/discover without the 2026 envelope opens a handshake connection, where the
        # method does not exist: the error that sends it to initialize.
        got = await _session(server, [("server/discover", {})])
        answers[("server/discover", "")] = got["server/discover"]
        for version in (*MODERN_PROTOCOL_VERSIONS, UNKNOWN_VERSION):
            meta = {"_meta": envelope(version)}
            got = await _session(server, [("server/discover", meta), ("tools/list", meta), ("prompts/list", meta)])
            answers.update({(method, version): got[method] for method in ("server/discover", *LISTS)})
    return answers


async def _session(server: Any, requests: list[tuple[str, Mapping[str, Any] | None]]) -> dict[str, Any]:
    """Send `requests` on one connection of `server`; each request's result (or error) by method."""
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](16)
    got: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run, server_in, server_out, server.create_initialization_options())
        methods = {}
        for number, (method, params) in enumerate(requests, start=1):
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if not method.startswith("notifications/"):
                message["id"] = number
                methods[number] = method
            if params is not None:
                message["params"] = params
            await to_server.send(SessionMessage(mt.jsonrpc_message_adapter.validate_python(message, by_name=False)))
            if "id" not in message:
                continue
            answer = (await from_server.receive()).message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            got[methods[answer["id"]]] = answer.get("result", answer.get("error"))
        await to_server.aclose()
        tg.cancel_scope.cancel()
    return got


def main() -> int:
    OPENING_FILE.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OPENING_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
