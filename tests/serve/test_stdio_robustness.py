"""`offprompt serve` over stdio stays up and answers, whatever a client or a downstream does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..support import REPO, offprompt_command

COUNTER = str(REPO / "tests" / "servers" / "counter.py")


class Line:
    """A client that writes raw JSON-RPC lines to `offprompt serve` and reads its answers."""

    def __init__(self, tmp_path: Path, counters: dict[str, dict[str, str]] | None = None, **offprompt: Any) -> None:
        """`counters`: the counter servers behind offprompt, by name, with their environment."""
        config = tmp_path / "mcp.json"
        counters = counters if counters is not None else {"counter": {}}
        servers = {name: {"command": sys.executable, "args": [COUNTER], "env": env} for name, env in counters.items()}
        config.write_text(json.dumps({"offprompt": offprompt, "mcpServers": servers}))
        self.process = subprocess.Popen(
            offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert self.receive()["id"] == "init"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((message if isinstance(message, str) else json.dumps(message)).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            message = json.loads(self.process.stdout.readline())
            if "id" in message:
                return dict(message)

    def call(self, request_id: Any, tool: str, arguments: Any, **params: Any) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, **params},
            }
        )
        return self.receive()

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def test_malformed_calls_get_answers_and_the_server_stays_up(tmp_path: Path) -> None:
    line = Line(tmp_path, call_timeout_seconds=5)  # the SDK server behind never answers a lone surrogate
    assert line.call(1, "counter__echo", {"text": "x"}, _meta="not an object")["id"] == 1
    line.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]})
    line.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
    assert line.call(2, "counter__echo", ["not", "an", "object"])["id"] == 2
    surrogate = line.call(3, "counter__echo", {"text": "\ud800 lone"})
    assert surrogate["id"] == 3
    ok = line.call(4, "counter__echo", {"text": "still here"})
    assert ok["result"]["content"][0]["text"] == "still here"
    assert line.close() == 0


def test_a_crash_mid_call_fails_that_call_only(tmp_path: Path) -> None:
    line = Line(tmp_path)
    crashed = line.call(1, "counter__crash", {})
    assert crashed["result"]["isError"] is True
    assert "stopped during the call" in crashed["result"]["content"][0]["text"]
    again = line.call(2, "counter__echo", {"text": "back"})
    assert again["result"]["content"][0]["text"] == "back"
    assert line.close() == 0


def test_a_cancelled_call_is_dropped_and_the_next_one_answered(tmp_path: Path) -> None:
    line = Line(tmp_path)
    assert line.call(1, "counter__echo", {"text": "warm"})["id"] == 1  # the downstream is up: the fast lane
    slow = {"name": "counter__sleep", "arguments": {"seconds": 3}}
    line.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow})
    line.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    answer = line.call(3, "counter__echo", {"text": "next"})
    assert answer["result"]["content"][0]["text"] == "next"
    # Had the call still been in flight, closing stdin would wait for its answer (3 s) and write it.
    assert line.process.stdin is not None
    line.process.stdin.close()
    assert line.process.stdout is not None
    rest = [json.loads(raw) for raw in line.process.stdout.read().splitlines() if raw.strip()]
    assert [m for m in rest if m.get("id") == 2] == []
    assert line.process.wait(timeout=30) == 0


def test_memory_tools_and_started_servers_answer_while_another_is_still_starting(tmp_path: Path) -> None:
    events = tmp_path / "events"
    slow = {"COUNTER_START_DELAY": "30", "COUNTER_EVENTS": str(events)}
    line = Line(tmp_path, counters={"fast": {"COUNTER_EVENTS": str(tmp_path / "fast-events")}, "slow": slow})
    answer = line.call(1, "memory_list", {})
    assert answer["result"]["content"][0]["text"] == 'Memory "default" holds nothing yet.'
    deadline = time.monotonic() + 30
    while not (tmp_path / "fast-events").exists():  # the fast one is up: it wrote "ready"
        assert time.monotonic() < deadline, "the fast downstream did not start"
        time.sleep(0.05)
    assert line.call(2, "fast__echo", {"text": "now"})["result"]["content"][0]["text"] == "now"
    assert not events.exists()  # the slow downstream has not read its first message yet
    line.process.terminate()
    assert line.process.wait(timeout=30) == 0


def test_calls_sent_before_stdin_closes_are_still_answered(tmp_path: Path) -> None:
    line = Line(tmp_path)
    line.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "counter__echo", "arguments": {"text": "last words"}},
        }
    )
    assert line.process.stdin is not None
    line.process.stdin.close()
    assert line.receive()["result"]["content"][0]["text"] == "last words"
    assert line.process.wait(timeout=30) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_the_downstreams_too(tmp_path: Path) -> None:
    line = Line(tmp_path)
    pid = int(line.call(1, "counter__pid", {})["result"]["content"][0]["text"])
    line.process.send_signal(signal.SIGTERM)
    assert line.process.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the downstream (pid {pid}) outlived offprompt")
