"""A real browser server behind offprompt: chrome-devtools-mcp driving Debian's Chromium, headless.

What a user of a browser server meets first: a screenshot offprompt stores must come back to the model as the
image the server sent, and a page's accessibility snapshot must be stored with a map of its structure.
"""

from __future__ import annotations

import base64
import functools
import http.server
import shutil
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import mcp_types as mt
import pytest
from mcp import Client

from offprompt.config import parse_config
from offprompt.memory.task_memory import TaskMemory
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server

from ..support import meta, node_peer, require_installed

pytestmark = [pytest.mark.anyio, pytest.mark.node]

PAGE = """<!doctype html><html><head><title>Release dashboard</title></head><body>
<header><nav aria-label="Main"><a href="#builds">Builds</a> <a href="#issues">Issues</a></nav></header>
<main><h1>Release dashboard</h1>
<section id="builds"><h2>Builds</h2><ul>{rows}</ul></section>
<section id="issues"><h2>Open issues</h2><p>Crash on start; slow search.</p></section>
</main><footer><p>Updated hourly</p></footer></body></html>
"""


def chromium() -> str:
    """Debian's Chromium, which .ci/run installs; skipped elsewhere when it is missing, failed in CI."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        require_installed([Path("/usr/bin/chromium")], "apt-get install chromium")
    return found or ""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    rows = "".join(f"<li>Build {n}: passed in {n % 17 + 3} minutes</li>" for n in range(400))
    (tmp_path / "index.html").write_text(PAGE.format(rows=rows))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/index.html"
    finally:
        server.shutdown()


async def test_a_screenshot_and_a_snapshot_of_a_real_browser_come_back_whole(memory: TaskMemory, site: str) -> None:
    browser = chromium()
    entry = node_peer(
        "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js",
        "--headless",
        "--isolated",
        "--executablePath",
        browser,
        "--chromeArg=--no-sandbox",  # Chromium refuses to run as root with its sandbox (CI runs as root)
        "--no-usage-statistics",
        "--no-performance-crux",
        "--viewport",
        "1280x800",
    )
    loaded = parse_config(
        {"offprompt": {"blob_threshold_bytes": 10_000}, "mcpServers": {"browser": {**entry, "env": {"CI": "1"}}}}
    )
    async with Proxy(loaded.servers).running() as proxy, Client(build_server(memory, proxy, loaded.settings)) as client:
        navigated = await client.call_tool("browser__navigate_page", {"url": site, "pageId": 1})
        assert not navigated.is_error, navigated

        shot = await client.call_tool("browser__take_screenshot", {"pageId": 1})
        stored = meta(shot)  # a 1280x800 PNG is over the blob threshold: stored, the model gets a reference
        assert "image" in stored["kinds"]
        item = stored["kinds"].index("image")
        loaded_back = await client.call_tool(
            "memory_load", {"artifact_namespace": stored["artifact_namespace"], "item": item}
        )
        images = [b for b in loaded_back.content if isinstance(b, mt.ImageContent)]
        assert len(images) == 1  # over stdio (and in process) the image comes back whole, as the server sent it
        png = base64.b64decode(images[0].data)
        assert png == memory.payload(stored["artifact_namespace"], item)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", png[16:24]) == (1280, 800)  # IHDR: the viewport, not a downscaled copy

        snapshot = await client.call_tool("browser__take_snapshot", {"pageId": 1})
        outline = "\n".join(b.text for b in snapshot.content if isinstance(b, mt.TextContent))
        assert meta(snapshot)["kinds"] == ["text"]  # 400 list items: stored
        assert 'heading "Builds" (h2)' in outline
        assert 'navigation "Main"' in outline
