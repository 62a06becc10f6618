"""`offprompt index`: a shared memory's indexer alone, so serving replicas (`"indexer": false`) never embed.

It takes the memory's chunk and embedding jobs from PostgreSQL with the leases every replica uses, loads the
model once, and serves nothing. Several may run; a job is taken by one at a time, and one killed mid-job is
taken over by another from the last batch it recorded.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from dataclasses import replace

from offprompt.commands.common import memory_settings, settings_from
from offprompt.errors import ConfigError
from offprompt.memory.siblings import open_free

logger = logging.getLogger("offprompt")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if settings.postgres is None:
        raise ConfigError(
            'offprompt index runs the indexer of a shared memory: set "postgres" in the offprompt block of '
            f"{args.config}. A memory of files is indexed by the server that stores in it."
        )
    memory = open_free(replace(memory_settings(settings), indexer=True))
    stop = threading.Event()
    for stopping in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stopping, lambda *_: stop.set())
    logger.info(
        'indexing the shared memory "%s" (%s, data directory %s); stop with Ctrl-C',
        settings.memory_name,
        "vectors on " + (settings.chroma.url or "no Chroma server") if settings.chroma.mode == "http" else "words only",
        memory.directory,
    )
    stop.wait()
    memory.close(wait=0)  # a batch cut off is taken over from its last recorded one
    return 0
