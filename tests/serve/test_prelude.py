"""Over stdio, `initialize` and `tools/list` are answered before the server is imported, from the last start's
answers, and what the client sent meanwhile reaches the real server whole.

The prelude is tested in this process on pipes, its import held by the test (an answer read while the import is
held came from the prelude); the whole path with `offprompt serve` started twice as a client starts it.
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offprompt.serve.prelude import FrontCache, Handoff, answer_first_requests
from tests.support import REPO, loaded_by, offprompt_command, subprocess_env

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": PARAMS}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "counter__echo", "arguments": {}}}
CACHED_INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "o"}}
CACHED_TOOLS = {"tools": [{"name": "memory_load", "inputSchema": {"type": "object"}}]}


def wire(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def read_lines(fd: int, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    """`count` JSON lines from `fd`, or fewer if none comes for `timeout` seconds."""
    buffer = b""
    while buffer.count(b"\n") < count and select.select([fd], [], [], timeout)[0]:
        buffer += os.read(fd, 1 << 16)
    return [json.loads(line) for line in buffer.splitlines()]


class HeldImport:
    """A stand-in for the server's import, which ends when the test lets it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.thread = threading.Thread(target=self.release.wait, daemon=True)
        self.thread.start()


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """(client writes, prelude reads, prelude writes, client reads)."""
    to_us_r, to_us_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    yield to_us_w, to_us_r, to_client_w, to_client_r
    for fd in (to_us_r, to_us_w, to_client_r, to_client_w):
        os.close(fd)


def run_prelude(
    front: FrontCache, pipes: tuple[int, int, int, int], sent: bytes, *, answers: bool
) -> tuple[Handoff, list[Any]]:
    """Send `sent`, run the prelude with its import held until two answers came (or 30 s passed; 1 s where none
    is expected); the handoff, and every answer the prelude wrote."""
    client_w, our_r, our_w, client_r = pipes
    held = HeldImport()
    seen: list[Any] = []

    def client() -> None:
        os.write(client_w, sent)
        seen.extend(read_lines(client_r, 2, timeout=30 if answers else 1))
        held.release.set()

    talking = threading.Thread(target=client)
    talking.start()
    handoff = answer_first_requests(front, held.thread, stdin=our_r, stdout=our_w)
    talking.join()
    return handoff, seen + read_lines(client_r, 1, timeout=0)


def test_the_first_answers_come_while_the_server_is_still_importing(tmp_path: Path, pipes: Any) -> None:
    front = FrontCache(tmp_path, "start")
    front.save(PARAMS, CACHED_INITIALIZE, CACHED_TOOLS)
    sent = wire(INITIALIZE, INITIALIZED, LIST, CALL)
    handoff, seen = run_prelude(front, pipes, sent, answers=True)
    assert seen == [
        {"jsonrpc": "2.0", "id": 1, "result": CACHED_INITIALIZE},
        {"jsonrpc": "2.0", "id": 2, "result": CACHED_TOOLS},
    ]
    assert handoff.read == sent  # the call, and the answered requests to replay: nothing lost
    assert handoff.answered == {1: CACHED_INITIALIZE, 2: CACHED_TOOLS}


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},  # a 2026-07-28 client
        {**INITIALIZE, "params": {**PARAMS, "clientInfo": {"name": "another", "version": "1"}}},  # not cached
    ],
)
def test_a_start_it_has_no_answers_for_is_left_to_the_server(tmp_path: Path, pipes: Any, first: Any) -> None:
    front = FrontCache(tmp_path, "start")
    front.save(PARAMS, CACHED_INITIALIZE, CACHED_TOOLS)
    sent = wire(first, INITIALIZED, LIST)
    handoff, seen = run_prelude(front, pipes, sent, answers=False)
    assert seen == []
    assert handoff.read == sent
    assert handoff.answered == {}


@pytest.mark.parametrize(
    "later",
    [
        {**LIST, "id": 1},  # the id of initialize again: answered by the real server, never mixed up with it
        {**LIST, "params": {"_meta": 5}},  # params the real server refuses: its error is the one answer
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "2"}},  # a later page
    ],
)
def test_what_only_the_real_server_can_answer_is_left_to_it(tmp_path: Path, pipes: Any, later: Any) -> None:
    front = FrontCache(tmp_path, "start")
    front.save(PARAMS, CACHED_INITIALIZE, CACHED_TOOLS)
    handoff, seen = run_prelude(front, pipes, wire(INITIALIZE, INITIALIZED, later), answers=False)
    assert seen == [{"jsonrpc": "2.0", "id": 1, "result": CACHED_INITIALIZE}]
    assert handoff.answered == {1: CACHED_INITIALIZE}


def test_a_line_nested_too_deeply_is_left_to_the_real_server(tmp_path: Path, pipes: Any) -> None:
    front = FrontCache(tmp_path, "start")
    front.save(PARAMS, CACHED_INITIALIZE, CACHED_TOOLS)
    sent = b"[" * 100_000 + b"\n" + wire(INITIALIZE)
    handoff, seen = run_prelude(front, pipes, sent, answers=False)
    assert seen == []
    assert handoff.read == sent  # the real server answers it with a parse error and reads on


def test_no_prelude_where_select_takes_no_pipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert FrontCache.for_serve(["serve"], tmp_path) is None


@pytest.mark.parametrize("spelled", [["--conf", "x.json"], ["--config", "a.json", "--config", "b.json"]])
def test_no_prelude_for_options_the_key_could_misread(tmp_path: Path, spelled: list[str]) -> None:
    assert FrontCache.for_serve(["serve", *spelled], tmp_path) is None


def test_the_front_cache_is_per_start_and_private(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    cache = tmp_path / "front"
    one = FrontCache.for_serve(["serve", "--config", str(config)], cache)
    assert one is not None
    one.save(PARAMS, CACHED_INITIALIZE, CACHED_TOOLS)
    (saved,) = cache.glob("*.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert one.answers(PARAMS) == (CACHED_INITIALIZE, CACHED_TOOLS)
    config.write_text('{"mcpServers": {}, "offprompt": {"threshold_tokens": 10}}')
    edited = FrontCache.for_serve(["serve", "--config", str(config)], cache)
    assert edited is not None
    assert edited.answers(PARAMS) is None  # another config: answered by the server
    assert FrontCache.for_serve(["serve", "--config", str(config), "--transport", "http"], cache) is None
    assert FrontCache.for_serve(["check", "--config", str(config)], cache) is None


class Served:
    """`offprompt serve` with the counter server behind it, spoken to in raw lines on its pipes."""

    def __init__(self, tmp_path: Path) -> None:
        config = tmp_path / "mcp.json"
        servers = {"counter": {"command": sys.executable, "args": [COUNTER]}}
        config.write_text(json.dumps({"mcpServers": servers}))
        self.process = subprocess.Popen(
            offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=subprocess_env(OFFPROMPT_CACHE_DIR=str(tmp_path / "cache")),
        )

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(wire(*messages))
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        return dict(json.loads(self.process.stdout.readline()))

    def answer(self, request_id: int) -> dict[str, Any]:
        while "id" not in (message := self.receive()) or message["id"] != request_id:
            pass
        return message

    def start(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """initialize, then tools/list: their results."""
        self.send(INITIALIZE, INITIALIZED, LIST)
        return self.answer(1)["result"], self.answer(2)["result"]

    def close(self) -> int:
        """Close stdin; the exit code. What it wrote after the last line read is in `rest`."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.rest = [json.loads(line) for line in self.process.stdout.read().splitlines() if line.strip()]
        return self.process.wait(timeout=30)


def echo(text: str, request_id: int = 3) -> dict[str, Any]:
    return {**CALL, "id": request_id, "params": {"name": "counter__echo", "arguments": {"text": text}}}


def front_file(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "cache" / "front").glob("*.json")
    return path


def test_a_second_start_answers_as_the_first_and_serves_on(tmp_path: Path) -> None:
    first = Served(tmp_path)
    initialize, tools = first.start()
    first.send(echo("one"))
    assert first.answer(3)["result"]["content"][0]["text"] == "one"
    assert first.close() == 0
    assert stat.S_IMODE(front_file(tmp_path).stat().st_mode) == 0o600

    second = Served(tmp_path)
    second.send(INITIALIZE, INITIALIZED, LIST, echo("two"))  # the session the prelude begins goes on in the server
    lines = [second.receive() for _ in range(3)]  # one answer each, in order: no replayed answer leaks
    assert lines == [
        {"jsonrpc": "2.0", "id": 1, "result": initialize},
        {"jsonrpc": "2.0", "id": 2, "result": tools},
        {"jsonrpc": "2.0", "id": 3, "result": lines[2]["result"]},
    ]
    assert lines[2]["result"]["content"][0]["text"] == "two"
    assert second.close() == 0
    assert second.rest == []


def test_a_stale_first_list_is_followed_by_list_changed_and_the_real_one(tmp_path: Path) -> None:
    first = Served(tmp_path)
    _, tools = first.start()
    assert first.close() == 0
    saved = front_file(tmp_path)
    kept = json.loads(saved.read_text())
    kept["tools"]["tools"] = [t for t in kept["tools"]["tools"] if t["name"] != "counter__echo"]
    saved.write_text(json.dumps(kept))  # as if the tools changed since

    second = Served(tmp_path)
    _, stale = second.start()
    assert "counter__echo" not in {t["name"] for t in stale["tools"]}
    assert second.receive() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    second.send({**LIST, "id": 4})
    assert second.answer(4)["result"] == tools
    assert second.close() == 0
    assert json.loads(saved.read_text())["tools"] == tools  # the next start answers the real list


def test_the_entry_point_answers_without_loading_the_sdk() -> None:
    """What runs before the prelude's answers: were the SDK or pydantic among it, they would come no sooner."""
    assert loaded_by("import offprompt.launch", ["mcp", "mcp_types", "pydantic", "anyio", "httpx"]) == []
