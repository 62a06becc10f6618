"""Random tool arguments and random stdio lines: every answer is a result or a JSON-RPC error, nothing hangs,
and the server still answers afterwards."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from offprompt.artifacts import JsonArtifact, TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage import grep
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server
from offprompt.tools import TOOLS

from .support import offprompt_command

#: A hang guard, not a speed limit: far above what any answer takes.
HANG_SECONDS = 60

_text = st.text(max_size=40) | st.sampled_from(["", "\ud800", "a" * 5_000, ".*", "(a+)+$", "[", "\\", "é日本"])
_scalar = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | _text
_key = st.text(max_size=12)  # the SDK client cannot send a lone surrogate in a key
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3))


@st.composite
def _arguments(draw: st.DrawFn, tool: str) -> dict[str, Any]:
    fields = list(TOOLS[tool].args.model_fields)
    chosen = draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields)))
    arguments = {name: draw(_value) for name in chosen}
    if draw(st.booleans()):
        arguments.update(draw(st.dictionaries(_key, _value, max_size=2)))  # unknown names too
    return arguments


_calls = st.sampled_from(sorted(TOOLS)).flatmap(lambda tool: st.tuples(st.just(tool), _arguments(tool)))


def test_memory_tools_answer_any_arguments_with_a_result(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(grep, "GREP_SECONDS", 5.0)
    memory = TaskMemory.open(MemorySettings(name="fuzz", data_dir=tmp_path))
    try:
        memory.store([TextArtifact(value="aaaaaaaaaaaaaaaaaaaaaaaab\nERR_CONN_RESET at line 2\n")], tool="t.a")
        memory.store([JsonArtifact(value={"rows": [1, 2, 3]}, text='{"rows": [1, 2, 3]}')], tool="t.b")

        async def call(tool: str, arguments: dict[str, Any]) -> None:
            async with Client(build_server(memory)) as client:
                with anyio.fail_after(HANG_SECONDS):
                    result = await client.call_tool(tool, arguments)
                assert isinstance(result, mt.CallToolResult)
                if result.is_error:
                    text = " ".join(b.text for b in result.content if isinstance(b, mt.TextContent))
                    assert "unexpectedly" not in text, text
                listed = await client.call_tool("memory_list", {})
                assert not listed.is_error

        @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(_calls)
        def one(case: tuple[str, dict[str, Any]]) -> None:
            anyio.run(call, *case)

        one()
    finally:
        memory.close()


_ids = (
    st.none()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=8)
    | st.floats()
    | st.lists(st.integers(), max_size=2)
)
_methods = st.sampled_from(
    [
        "tools/call",
        "tools/list",
        "ping",
        "initialize",
        "resources/read",
        "resources/list",
        "prompts/get",
        "notifications/cancelled",
        "notifications/initialized",
        "logging/setLevel",
        "nope",
    ]
) | st.text(max_size=12)
_message = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]), "method": _methods},
    optional={"id": _ids, "params": _value | st.fixed_dictionaries({"name": _text, "arguments": _value})},
)
_junk = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")) | st.sampled_from(
    [b"[" * 1100, b"{" * 5000, b'{"jsonrpc": "2.0", "id": 1', b"\xff\xfe", b"null", b"[]", b'"x"', b"1e999999"]
)
_lines = _message.map(lambda m: json.dumps(m).encode()) | _value.map(lambda v: json.dumps(v).encode()) | _junk


def test_stdio_answers_any_line_and_keeps_serving(tmp_path: Path) -> None:
    process = subprocess.Popen(
        offprompt_command("serve", "--data-dir", str(tmp_path / "data")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(raw) for raw in stdout], daemon=True).start()
    sync = iter(range(10**9))

    def send(raw: bytes) -> None:
        stdin.write(raw + b"\n")
        stdin.flush()

    def answer_to(request_id: str) -> dict[str, Any]:
        """Read until the answer to `request_id`; every line before it must be well-formed JSON-RPC."""
        while True:
            message = json.loads(lines.get(timeout=HANG_SECONDS))  # queue.Empty: a hang
            assert isinstance(message, dict), message
            assert message.get("jsonrpc") == "2.0", message
            assert "method" in message or ("result" in message) != ("error" in message), message
            if "error" in message:
                assert isinstance(message["error"].get("code"), int), message
            if message.get("id") == request_id:
                return message

    try:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params}).encode())
        answer_to("init")
        send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

        @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(_lines)
        def one(raw: bytes) -> None:
            send(raw)
            ping = f"sync-{next(sync)}"  # answered after the line above was read: the server is still serving
            send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
            assert answer_to(ping)["result"] == {}

        one()
        listed = {"name": "memory_list", "arguments": {}}
        send(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": listed}).encode())
        assert "result" in answer_to("last")
        stdin.close()
        assert process.wait(timeout=HANG_SECONDS) == 0
    finally:
        process.kill()
