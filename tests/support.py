"""Helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "bench" / "retrieval" / "data" / "docs"


def offprompt_command(*args: str) -> list[str]:
    """The installed `offprompt` console script, run by this interpreter's environment."""
    script = Path(sys.executable).with_name("offprompt")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "offprompt", *args]


def subprocess_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}
