"""`offprompt serve` starts without the command modules: they load only when their command runs."""

from __future__ import annotations

import subprocess
import sys


def test_serve_imports_none_of_the_command_modules() -> None:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import offprompt.cli"], capture_output=True, text=True, check=True
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "|" in line}
    assert "offprompt.commands.parsers" in imported  # the arguments only: standard library
    heavy = {"offprompt.commands.memory", "offprompt.commands.stats", "offprompt.commands.clients"}
    assert imported & heavy == set()
