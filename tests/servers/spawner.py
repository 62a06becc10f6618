"""A stdio MCP server that runs another as its child, as `npx` runs node and `uvx` runs python.

    python tests/servers/spawner.py MARKER

It starts `counter.py MARKER` with its own stdin and stdout and waits for it; MARKER, in both command lines, lets
a test find both processes with `ps`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COUNTER = Path(__file__).with_name("counter.py")
raise SystemExit(subprocess.call([sys.executable, str(COUNTER), *sys.argv[1:]]))
