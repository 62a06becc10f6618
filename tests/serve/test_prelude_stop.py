"""offprompt stops when its client stops it in every phase, loading included, and its servers never outlive it.

While the server is still importing, a client that closes stdin or sends a stop signal ends the process at once
(nothing is open yet); a request the prelude could not answer keeps the process for the real server, which
answers it before it stops. Downstream servers, and what they start (`npx` → node), are killed by a watchdog
when offprompt dies, SIGKILL included. The 0.5 s target is the bench's (bench/sections/opening.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serve.test_prelude import INITIALIZE, INITIALIZED, read_lines, wire
from tests.support import REPO, offprompt_command, subprocess_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes, signals and process groups")

STATE_DEADLINE = 120.0  # a state the test waits for comes long before this, on the busiest machine
#: The launcher's prelude with the server's import held for ever: whatever ends this process, ended it while loading.
LOADING_FOR_EVER = """
import sys, threading
from pathlib import Path
from offprompt.serve.prelude import FrontCache, answer_first_requests, exit_on_stop_signals
front = FrontCache.for_config(None, Path(sys.argv[1]))
exit_on_stop_signals()
held = threading.Thread(target=threading.Event().wait, daemon=True)
held.start()
answer_first_requests(front, held)
sys.exit(3)  # handed over to the real server, which would answer once imported
"""


def _stops_by_default() -> None:
    # As a client starts it: a signal the test run itself ignores (SIGHUP under nohup) would be inherited, and
    # offprompt leaves an ignored signal ignored on purpose.
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_DFL)


def loading(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A process still loading, its opening answered."""
    process = subprocess.Popen(
        [sys.executable, "-c", LOADING_FOR_EVER, str(tmp_path / "cache")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=subprocess_env(),
        preexec_fn=_stops_by_default,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(wire(INITIALIZE, INITIALIZED))
    process.stdin.flush()
    assert read_lines(process.stdout.fileno(), 1)[0]["id"] == 1
    return process


def test_stdin_closing_while_loading_ends_the_process(tmp_path: Path) -> None:
    process = loading(tmp_path)
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=STATE_DEADLINE) == 0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_while_loading_ends_the_process(tmp_path: Path, stop: signal.Signals) -> None:
    process = loading(tmp_path)
    process.send_signal(stop)
    assert process.wait(timeout=STATE_DEADLINE) == 0


def test_a_request_sent_before_stdin_closes_is_left_to_the_real_server(tmp_path: Path) -> None:
    """A piped script's last requests are answered after EOF: the prelude hands them over, never exits on them."""
    process = loading(tmp_path)
    assert process.stdin is not None
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_list", "arguments": {}}}
    process.stdin.write(wire(call))
    process.stdin.close()
    assert process.wait(timeout=STATE_DEADLINE) == 3


def processes_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (found with ps, as a user would)."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [int(line.split(None, 1)[0]) for line in listing.splitlines() if marker in line and "ps -eo" not in line]


def test_no_server_outlives_offprompt_killed_with_sigkill(tmp_path: Path) -> None:
    marker = f"offprompt-test-marker-{os.getpid()}-{time.monotonic_ns()}"
    spawner = str(REPO / "tests" / "servers" / "spawner.py")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"spawner": {"command": sys.executable, "args": [spawner, marker]}}}))
    process = subprocess.Popen(
        offprompt_command("serve", "--config", str(config), "--data-dir", str(tmp_path / "data")),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=subprocess_env(OFFPROMPT_CACHE_DIR=str(tmp_path / "cache")),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "spawner__echo"}}
    call["params"]["arguments"] = {"text": "up"}
    process.stdin.write(wire(INITIALIZE, INITIALIZED, call))
    process.stdin.flush()
    answers = read_lines(process.stdout.fileno(), 2)
    assert answers[-1]["result"]["content"][0]["text"] == "up"
    assert len(processes_with(marker)) == 3  # the server, its child and its helper
    process.kill()
    process.wait()
    deadline = time.monotonic() + STATE_DEADLINE
    while processes_with(marker):
        assert time.monotonic() < deadline, f"left running after offprompt's SIGKILL: {processes_with(marker)}"
        time.sleep(0.05)
