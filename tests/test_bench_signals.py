"""`python -m bench` started as a shell's background job (SIGINT and SIGQUIT ignored) or under nohup (SIGHUP)
must still start its servers with the stop signals at their defaults: the startup and opening sections time a
server's exit on SIGINT, and a server that inherited an ignored SIGINT never exits (the section then timed out,
or timed the wait for its kill instead of an exit)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Runs as the bench's parent process would: the stops reset, then a child started and its ignored set read.
CHILD = """
from bench.run import stops_at_their_defaults
import subprocess, sys
stops_at_their_defaults()
print(subprocess.run(["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True).stdout)
"""


def _ignoring_stops() -> None:
    for stop in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)


def test_a_bench_started_with_stop_signals_ignored_starts_its_servers_with_them_at_their_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, check=True, preexec_fn=_ignoring_stops
    )
    ignored = int(done.stdout.split()[-1], 16)
    for stop in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        assert not ignored & (1 << (stop - 1)), f"{stop.name} is still ignored in the server the bench starts"
