"""Why a local server did not start, for `offprompt check`: run it once more with its stderr kept, send it
`initialize`, close its stdin, and say how it ended (its exit status and the last lines it wrote on stderr)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess

import anyio

from offprompt.config import StdioServer

#: The stderr lines a report shows: a traceback's last lines hold its reason.
STDERR_LINES = 5
_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "offprompt-check", "version": "1"},
        },
    }
)


async def how_it_ended(config: StdioServer, seconds: float) -> str | None:
    """How it ended ("exit status 3; its stderr ended: …"), or None when it still runs after `seconds` (it
    started this time) or could not be run at all (which the first start already said)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFPROMPT_")}
    env.update(config.env)
    try:
        process = await asyncio.create_subprocess_exec(
            config.command,
            *config.args,
            env=env,
            cwd=str(config.cwd) if config.cwd else None,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError:
        return None
    assert process.stdin is not None
    with contextlib.suppress(OSError):
        process.stdin.write(_INITIALIZE.encode() + b"\n")
        await process.stdin.drain()
        process.stdin.close()
    try:
        with anyio.fail_after(seconds):
            _, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()][-STDERR_LINES:]
    said = (
        f"; its stderr ended: {' | '.join(line.strip() for line in lines)}" if lines else "; it wrote nothing on stderr"
    )
    return f"exit status {process.returncode}{said}"
