"""`offprompt stats`: its figures agree with a session the test drove through the proxy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcp_types as mt
import pytest

from offprompt.memory.catalog import Catalog
from offprompt.memory.settings import MemorySettings
from offprompt.policy import result_text_size
from offprompt.results import model_text
from offprompt.tokens import count_tokens

from .fill import Session
from .run import run, run_json
from .test_memory_commands import flags

pytestmark = pytest.mark.anyio


async def test_stats_agree_with_the_session(
    session: Session, memory_settings: MemorySettings, capfd: pytest.CaptureFixture[str]
) -> None:
    f = flags(memory_settings)
    report = run_json(capfd, "stats", *f)
    (memory,) = report["memories"]
    tools = {(t["server"], t["tool"]): t for t in memory["tools"]}

    lines = tools[("counter", "lines")]
    shown = run_json(capfd, "memory", "show", session.namespace, *f)
    text_item = shown["items"][0]  # item 1 is the structuredContent that repeats it: counted once
    assert (lines["stored"], lines["stored_tokens"]) == (1, text_item["tokens"])
    assert lines["reference_tokens"] == count_tokens(model_text(session.stored))

    echo = tools[("counter", "echo")]
    small = mt.CallToolResult(
        content=[mt.TextContent(text=session.inline_text)], structured_content={"result": session.inline_text}
    )
    assert (echo["inline"], echo["inline_bytes"], echo["stored"]) == (1, result_text_size(small)[0], 0)

    load, grep = tools[("offprompt", "memory_load")], tools[("offprompt", "memory_grep")]
    assert (load["reads"], load["read_tokens"]) == (1, count_tokens(session.read_texts[0]))
    assert (grep["reads"], grep["read_tokens"]) == (1, count_tokens(session.read_texts[1]))

    saved = lines["stored_tokens"] - lines["reference_tokens"] - load["read_tokens"] - grep["read_tokens"]
    assert memory["tokens_saved"] == saved == report["overall"]["tokens_saved"]
    _, out, _ = run(capfd, "stats", *f)
    assert f"tokens saved: {saved:,}" in out
    assert out.splitlines()[1].split()[:4] == ["SERVER", "TOOL", "INLINE", "INLINE"]

    assert run_json(capfd, "stats", *f, "--since", "1h")["overall"]["tokens_saved"] == saved
    later = run_json(capfd, "stats", *f, "--since", "2100-01-01")
    assert later["overall"]["stored"] == 0
    _code, out, _ = run(capfd, "stats", *f, "--until", "2000-01-01")
    assert out.startswith("nothing counted yet")


def test_counts_of_a_memory_never_closed_reach_the_catalog_at_exit(tmp_path: Path) -> None:
    # offprompt.wrap's process may end without closing its memory: its last counts must not be lost.
    code = (
        "import sys; from pathlib import Path; from offprompt.memory.settings import MemorySettings; "
        "from offprompt.memory.task_memory import TaskMemory; "
        "m = TaskMemory.open(MemorySettings(name='w', data_dir=Path(sys.argv[1]))); "
        "m.usage.inline('srv', 'tool', 123)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=120)
    catalog = Catalog(tmp_path / "w" / "catalog.sqlite3", readonly=True)
    rows = catalog.usage()
    catalog.close()
    assert [(r.server, r.tool, r.kind, r.count, r.bytes) for r in rows] == [("srv", "tool", "inline", 1, 123)]
