"""DEBUG logs name sizes and kinds, never what a message held: an `always` result read back over HTTP and SSE,
and an HTTP downstream's URL with a password and a key in it, stay out of the log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ..serving import clean_env, offprompt_serving
from ..support import REPO
from .test_transports import session_for, sse_session_for

pytestmark = pytest.mark.anyio

RECORDING = REPO / "tests" / "servers" / "recording.py"
CONTENT = "MARKER-of-a-sensitive-result-7Qz"
PASSWORD = "pa55w0rdZ9q"
QUERY_KEY = "QK7xLm2Vb8Rt"


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_debug_logs_hold_no_content_and_no_downstream_password(tmp_path: Path, transport: str) -> None:
    vault = {"command": sys.executable, "args": [str(RECORDING), str(tmp_path / "r.jsonl")], "off_prompt": "always"}
    # Nothing listens at the remote one: trying to connect is enough for the SDK to log its URL.
    servers = {"vault": vault, "remote": {"url": f"http://agent:{PASSWORD}@127.0.0.1:9/mcp?key={QUERY_KEY}"}}
    config = tmp_path / "offprompt.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    args = ("--config", str(config), "--transport", transport, "--log-level", "DEBUG")
    with offprompt_serving(tmp_path / "data", *args, env=clean_env()) as served:
        opened = session_for(served.url) if transport == "http" else sse_session_for(served.url)
        async with opened as session:
            stored = await session.call_tool("vault__echo", {"text": CONTENT})
            assert stored.meta is not None
            namespace = stored.meta["offprompt"]["artifact_namespace"]
            loaded = await session.call_tool("memory_load", {"artifact_namespace": namespace})
            assert CONTENT in json.dumps(loaded.model_dump(mode="json"))  # the client got it back
        log = served.stderr()
    assert "DEBUG" in log  # the level was on
    assert CONTENT not in log
    assert PASSWORD not in log
    assert QUERY_KEY not in log
