"""Downstream servers never outlive offprompt, SIGKILL included.

Each local server runs in a process group of its own, and a small watchdog process (the standard library only)
holds the read end of a pipe whose write end only offprompt holds. When offprompt ends, however it ends, the
kernel closes that end; the watchdog reads EOF and kills every group still listed. A parent-death signal would
reach the server's first process only, not what it starts (`npx` → node, `uvx` → python), and a client that
kills offprompt with SIGKILL gives it no chance to stop them itself.

POSIX only (process groups and pipes): on Windows servers are stopped by offprompt's own shutdown alone.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

__all__ = ["forget", "watch"]

logger = logging.getLogger(__name__)

#: The watchdog's program. It ignores the signals a terminal or a client sends offprompt's group (it is in a
#: session of its own anyway), reads "+PGID" and "-PGID" lines, and at EOF gives each listed group SIGTERM, then
#: SIGKILL to what is left after a moment.
_WATCHDOG = """
import os, signal, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
groups, rest = set(), b""
while True:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    *lines, rest = (rest + chunk).split(b"\\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
def signal_all(sig):
    alive = set()
    for group in groups:
        try:
            os.killpg(group, sig)
            alive.add(group)
        except OSError:
            pass
    return alive
if signal_all(signal.SIGTERM):
    time.sleep(0.3)
    signal_all(signal.SIGKILL)
"""

_lock = threading.Lock()
_watchdog: subprocess.Popen[bytes] | None = None


def watch(pgid: int) -> None:
    """Kill process group `pgid` when offprompt ends, unless `forget` is called first."""
    _tell(f"+{pgid}\n".encode())


def forget(pgid: int) -> None:
    """The group has been stopped (its number may be reused): the watchdog leaves it alone."""
    _tell(f"-{pgid}\n".encode())


def _tell(line: bytes) -> None:
    if sys.platform == "win32":
        return
    global _watchdog
    with _lock:
        if _watchdog is None or _watchdog.poll() is not None:
            _watchdog = _start()
        if _watchdog is None or _watchdog.stdin is None:
            return
        try:
            _watchdog.stdin.write(line)
            _watchdog.stdin.flush()
        except OSError as exc:  # the watchdog died: the next server starts another
            logger.warning("the watchdog that stops servers when offprompt is killed has gone: %s", exc)


def _start() -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # out of the reach of the signals sent to offprompt's group
        )
    except OSError as exc:
        logger.warning("could not start the watchdog that stops servers when offprompt is killed: %s", exc)
        return None
