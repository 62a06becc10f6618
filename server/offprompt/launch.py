"""The `offprompt` command's entry point: over stdio, the opening is answered while the rest is imported.

`offprompt serve` on stdio starts importing the server (the SDK, pydantic, the proxy: a second on idle cores,
many on busy ones) in a thread and answers the client's opening from data meanwhile (`serve.prelude`); every
other command imports `cli` and runs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

from offprompt.serve.prelude import FrontCache, Handoff, answer_first_requests, exit_on_stop_signals


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    front = FrontCache.for_serve(args)
    handoff: Handoff | None = None
    if front is not None:
        exit_on_stop_signals()  # until the server's own handlers take over: nothing is open yet that needs closing
        importing = threading.Thread(target=_import_server, name="offprompt-import", daemon=True)
        importing.start()
        handoff = answer_first_requests(front, importing)
        importing.join()
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
        import offprompt.serve.front_lists
        import offprompt.serve.stdio  # noqa: F401
    except Exception:  # told by the main thread
        pass
