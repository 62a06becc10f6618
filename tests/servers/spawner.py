"""A stdio MCP server that runs another as its child, as `npx` runs node and `uvx` runs python, and starts a
helper that reads no stdin, as a browser tools server starts its browser.

    python tests/servers/spawner.py MARKER

It starts `counter.py MARKER` with its own stdin and stdout and waits for it; the helper (a process that sleeps)
is left running when it exits, as such helpers are when their server dies. MARKER, in every command line, lets a
test find the three processes with `ps`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COUNTER = Path(__file__).with_name("counter.py")
helper = "import time; time.sleep(3600)"
subprocess.Popen([sys.executable, "-c", helper, *sys.argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
raise SystemExit(subprocess.call([sys.executable, str(COUNTER), *sys.argv[1:]]))
