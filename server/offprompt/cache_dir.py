"""Where offprompt keeps what it can rebuild (the lists and front caches): `OFFPROMPT_CACHE_DIR`, else the user
cache directory. The standard library and platformdirs only: the stdio prelude reads it before anything else
has loaded."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "OFFPROMPT_CACHE_DIR"


def cache_directory(part: str) -> Path:
    """The directory of one cache, `part` of offprompt's cache directory."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser() / part
    import platformdirs

    return Path(platformdirs.user_cache_dir("offprompt")) / part
