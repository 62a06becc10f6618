"""Over stdio, a client's opening is answered before the server is imported, from data: `initialize` for any client
and protocol version, `server/discover`, `ping`, `logging/setLevel`, and the lists kept for this way of starting
offprompt; what the client sent meanwhile reaches the real server whole.

The prelude is tested in this process on pipes, its import held by the test (an answer read while the import is
held came from the prelude, so no SDK was needed for it); the whole path with `offprompt serve` started as a
client starts it.
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offprompt.serve.opening import OPENING_FILE, Opening, envelope
from offprompt.serve.prelude import FrontCache, Handoff, answer_first_requests
from tests.support import REPO, loaded_by

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": PARAMS}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "counter__echo", "arguments": {}}}
MODERN = {"_meta": envelope("2026-07-28")}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": MODERN}


def wire(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def read_lines(fd: int, count: int, timeout: float = 60) -> list[dict[str, Any]]:
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


def run_prelude(front: FrontCache, pipes: tuple[int, int, int, int], sent: bytes, answers: int) -> tuple[Handoff, Any]:
    """Send `sent`, run the prelude with its import held until `answers` answers came (1 s more where none is
    expected); the handoff, and every answer the prelude wrote."""
    client_w, our_r, our_w, client_r = pipes
    held = HeldImport()
    seen: list[Any] = []

    def client() -> None:
        os.write(client_w, sent)
        seen.extend(read_lines(client_r, answers, timeout=60 if answers else 1))
        held.release.set()

    talking = threading.Thread(target=client)
    talking.start()
    handoff = answer_first_requests(front, held.thread, stdin=our_r, stdout=our_w)
    talking.join()
    return handoff, seen + read_lines(client_r, 1, timeout=0)


@pytest.fixture
def opening() -> Opening:
    loaded = Opening.load()
    assert loaded is not None, f"{OPENING_FILE} is missing or stale: run python -m offprompt.serve.opening_data"
    return loaded


@pytest.fixture
def first_start(tmp_path: Path) -> FrontCache:
    """A first-ever start of offprompt in front of a server: no lists kept anywhere yet."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}}))
    front = FrontCache.for_config(config, tmp_path / "cache")
    assert front is not None
    return front


def test_a_fresh_client_is_answered_before_the_sdk_on_a_first_start(
    first_start: FrontCache, pipes: Any, opening: Opening
) -> None:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    level = {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "warning"}}
    sent = wire(INITIALIZE, INITIALIZED, ping, level, LIST)
    handoff, seen = run_prelude(first_start, pipes, sent, answers=3)
    assert seen == [
        {"jsonrpc": "2.0", "id": 1, "result": opening.data["initialize"]["2025-06-18"]},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ]
    assert seen[0]["result"]["protocolVersion"] == "2025-06-18"
    assert handoff.read == sent  # the list (no lists kept yet: the real server's), and the rest to replay
    assert set(handoff.answered) == {1, 2, 3}


def test_server_discover_is_answered_before_the_sdk_on_a_first_start(
    first_start: FrontCache, pipes: Any, opening: Opening
) -> None:
    handoff, seen = run_prelude(first_start, pipes, wire(DISCOVER, {**LIST, "params": MODERN}), answers=1)
    assert seen == [{"jsonrpc": "2.0", "id": 1, "result": opening.data["discover"]["2026-07-28"]}]
    assert seen[0]["result"]["supportedVersions"] == ["2026-07-28"]
    assert set(handoff.answered) == {1}


def test_versions_the_server_does_not_speak_get_the_specification_s_answer(tmp_path: Path, pipes: Any) -> None:
    front = FrontCache.for_config(None, tmp_path)
    assert front is not None
    unknown = {**INITIALIZE, "params": {**PARAMS, "protocolVersion": "2099-01-01"}}
    _, seen = run_prelude(front, pipes, wire(unknown), answers=1)
    assert seen[0]["result"]["protocolVersion"] == "2025-11-25"  # the latest it speaks: the client decides
    later = {**DISCOVER, "params": {"_meta": envelope("2099-01-01")}}
    seen = run_prelude(front, pipes, wire(later), answers=1)[1]
    assert seen == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"},
            },
        }
    ]


def test_with_no_config_the_memory_tools_are_listed_from_data(tmp_path: Path, pipes: Any, opening: Opening) -> None:
    front = FrontCache.for_config(None, tmp_path)
    assert front is not None
    _, seen = run_prelude(front, pipes, wire(INITIALIZE, INITIALIZED, LIST), answers=2)
    assert seen[1]["result"] == opening.list_answer(opening.lists, "tools/list", "2025-06-18")
    assert {t["name"] for t in seen[1]["result"]["tools"]} >= {"memory_load", "memory_query", "memory_list"}


@pytest.mark.parametrize(
    "later",
    [
        {**LIST, "id": 1},  # the id of initialize again: answered by the real server, never mixed up with it
        {**LIST, "params": {"_meta": 5}},  # params the real server refuses: its error is the one answer
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "2"}},  # a later page
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "loud"}},
        {**LIST, "params": MODERN},  # a 2026-era request on a handshake connection
    ],
)
def test_what_only_the_real_server_can_answer_is_left_to_it(tmp_path: Path, pipes: Any, later: Any) -> None:
    front = FrontCache.for_config(None, tmp_path)
    assert front is not None
    handoff, seen = run_prelude(front, pipes, wire(INITIALIZE, INITIALIZED, later), answers=1)
    assert [answer["id"] for answer in seen] == [1]
    assert set(handoff.answered) == {1}


def test_a_lone_surrogate_is_an_invalid_message_and_the_next_one_is_answered(tmp_path: Path, pipes: Any) -> None:
    front = FrontCache.for_config(None, tmp_path)
    assert front is not None
    lone = b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n'
    lone_in_params = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":"\\udfff"}}}\n'
    sent = wire(INITIALIZE) + lone + lone_in_params + wire({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    handoff, seen = run_prelude(front, pipes, sent, answers=4)
    assert [(m.get("id"), m.get("error", {}).get("code")) for m in seen] == [
        (1, None),
        (None, -32600),
        (7, -32602),  # only its params hold one: as the real server answers it
        (2, None),
    ]
    assert handoff.read == wire(INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "ping"})  # never replayed


def test_a_line_nested_too_deeply_is_left_to_the_real_server(tmp_path: Path, pipes: Any) -> None:
    front = FrontCache.for_config(None, tmp_path)
    assert front is not None
    sent = b"[" * 100_000 + b"\n" + wire(INITIALIZE)
    handoff, seen = run_prelude(front, pipes, sent, answers=0)
    assert seen == []
    unread = b""
    while select.select([pipes[1]], [], [], 0)[0]:
        unread += os.read(pipes[1], 1 << 16)
    assert handoff.read + unread == sent  # the real server answers it with a parse error and reads on


def test_no_prelude_where_select_takes_no_pipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert FrontCache.for_serve(["serve"], tmp_path) is None


@pytest.mark.parametrize("spelled", [["--conf", "x.json"], ["--config", "a.json", "--config", "b.json"]])
def test_no_prelude_for_options_the_key_could_misread(tmp_path: Path, spelled: list[str]) -> None:
    assert FrontCache.for_serve(["serve", *spelled], tmp_path) is None


def test_the_lists_are_kept_per_config_and_private(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    cache = tmp_path / "front"
    one = FrontCache.for_serve(["serve", "--config", str(config)], cache)
    assert one is not None
    one.save({"tools/list": {"variants": [], "versions": {}}})
    (saved,) = cache.glob("*.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert one.lists() == {"tools/list": {"variants": [], "versions": {}}}
    same = FrontCache.for_serve(["serve", "--config", str(config), "--memory-name", "other"], cache)
    assert same == one  # what `check --config` keeps is what a client's start reads
    config.write_text('{"mcpServers": {}, "offprompt": {"threshold_tokens": 10}}')
    edited = FrontCache.for_serve(["serve", "--config", str(config)], cache)
    assert edited is not None
    assert edited.lists() is None  # another config: listed by the server
    assert FrontCache.for_serve(["serve", "--config", str(config), "--transport", "http"], cache) is None
    assert FrontCache.for_serve(["check", "--config", str(config)], cache) is None


def test_the_entry_point_answers_without_loading_the_sdk() -> None:
    """What runs before the prelude's answers: were the SDK or pydantic among it, they would come no sooner."""
    probe = "import offprompt.launch; from offprompt.serve.opening import Opening; assert Opening.load()"
    assert loaded_by(probe, ["mcp", "mcp_types", "pydantic", "anyio", "httpx"]) == []


@pytest.mark.parametrize("stamp", ["sdk", "offprompt"])
def test_data_made_for_another_sdk_or_offprompt_answers_nothing(tmp_path: Path, stamp: str) -> None:
    """After an upgrade the file is not trusted: the real server answers the opening."""
    data = json.loads(OPENING_FILE.read_text())
    data[stamp] = "0.0.0-other"
    other = tmp_path / "opening.json"
    other.write_text(json.dumps(data))
    assert Opening.load(other) is None


def test_a_discover_probe_without_the_envelope_falls_back_to_initialize_at_once(
    first_start: FrontCache, pipes: Any, opening: Opening
) -> None:
    """A client that probes `server/discover` with no 2026 envelope is told at once that there is no such method
    here (as the SDK server says it), and its initialize is answered next: no import is waited for."""
    probe = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}
    _, seen = run_prelude(first_start, pipes, wire(probe, INITIALIZE), answers=2)
    assert seen == [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "error": {"code": -32601, "message": "Method not found", "data": "server/discover"},
        },
        {"jsonrpc": "2.0", "id": 1, "result": opening.data["initialize"]["2025-06-18"]},
    ]
