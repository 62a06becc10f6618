"""A minimal MCP client over stdio in raw JSON-RPC lines.

The SDK's client validates every message with pydantic; timing through it would
add the same cost to both sides of every ratio and blur it. This one only
writes and reads lines, so what it measures is the server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
LINE_LIMIT = 256 * 1024 * 1024  # results of 10 MB and more arrive as one line


def _open_log(path: Path) -> Any:
    return open(path, "ab")  # handed to the child, closed right after the spawn


class PeerError(RuntimeError):
    """The peer answered a request with a JSON-RPC error, or went away."""


class StdioPeer:
    """One spawned MCP server, spoken to one request at a time."""

    def __init__(self, process: asyncio.subprocess.Process, argv: list[str], spawned_at: float) -> None:
        self.process = process
        self.argv = argv
        self.spawned_at = spawned_at
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def spawn(
        cls, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, stderr: Path | None = None
    ) -> StdioPeer:
        err = _open_log(stderr) if stderr else asyncio.subprocess.DEVNULL
        spawned_at = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            limit=LINE_LIMIT,
        )
        if stderr:
            err.close()  # type: ignore[union-attr]
        return cls(process, argv, spawned_at)

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self.process.stdin.drain()

    async def request(self, method: str, params: dict[str, Any] | None = None, limit_s: float = 120) -> Any:
        request_id = next(self._ids)
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        assert self.process.stdout is not None
        async with asyncio.timeout(limit_s):
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    raise PeerError(f"{self.argv[0]} closed its stdout before answering {method}")
                message = json.loads(line)
                if message.get("id") != request_id or "method" in message:
                    if "method" in message and "id" in message:  # a request from the server: decline it
                        await self._send(
                            {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
                        )
                    continue
                if "error" in message:
                    raise PeerError(f"{method} failed: {message['error']}")
                return message["result"]

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        await self.notify("notifications/initialized")
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        return list((await self.request("tools/list"))["tools"])

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("tools/call", {"name": name, "arguments": arguments or {}})
        return result

    async def close(self) -> None:
        if self.process.returncode is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                async with asyncio.timeout(5):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()

    async def __aenter__(self) -> StdioPeer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
