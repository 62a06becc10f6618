"""Everything a task memory is made of, opened as its settings choose: one table entry per backend.

`storage/registry.py` picks the storages and indexes; this adds what lives above them (the catalog, and
the directory's lock for a memory one server holds), so `TaskMemory.open` has one path for every backend.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from offprompt.memory.catalog import Catalog, CatalogStore
from offprompt.memory.dirlock import DirectoryLock
from offprompt.memory.storage import BackendChoice, open_backends
from offprompt.memory.storage.base import BlobStorage, TextStorage
from offprompt.memory.storage.files import private_dir, secure_and_sweep
from offprompt.memory.storage.registry import StoreBackend
from offprompt.secrets.vault import SecretStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """What `TaskMemory` is built from."""

    catalog: CatalogStore
    text: TextStorage
    blobs: BlobStorage
    #: The directory's lock, held until the memory closes (None: a memory many servers use at once).
    lock: DirectoryLock | None
    #: Whether a payload without a catalog row is a killed write's, to drop at open: not where another server
    #: may be between writing a payload and its row.
    owns_payloads: bool
    #: The secrets table every server of a shared memory uses (None: the file in the memory's directory).
    shared_secrets: Callable[[], SecretStore] | None = None

    def abandon(self) -> None:
        """Give back what opening took, when the memory could not be built of it."""
        if self.lock is not None:
            self.lock.release()
        else:
            self.text.close()


def _embedded(choice: BackendChoice) -> MemoryParts:
    """Files, SQLite and Chroma in the memory's directory, which this server holds locked."""
    directory = choice.directory
    private_dir(directory.parent)
    lock = DirectoryLock(directory)
    lock.acquire()  # makes the directory too: a sibling being dropped may take it away until we hold it
    try:
        swept = secure_and_sweep(directory)  # held by no one else: every temporary file is a killed write's
        if swept:
            logger.info("removed %s bytes of half-written files from memory %r", f"{swept:,}", choice.memory_name)
        backends = open_backends(choice)
        catalog = Catalog(directory / "catalog.sqlite3")
    except BaseException:
        lock.release()
        raise
    return MemoryParts(catalog, backends.text, backends.blobs, lock, owns_payloads=True)


def _shared(choice: BackendChoice) -> MemoryParts:
    """A memory in PostgreSQL that any number of servers use at once: no directory lock; the directory holds
    only this server's copies of the texts it reads (and its secrets table)."""
    from offprompt.memory.pgcatalog import PgCatalog

    private_dir(choice.directory)
    backends = open_backends(choice)
    assert backends.database is not None
    try:
        catalog = PgCatalog(backends.database)
    except BaseException:
        backends.text.close()
        raise
    database, key = backends.database, choice.secrets_key
    if key is None:
        logger.info(
            'secret handles are resolved only by the server that gave them: set "secrets_key" in the offprompt '
            "block (the same on every server) to share them across the servers of memory %r",
            choice.memory_name,
        )
        return MemoryParts(catalog, backends.text, backends.blobs, None, owns_payloads=False)

    def shared_secrets() -> SecretStore:
        from offprompt.memory.storage.pg_secrets import SharedSecretVault

        return SharedSecretVault(database, key)

    return MemoryParts(catalog, backends.text, backends.blobs, None, owns_payloads=False, shared_secrets=shared_secrets)


MEMORY_BACKENDS: dict[StoreBackend, Callable[[BackendChoice], MemoryParts]] = {
    "files": _embedded,
    "postgres": _shared,
}


def open_memory_parts(choice: BackendChoice) -> MemoryParts:
    """The parts of the memory `choice` names, from the backend its settings choose."""
    return MEMORY_BACKENDS[choice.store](choice)
