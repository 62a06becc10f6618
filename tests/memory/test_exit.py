"""A process that stores a large text and exits without closing its memory exits cleanly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ..support import DOCS

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import mcp_types as mt
    from offprompt.artifacts import from_block
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    memory = TaskMemory.open(MemorySettings(name="exit", data_dir=Path(sys.argv[1])))
    memory.store([from_block(mt.TextContent(text=Path(sys.argv[2]).read_text() * 3))], tool="fs.read_file")
    deadline = time.monotonic() + 120
    while not memory.text.pending("dense") and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # the embedder is inside the model now
    print("leaving without close", flush=True)
    """
)


def test_exiting_while_the_embedder_runs_does_not_abort_the_process(tmp_path: Path) -> None:
    # A thread inside onnxruntime at interpreter shutdown used to end the process with SIGABRT (exit 134).
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), str(DOCS / "code_subprocess.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "leaving without close" in done.stdout
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
