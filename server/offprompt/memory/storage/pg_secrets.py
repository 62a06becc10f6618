"""A shared memory's secrets table, in PostgreSQL: a handle one server gives, every server of the memory resolves.

The values are encrypted (AES-256-GCM, the handle's id and owner as associated data, so a value moved to another
row does not decrypt) with a key from the config (`secrets_key`) that never reaches the database. A value is
looked up by an HMAC of owner and value under a second key derived from the same secret, not by a bare hash,
which would let a reader of the database test guesses. As in the files memory, a handle is bound to its owner
and to the servers whose output held it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from typing import Final

from offprompt.errors import ConfigError
from offprompt.memory.storage.pg import PgDatabase
from offprompt.secrets.vault import ID_ALPHABET, ID_LENGTH, Secret, handle_text

__all__ = ["SharedSecretVault", "derive_keys"]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS secrets (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    digest BYTEA NOT NULL,
    kind TEXT NOT NULL,
    nonce BYTEA NOT NULL,
    sealed BYTEA NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    UNIQUE (owner, digest)
);
CREATE TABLE IF NOT EXISTS secret_producers (
    id TEXT NOT NULL,
    server TEXT NOT NULL,
    PRIMARY KEY (id, server)
);
"""
_BY_DIGEST: Final = "SELECT id, kind FROM secrets WHERE owner = %s AND digest = %s"


def derive_keys(secret: str) -> tuple[bytes, bytes]:
    """The encryption key and the lookup key, each 32 bytes, from the configured `secrets_key` (HKDF-SHA256)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    material = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=b"offprompt secrets v1").derive(
        secret.encode("utf-8")
    )
    return material[:32], material[32:]


class SharedSecretVault:
    """Handles in, values out, for every server of one shared memory."""

    def __init__(self, db: PgDatabase, secret: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._db = db
        sealing, self._lookup = derive_keys(secret)
        self._aead = AESGCM(sealing)
        db.ensure_schema(SCHEMA)

    def _digest(self, owner: str, value: str) -> bytes:
        return hmac.new(self._lookup, f"{owner}\0{value}".encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    @staticmethod
    def _bound(secret_id: str, owner: str) -> bytes:
        return f"{secret_id}\0{owner}".encode("utf-8", "surrogatepass")

    def handle(self, value: str, kind: str, owner: str, server: str) -> str:
        """The handle of `value` for `owner` (the one any server gave it, or a new one); `server` may have it back."""
        digest = self._digest(owner, value)
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT id, kind FROM secrets WHERE owner = %s AND digest = %s", (owner, digest)
            ).fetchone()
            while row is None:
                secret_id = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
                nonce = os.urandom(12)
                sealed = self._aead.encrypt(
                    nonce, value.encode("utf-8", "surrogatepass"), self._bound(secret_id, owner)
                )
                conn.execute(
                    "INSERT INTO secrets (id, owner, digest, kind, nonce, sealed, created) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (secret_id, owner, digest, kind, nonce, sealed, time.time()),
                )
                # Another server may have stored the same value meanwhile (its id wins), or the id was taken.
                row = conn.execute(
                    "SELECT id, kind FROM secrets WHERE owner = %s AND digest = %s", (owner, digest)
                ).fetchone()
            secret_id, kind = str(row[0]), str(row[1])
            conn.execute(
                "INSERT INTO secret_producers (id, server) VALUES (%s, %s) ON CONFLICT DO NOTHING", (secret_id, server)
            )
        return handle_text(secret_id, kind)

    def reveal(self, secret_id: str, owner: str) -> Secret | None:
        """The value behind an id and the servers that produced it, or None (unknown, or another owner's)."""
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT nonce, sealed FROM secrets WHERE id = %s AND owner = %s", (secret_id, owner)
            ).fetchone()
            if row is None:
                return None
            servers = conn.execute("SELECT server FROM secret_producers WHERE id = %s", (secret_id,)).fetchall()
        from cryptography.exceptions import InvalidTag

        try:
            value = self._aead.decrypt(bytes(row[0]), bytes(row[1]), self._bound(secret_id, owner))
        except InvalidTag:
            raise ConfigError(
                f"the secret behind handle {secret_id} was sealed with another secrets_key: every server of a shared "
                'memory needs the same "secrets_key" in its offprompt block'
            ) from None
        return Secret(value.decode("utf-8", "surrogatepass"), frozenset(str(s) for (s,) in servers))

    def close(self) -> None:
        pass  # the connections are the memory's
