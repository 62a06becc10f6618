"""Blobs of a shared memory in PostgreSQL: content-addressed `bytea` objects, referred to per namespace and item."""

from __future__ import annotations

import hashlib
from typing import Final

from offprompt.artifacts import Artifact
from offprompt.errors import NotFoundError
from offprompt.memory.storage.base import StoredItem
from offprompt.memory.storage.blob import payload_of
from offprompt.memory.storage.pg import PgDatabase

__all__ = ["PgBlobStorage"]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS blob_objects (sha256 TEXT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS blob_refs (
    namespace TEXT NOT NULL, item INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (namespace, item)
);
CREATE INDEX IF NOT EXISTS blob_refs_by_object ON blob_refs (sha256);
"""


class PgBlobStorage:
    """The same screenshot stored twice takes its space once; an object goes with the last reference to it."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def store(self, namespace: str, item: int, artifact: Artifact) -> StoredItem:
        data = payload_of(artifact)
        digest = hashlib.sha256(data).hexdigest()
        with self._db.transaction() as conn:
            conn.execute("INSERT INTO blob_objects VALUES (%s, %s) ON CONFLICT (sha256) DO NOTHING", (digest, data))
            conn.execute(
                "INSERT INTO blob_refs VALUES (%s, %s, %s) ON CONFLICT (namespace, item) DO UPDATE "
                "SET sha256 = excluded.sha256",
                (namespace, item, digest),
            )
        return StoredItem(tokens=0, bytes=len(data))

    def load(self, namespace: str, item: int) -> bytes:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT o.data FROM blob_refs r JOIN blob_objects o USING (sha256) "
                "WHERE r.namespace = %s AND r.item = %s",
                (namespace, item),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no blob stored as item {item} of {namespace!r}")
        return bytes(row[0])

    def delete(self, namespace: str) -> None:
        with self._db.transaction() as conn:
            dropped = conn.execute(
                "DELETE FROM blob_refs WHERE namespace = %s RETURNING sha256", (namespace,)
            ).fetchall()
            digests = sorted({d for (d,) in dropped})
            if digests:
                conn.execute(
                    "DELETE FROM blob_objects o WHERE o.sha256 = ANY(%s) "
                    "AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.sha256 = o.sha256)",
                    (digests,),
                )

    def namespaces(self) -> set[str]:
        with self._db.connection() as conn:
            return {ns for (ns,) in conn.execute("SELECT DISTINCT namespace FROM blob_refs")}
