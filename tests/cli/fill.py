"""A memory filled through the proxy, as a session would: one large result stored, one small one passed inline,
and the model reading the stored one back."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client

from offprompt.config import parse_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from ..support import REPO, meta

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
LINES = 600


def counter_config(tmp_path: Path, threshold: int = 2000) -> dict[str, Any]:
    return {
        "offprompt": {"threshold_tokens": threshold},
        "mcpServers": {
            "counter": {"command": sys.executable, "args": [COUNTER], "env": {"COUNTER_LOG": str(tmp_path / "log")}}
        },
    }


@dataclass
class Session:
    """What the driven session did: the namespace stored, and the answers the model got."""

    namespace: str
    stored: Any
    inline_text: str
    read_texts: list[str]


async def fill(settings: MemorySettings, tmp_path: Path) -> Session:
    config = parse_config(counter_config(tmp_path))
    memory = TaskMemory.open(settings)
    try:
        proxy = Proxy(config.servers, default_timeout=60)
        async with proxy.running(), Client(build_server(memory, proxy, config.settings)) as client:
            stored = await client.call_tool("counter__lines", {"count": LINES})
            small = await client.call_tool("counter__echo", {"text": "hello there"})
            ns = meta(stored)["artifact_namespace"]
            reads = [
                await client.call_tool("memory_load", {"artifact_namespace": ns, "max_tokens": 500}),
                await client.call_tool("memory_grep", {"pattern": "request 599$", "artifact_namespace": ns}),
            ]

    finally:
        memory.close()
    texts = ["\n".join(b.text for b in r.content if hasattr(b, "text")) for r in reads]
    inline = "\n".join(b.text for b in small.content if hasattr(b, "text"))
    return Session(ns, stored, inline, texts)
