"""What the stdio prelude answers from data is what the real server answers: the package data equals what the
code makes now, and the lists a start keeps (composed by `serve` whatever the client does, and by `check`) are
the ones the server lists, for every protocol version; a client's first start after `check` lists every tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from offprompt.serve.opening import OPENING_FILE, envelope
from offprompt.serve.opening_data import generate
from offprompt.serve.prelude import FrontCache, answer_first_requests
from tests.serve.test_prelude import HeldImport, read_lines, wire
from tests.support import REPO, offprompt_command, subprocess_env

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2099-01-01"]  # the last one unknown
#: The real server alone: `cli.main` without the launcher's prelude.
REAL_SERVER = [sys.executable, "-c", "import sys; from offprompt.cli import main; sys.exit(main(sys.argv[1:]))"]
STATE_DEADLINE = 120.0  # a state the test waits for comes long before this, on the busiest machine


def test_the_opening_data_is_what_the_code_answers() -> None:
    """Fails after a change to the memory tools, the instructions or the SDK: run `python -m
    offprompt.serve.opening_data` to write the file again."""
    assert json.loads(OPENING_FILE.read_text()) == generate()


def a_config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp.json"
    counter = {"command": sys.executable, "args": [COUNTER], "tools": {"echo": {"off_prompt": "never"}}}
    config.write_text(json.dumps({"offprompt": {"intent": True}, "mcpServers": {"counter": counter}}))
    return config


def env(tmp_path: Path) -> dict[str, str]:
    return subprocess_env(OFFPROMPT_CACHE_DIR=str(tmp_path / "cache"))


def openings() -> list[list[dict[str, Any]]]:
    """Each version's opening: initialize (or discover), then both lists."""
    sessions = []
    for version in HANDSHAKE:
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        sessions.append(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
            ]
        )
    probe = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    sessions.append(  # a probe without the 2026 envelope, then the handshake
        [
            {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}},
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": probe},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
    )
    for version in ("2026-07-28", "2099-01-01"):
        meta = {"_meta": envelope(version)}
        sessions.append(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta},
                {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": meta},
            ]
        )
    return sessions


def answers_of(command: list[str], session: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    """The answers a server started with `command` gives to `session`, by id."""
    requests = sum(1 for m in session if "id" in m)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env(tmp_path))
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(wire(*session))
    process.stdin.flush()
    answers = read_lines(process.stdout.fileno(), requests)
    process.stdin.close()
    process.wait(timeout=STATE_DEADLINE)
    return sorted((a for a in answers if "id" in a), key=lambda a: a["id"])


def prelude_answers(front: FrontCache, session: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers the prelude gives to `session` with its import held: from data alone."""
    client_r, prelude_w = os.pipe()
    prelude_r, client_w = os.pipe()
    held = HeldImport()
    os.write(client_w, wire(*session))
    seen: list[dict[str, Any]] = []

    def client() -> None:
        seen.extend(read_lines(client_r, sum(1 for m in session if "id" in m)))
        held.release.set()

    talking = threading.Thread(target=client)
    talking.start()
    answer_first_requests(front, held.thread, stdin=prelude_r, stdout=prelude_w)
    talking.join()
    for fd in (client_r, prelude_w, prelude_r, client_w):
        os.close(fd)
    return sorted(seen, key=lambda a: a["id"])


def test_check_keeps_the_lists_the_server_answers_for_every_protocol_version(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    checked = subprocess.run(offprompt_command("check", "--config", str(config)), env=env(tmp_path), check=False)
    assert checked.returncode == 0
    front = FrontCache.for_config(config, tmp_path / "cache" / "front")
    assert front is not None
    assert front.lists() is not None
    serve = [*REAL_SERVER, "serve", "--config", str(config), "--data-dir", str(tmp_path / "data")]
    everything = []
    for session in openings():
        real = answers_of(serve, session, tmp_path)
        assert prelude_answers(front, session) == real
        everything.append(real)
    tools = {t["name"] for t in everything[3][1]["result"]["tools"]}  # 2025-11-25
    assert {"memory_load", "counter__echo"} <= tools


class Served:
    """`offprompt serve --config CONFIG` as a client starts it, spoken to in raw lines on its pipes."""

    def __init__(self, tmp_path: Path, config: Path) -> None:
        self.process = subprocess.Popen(
            offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env(tmp_path),
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

    def close(self) -> int:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.rest = [json.loads(line) for line in self.process.stdout.read().splitlines() if line.strip()]
        return self.process.wait(timeout=STATE_DEADLINE)


INITIALIZE, INITIALIZED, LIST = openings()[3][:3]  # 2025-11-25


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + STATE_DEADLINE
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)


def test_a_client_that_gives_up_after_initialize_still_leaves_the_lists(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    front = FrontCache.for_config(config, tmp_path / "cache" / "front")
    assert front is not None
    first = Served(tmp_path, config)
    first.send(INITIALIZE)
    assert first.answer(1)["result"]["protocolVersion"] == "2025-11-25"
    wait_for(front.path)  # kept with no tools/list asked
    first.process.terminate()  # the client gave up
    assert first.process.wait(timeout=STATE_DEADLINE) == 0

    second = Served(tmp_path, config)
    second.send(INITIALIZE, INITIALIZED, LIST)
    assert second.answer(1)["result"]["protocolVersion"] == "2025-11-25"
    assert "counter__echo" in {t["name"] for t in second.answer(2)["result"]["tools"]}
    assert second.close() == 0


def test_a_client_that_quits_at_the_tools_answer_still_leaves_the_lists(tmp_path: Path) -> None:
    """A client that starts the server, lists its tools and closes stdin at once (a script, a reconnect): the lists
    are kept before the process ends, so the next start answers from them. Three first starts, each with a cache of
    its own: an exit that raced the keeping lost it in one of them or more."""
    for attempt in range(3):
        (home := tmp_path / str(attempt)).mkdir()
        config = a_config(home)
        front = FrontCache.for_config(config, home / "cache" / "front")
        assert front is not None
        served = Served(home, config)
        served.send(INITIALIZE, INITIALIZED, LIST)
        assert "counter__echo" in {t["name"] for t in served.answer(2)["result"]["tools"]}
        assert served.close() == 0
        assert front.lists() is not None, f"start {attempt + 1}: the lists were not kept"


def test_a_second_start_answers_from_data_and_serves_on(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    subprocess.run(offprompt_command("check", "--config", str(config)), env=env(tmp_path), check=True)
    served = Served(tmp_path, config)
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "counter__echo"}}
    call["params"]["arguments"] = {"text": "two"}
    served.send(INITIALIZE, INITIALIZED, LIST, call)  # the session the prelude begins goes on in the server
    lines = [served.receive() for _ in range(3)]  # one answer each, in order: no replayed answer leaks
    assert [line["id"] for line in lines] == [1, 2, 3]
    assert lines[2]["result"]["content"][0]["text"] == "two"
    assert served.close() == 0
    assert served.rest == []


def test_a_stale_list_is_followed_by_list_changed_and_the_real_one(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    subprocess.run(offprompt_command("check", "--config", str(config)), env=env(tmp_path), check=True)
    front = FrontCache.for_config(config, tmp_path / "cache" / "front")
    assert front is not None
    kept = front.lists()
    assert kept is not None
    for answer in kept["tools/list"]["variants"]:
        answer["tools"] = [t for t in answer["tools"] if t["name"] != "counter__echo"]
    front.save(kept)  # as if the tools changed since

    served = Served(tmp_path, config)
    served.send(INITIALIZE, INITIALIZED, LIST)
    assert "counter__echo" not in {t["name"] for t in served.answer(2)["result"]["tools"]}
    assert served.receive() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    served.send({**LIST, "id": 4})
    assert "counter__echo" in {t["name"] for t in served.answer(4)["result"]["tools"]}
    assert served.close() == 0


def test_set_level_waits_for_no_server_to_start(tmp_path: Path) -> None:
    """A server still starting holds only the calls to its own tools: `logging/setLevel`, answered from data at
    the opening and by the real server after it, is answered while the server cannot start (its gate is opened
    only then), and reaches the server once it has started."""
    config = tmp_path / "mcp.json"
    gate = tmp_path / "gate"
    gated = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "gated.py"), str(gate)]}
    config.write_text(json.dumps({"mcpServers": {"slow": gated}}))
    served = Served(tmp_path, config)
    memory_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_list"}}
    served.send(INITIALIZE, INITIALIZED, memory_list)
    assert served.answer(2)["result"]["isError"] is False  # the real server runs now
    served.send({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "error"}})
    answered = served.answer(3)  # before the server has started: it waits for the gate
    assert answered["result"] == {}
    gate.write_text("")
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "slow__echo"}}
    call["params"]["arguments"] = {"text": "late"}
    served.send(call)
    assert served.answer(4)["result"]["content"][0]["text"] == "late"
    assert served.close() == 0


def test_init_then_a_first_start_lists_every_tool(tmp_path: Path) -> None:
    cursor = tmp_path / "cursor-mcp.json"
    cursor.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}}))
    ours = tmp_path / "offprompt.json"
    init = ["init", "--client", "cursor", "--config", str(cursor), "--offprompt-config", str(ours), "--yes"]
    done = subprocess.run(offprompt_command(*init), env=env(tmp_path), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "first start lists all their tools at once" in done.stdout
    front = FrontCache.for_config(ours, tmp_path / "cache" / "front")
    assert front is not None
    kept = front.lists()
    assert kept is not None  # before any start: init started the server and kept its lists
    served = Served(tmp_path, ours)
    served.send(INITIALIZE, INITIALIZED, LIST)
    listed = served.answer(2)["result"]
    assert "counter__echo" in {t["name"] for t in listed["tools"]}
    assert listed == kept["tools/list"]["variants"][kept["tools/list"]["versions"]["2025-11-25"]]
    assert served.close() == 0
