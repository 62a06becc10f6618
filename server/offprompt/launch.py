"""The `offprompt` command's entry point: over stdio, the first answers go out while the rest is imported.

`offprompt serve` on stdio starts importing the server (the SDK, pydantic, the proxy: most of a second) in a
thread and answers the client's `initialize` and `tools/list` from the last start's answers meanwhile
(`serve.prelude`); every other command imports `cli` and runs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

from offprompt.serve.prelude import FrontCache, Handoff, answer_first_requests


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    front = FrontCache.for_serve(args)
    handoff: Handoff | None = None
    if front is not None:
        importing = threading.Thread(target=_import_server, name="offprompt-import", daemon=True)
        importing.start()
        handoff = answer_first_requests(front, importing)
    from offprompt.cli import main as run

    return run(args, handoff=handoff)


def _import_server() -> None:
    """What serving over stdio imports before its first answer (the imports in `cli._serve` included). A failure
    is left to the main thread's import of `cli`, which raises it again with its traceback, once."""
    try:
        import offprompt.cli
        import offprompt.proxy.downstreams
        import offprompt.serve.app
        import offprompt.serve.fastlane
        import offprompt.serve.stdio  # noqa: F401
    except Exception:  # told by the main thread
        pass
