"""Helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as mt

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "bench" / "retrieval" / "data" / "docs"


def offprompt_command(*args: str) -> list[str]:
    """The installed `offprompt` console script, run by this interpreter's environment."""
    script = Path(sys.executable).with_name("offprompt")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "offprompt", *args]


def loaded_by(imports: str, watched: Sequence[str]) -> list[str]:
    """Which of the `watched` packages a fresh interpreter holds after `imports` (a statement, e.g. "import x")."""
    probe = f"import json, sys; {imports}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return sorted(set(json.loads(out)) & set(watched))


def subprocess_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def served_over_pipes(config: Path, data_dir: Path) -> subprocess.Popen[bytes]:
    """`offprompt serve --config CONFIG` as a client starts it, spoken to in raw lines on its pipes."""
    return subprocess.Popen(
        offprompt_command("serve", "--config", str(config), "--data-dir", str(data_dir)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=subprocess_env(),
    )


PEERS = REPO / "tests" / "peers" / "node_modules"


def require_installed(paths: Sequence[Path], install: str) -> None:
    """Skip a test whose npm packages are missing, with how to install them; in CI (`CI` set) fail it instead,
    since a CI run that skips them would pass without testing what they cover."""
    missing = [str(p) for p in paths if not p.exists()]
    if not missing:
        return
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{', '.join(missing)} missing in CI: the CI script must run `{install}` first", pytrace=False)
    pytest.skip(f"npm packages not installed: run `{install}`")


def node_peer(script: str, *args: str) -> dict[str, object]:
    """An mcpServers entry that runs an npm peer from tests/peers with node."""
    path = PEERS / script
    require_installed([path], "npm ci --prefix tests/peers")
    return {"command": "node", "args": [str(path), *args]}


def meta(result: mt.CallToolResult) -> dict[str, Any]:
    """The facts offprompt put in `_meta["offprompt"]` of a result."""
    assert result.meta is not None
    return dict(result.meta["offprompt"])


def text_of(result: mt.CallToolResult, index: int = 0) -> str:
    block = result.content[index]
    assert isinstance(block, mt.TextContent)
    return block.text


def noise_png(width: int, height: int) -> bytes:
    """A real PNG of noise (incompressible, so its size is about width * height * 3 bytes)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@contextmanager
def chunker_held(memory: Any) -> Iterator[None]:
    """While inside, the memory's chunker cannot write its chunks: what is stored meanwhile stays unsearchable."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with memory.text._write_lock:  # where the chunker writes its chunks
            held.set()
            release.wait(120)

    threading.Thread(target=hold, daemon=True).start()
    held.wait()
    try:
        yield
    finally:
        release.set()
