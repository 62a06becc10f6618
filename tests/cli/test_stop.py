"""`offprompt serve` over stdio stops at once when its client stops it, and loses nothing it answered.

Claude Code sends SIGINT, then SIGTERM, then SIGKILL within about half a second; the SDK's stdio client closes
stdin and kills after 2 s. Here each stop comes with work in flight (a slow call, the embedder busy with a stored
text), and the process must have ended on its own when the SDK would kill it, with no abort from a thread
inside the model's runtime. The 0.5 s target is measured by the bench (bench/sections/startup.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from offprompt.memory.ephemeral import PREFIX

from ..support import REPO, offprompt_command, subprocess_env

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
SDK_KILL_SECONDS = 2.0  # mcp.client.stdio's wait before it kills a server that has not exited
ABORTS = ("Fatal Python error", "terminate called", "Traceback", "onnxruntime")
LINES = 20_000  # ~500,000 tokens: stored, and still being embedded when the stop comes


def expected_lines(count: int) -> str:
    return "".join(f"2026-11-30T00:00:{i % 60:02d} INFO worker-{i % 7} handled request {i}\n" for i in range(count))


class Served:
    """`offprompt serve` with the counter server behind it, spoken to in raw JSON-RPC lines."""

    def __init__(self, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> None:
        config = tmp_path / "offprompt.json"
        config.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}}))
        self.stderr = tmp_path / f"stderr-{len(list(tmp_path.glob('stderr-*')))}.log"
        self.process = subprocess.Popen(
            offprompt_command("serve", "--config", str(config), *flags),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr.open("w"),
            env=subprocess_env(**(env or {})),
        )
        self.ids = 0
        self.request(
            "initialize", protocolVersion="2025-11-25", capabilities={}, clientInfo={"name": "t", "version": "1"}
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.ids:
                return dict(message["result"])

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", name=tool, arguments=arguments)

    def read_back(self, namespace: str) -> str:
        """Every window of a stored text, joined."""
        text, offset = "", 0
        while offset is not None:
            window = self.call("memory_load", artifact_namespace=namespace, offset=offset, max_tokens=20_000)
            text += window["content"][0]["text"]
            offset = window["_meta"]["offprompt"]["next_offset"]
        return text

    def stop_as_a_client_does(self, how: str) -> int:
        """Stop it, then wait as the SDK's client does and kill it if it is still there: its exit code."""
        if how == "stdin EOF":
            assert self.process.stdin is not None
            self.process.stdin.close()
        else:
            self.process.send_signal(signal.Signals[how])
        try:
            return self.process.wait(timeout=SDK_KILL_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "stdin EOF"])
def test_a_stop_with_work_in_flight_ends_the_process_and_keeps_every_answered_reference(
    tmp_path: Path, how: str
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    served = Served(tmp_path, *data)
    stored = served.call("counter__lines", count=LINES)
    namespace = stored["_meta"]["offprompt"]["artifact_namespace"]
    served.send(  # a call in flight when the stop comes
        {
            "jsonrpc": "2.0",
            "id": "slow",
            "method": "tools/call",
            "params": {"name": "counter__sleep", "arguments": {"seconds": 60}},
        }
    )
    assert served.stop_as_a_client_does(how) == 0  # ended on its own, not killed
    said = served.stderr.read_text()
    assert [abort for abort in ABORTS if abort in said] == []

    again = Served(tmp_path, *data)
    try:
        assert again.read_back(namespace) == expected_lines(LINES)  # byte-exact after the stop
    finally:
        again.stop_as_a_client_does("SIGTERM")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and locks")
def test_an_ephemeral_memory_killed_with_sigkill_is_swept_by_the_next_start(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}
    served = Served(tmp_path, "--ephemeral", env=env)
    served.call("counter__lines", count=2_000)  # stored in the ephemeral memory
    left = [found for found in temp.iterdir() if found.name.startswith(PREFIX)]
    assert len(left) == 1
    assert any(left[0].rglob("*.txt"))  # the stored text is there
    served.process.kill()
    served.process.wait()
    assert left[0].exists()  # a killed process removes nothing itself

    running = Served(tmp_path, "--ephemeral", env=env)  # any next start sweeps it, and keeps its own
    try:
        running.call("memory_list")
        deadline_polls = 600
        while left[0].exists() and deadline_polls:  # swept beside the start, in a thread: bounded, not timed
            deadline_polls -= 1
            os.sched_yield()
            running.call("memory_list")
        assert not left[0].exists()
        assert len([found for found in temp.iterdir() if found.name.startswith(PREFIX)]) == 1  # its own
    finally:
        running.stop_as_a_client_does("SIGTERM")
    assert [found for found in temp.iterdir() if found.name.startswith(PREFIX)] == []  # removed at its stop
