"""The secrets table: each secret value behind a handle `⟦secret:<id> <kind>⟧`, bound to its owner.

The values live only here: a SQLite file readable by its user alone (0600), beside the memory's catalog. They
are never indexed, logged or put in a reference. The same value for the same owner always gets the same
handle, so a secret that shows up twice reads as one. Beside each handle the table keeps the servers whose
output held the value: a handle goes back only to those (and to whom their `share_with` names).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["HANDLE", "ID_ALPHABET", "ID_LENGTH", "QUOTED_HANDLE", "Secret", "SecretStore", "SecretVault", "handle_text"]

#: A handle as the model sees it; the kind is a hint for the model and optional when it is passed back.
HANDLE = re.compile(r"⟦secret:(?P<id>[a-z0-9]{4,16})(?: [a-z0-9-]{1,40})?⟧")
#: A handle as it sits in a URI, percent-encoded so the URI stays valid (`%E2%9F%A6secret%3A...%E2%9F%A7`).
QUOTED_HANDLE = re.compile(r"%E2%9F%A6secret%3A(?P<id>[a-z0-9]{4,16})(?:%20[a-z0-9-]{1,40})?%E2%9F%A7", re.IGNORECASE)
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ID_LENGTH = 10  # 51 bits: unguessable within one owner, short in the prompt

_SCHEMA = """
CREATE TABLE IF NOT EXISTS secrets (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (owner, digest)
);
CREATE TABLE IF NOT EXISTS producers (
    id TEXT NOT NULL,
    server TEXT NOT NULL,
    PRIMARY KEY (id, server)
)
"""


@dataclass(frozen=True, slots=True)
class Secret:
    """A value behind a handle, and the servers whose output held it."""

    value: str
    servers: frozenset[str]


class SecretStore(Protocol):
    """Where a memory's secret values live: this file (`SecretVault`), or a shared memory's database."""

    def handle(self, value: str, kind: str, owner: str, server: str) -> str: ...

    def reveal(self, secret_id: str, owner: str) -> Secret | None: ...

    def close(self) -> None: ...


def handle_text(secret_id: str, kind: str) -> str:
    return f"⟦secret:{secret_id} {kind}⟧"


class SecretVault:
    """Handles in, values out, for one memory. `path=None` keeps the table in this process only (tests, `wrap`
    without a data directory)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Created 0600 before SQLite opens it, so the values are never readable by others, not even briefly.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(path, 0o600)
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=DELETE")  # no -wal file left readable beside it
            self._db.executescript(_SCHEMA)

    def handle(self, value: str, kind: str, owner: str, server: str) -> str:
        """The handle of `value` for `owner`: the one it already has, or a new one; `server` (whose output held
        it) is noted as one the value may go back to."""
        digest = hashlib.sha256(f"{owner}\0{value}".encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT id, kind FROM secrets WHERE owner = ? AND digest = ?", (owner, digest)
            ).fetchone()
            if row is not None:
                secret_id, kind = row[0], row[1]
            else:
                secret_id = self._insert(owner, digest, kind, value)
            self._db.execute("INSERT OR IGNORE INTO producers (id, server) VALUES (?, ?)", (secret_id, server))
            return handle_text(secret_id, kind)

    def _insert(self, owner: str, digest: str, kind: str, value: str) -> str:
        while True:
            secret_id = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
            try:
                self._db.execute(
                    "INSERT INTO secrets (id, owner, digest, kind, value, created) VALUES (?, ?, ?, ?, ?, ?)",
                    (secret_id, owner, digest, kind, value, time.time()),
                )
            except sqlite3.IntegrityError:
                continue  # that id is taken (by anyone): draw again
            return secret_id

    def reveal(self, secret_id: str, owner: str) -> Secret | None:
        """The value behind an id and the servers that produced it, or None when there is none for this owner
        (unknown, or someone else's)."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM secrets WHERE id = ? AND owner = ?", (secret_id, owner)
            ).fetchone()
            if row is None:
                return None
            servers = self._db.execute("SELECT server FROM producers WHERE id = ?", (secret_id,)).fetchall()
        return Secret(str(row[0]), frozenset(str(server) for (server,) in servers))

    def close(self) -> None:
        with self._lock:
            self._db.close()
