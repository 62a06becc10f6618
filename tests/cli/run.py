"""Running `offprompt …` in process (output captured) or as a subprocess."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from offprompt.cli import main

from ..support import offprompt_command, subprocess_env


def run(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def run_json(capfd: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run(capfd, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def spawn(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        offprompt_command(*args), capture_output=True, text=True, env=subprocess_env(), input=stdin, timeout=300
    )
