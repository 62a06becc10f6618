"""`offprompt serve` starts without the command modules: they load only when their command runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.support import REPO, served_over_pipes

COUNTER = str(REPO / "tests" / "servers" / "counter.py")
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def test_serve_imports_none_of_the_command_modules() -> None:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import offprompt.cli"], capture_output=True, text=True, check=True
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "|" in line}
    assert "offprompt.commands.parsers" in imported  # the arguments only: standard library
    heavy = {"offprompt.commands.memory", "offprompt.commands.stats", "offprompt.commands.clients"}
    assert imported & heavy == set()


#: Shared objects a served process must not have mapped before its first store or query: the vector store, the
#: embedding runtime and its tokenizer.
HEAVY_LIBRARIES = ("onnxruntime", "chromadb", "tokenizers")
IDLE_RSS_KIB = 120 * 1024


def test_a_served_process_loads_nothing_heavy_until_it_stores(tmp_path: Path) -> None:
    """2 s after the real server's first answer (a warm-up started late would show by then), a served process holds
    neither the vector store, nor the model's runtime, nor the tokenizer tables (~80 MB): its RSS says so."""
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": {"counter": {"command": sys.executable, "args": [COUNTER]}}}))
    served = served_over_pipes(config, tmp_path / "data")
    try:
        assert served.stdin is not None
        assert served.stdout is not None
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            # Answered by the real server, never by the prelude: the server has been imported and serves.
            {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"},
        ):
            served.stdin.write(json.dumps(message).encode() + b"\n")
        served.stdin.flush()
        answered: dict[str, object] = {}
        while answered.get("id") != 3:
            answered = json.loads(served.stdout.readline())
        time.sleep(2)
        maps = Path(f"/proc/{served.pid}/maps").read_text()
        status = Path(f"/proc/{served.pid}/status").read_text()
    finally:
        served.kill()
        served.wait()
    assert [name for name in HEAVY_LIBRARIES if name in maps] == []
    rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])
    assert rss <= IDLE_RSS_KIB, f"{rss / 1024:.0f} MiB resident while idle"
