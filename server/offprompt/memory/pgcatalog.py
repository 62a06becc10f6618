"""The catalog of a shared memory, in PostgreSQL: the same records as `catalog.Catalog`, for many servers.

A namespace row is written in one transaction with its items, so every server lists a namespace whole or not
at all. Deleting it takes its items with it (ON DELETE CASCADE).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from offprompt.errors import StoreUnavailableError
from offprompt.memory.catalog import (
    LISTED,
    WHOLE,
    Flow,
    ItemRecord,
    NamespaceRecord,
    Origin,
    UsageRow,
    item_from_row,
    item_rows,
    namespace_from_row,
    namespace_row,
)
from offprompt.memory.storage.pg import PgDatabase

__all__ = ["PgCatalog"]

logger = logging.getLogger(__name__)

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS namespaces (
    namespace TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION,
    seq BIGSERIAL
);
CREATE TABLE IF NOT EXISTS items (
    namespace TEXT NOT NULL REFERENCES namespaces (namespace) ON DELETE CASCADE,
    item INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    mime_type TEXT,
    tokens BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    meta TEXT NOT NULL,
    PRIMARY KEY (namespace, item)
);
CREATE INDEX IF NOT EXISTS namespaces_created ON namespaces (created);
CREATE INDEX IF NOT EXISTS namespaces_owner ON namespaces (owner);
CREATE TABLE IF NOT EXISTS origins (
    namespace TEXT PRIMARY KEY REFERENCES namespaces (namespace) ON DELETE CASCADE,
    server TEXT NOT NULL,
    sensitive BOOLEAN NOT NULL
);
CREATE TABLE IF NOT EXISTS flows (
    namespace TEXT NOT NULL REFERENCES namespaces (namespace) ON DELETE CASCADE,
    at DOUBLE PRECISION NOT NULL,
    tool TEXT NOT NULL,
    part TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS flows_namespace ON flows (namespace);
CREATE TABLE IF NOT EXISTS usage (
    minute BIGINT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    kind TEXT NOT NULL,
    count BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    model_tokens BIGINT NOT NULL,
    PRIMARY KEY (minute, server, tool, kind)
);
ALTER TABLE namespaces ADD COLUMN IF NOT EXISTS shown TEXT;
"""
_ITEMS: Final = "SELECT item, kind, name, mime_type, tokens, bytes, meta FROM items WHERE namespace = %s ORDER BY item"


class PgCatalog:
    """Namespace and item records in the memory's PostgreSQL schema; safe for many threads and servers."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self.readonly = False
        db.ensure_schema(SCHEMA)

    def add_usage(self, rows: Mapping[tuple[int, str, str, str], tuple[int, int, int, int]]) -> None:
        if not rows:
            return
        try:
            with self._db.transaction() as conn, conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO usage VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (minute, server, tool, kind) DO UPDATE SET count = usage.count + excluded.count, "
                    "bytes = usage.bytes + excluded.bytes, tokens = usage.tokens + excluded.tokens, "
                    "model_tokens = usage.model_tokens + excluded.model_tokens",
                    [(*key, *value) for key, value in rows.items()],
                )
        except StoreUnavailableError as exc:  # counts for `offprompt stats` only: never fail a call for them
            logger.warning("usage counts of %d rows were dropped: %s", len(rows), exc)

    def usage(self, since: float | None = None, until: float | None = None) -> list[UsageRow]:
        sql = "SELECT server, tool, kind, SUM(count), SUM(bytes), SUM(tokens), SUM(model_tokens) FROM usage"
        where, params = [], []
        if since is not None:
            where.append("minute >= %s")
            params.append(int(since // 60))
        if until is not None:
            where.append("minute < %s")
            params.append(int(-(-until // 60)))
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " GROUP BY server, tool, kind ORDER BY server, tool, kind"
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [UsageRow(s, t, k, *(int(v) for v in values)) for s, t, k, *values in rows]

    def count(self) -> int:
        with self._db.connection() as conn:
            row = conn.execute("SELECT COUNT(*) FROM namespaces").fetchone()
        return int(row[0]) if row else 0

    def add(self, record: NamespaceRecord, origin: Origin | None = None) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO namespaces (namespace, tool, arguments, owner, created, expires, shown) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                namespace_row(record),
            )
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", item_rows(record))
            if origin is not None:
                conn.execute(
                    "INSERT INTO origins VALUES (%s, %s, %s)", (record.namespace, origin.server, origin.sensitive)
                )

    def origin(self, namespace: str) -> Origin | None:
        with self._db.connection() as conn:
            row = conn.execute("SELECT server, sensitive FROM origins WHERE namespace = %s", (namespace,)).fetchone()
        return None if row is None else Origin(str(row[0]), bool(row[1]))

    def sensitive(self) -> set[str]:
        """The namespaces of sensitive outputs (an `always` tool's)."""
        with self._db.connection() as conn:
            rows = conn.execute("SELECT namespace FROM origins WHERE sensitive").fetchall()
        return {str(row[0]) for row in rows}

    def add_flows(self, rows: Sequence[tuple[str, Flow]]) -> None:
        with self._db.transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO flows SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM namespaces WHERE namespace = %s)",
                [(ns, f.at, f.tool, f.part, ns) for ns, f in rows],
            )

    def flows(self, namespaces: Sequence[str]) -> dict[str, list[Flow]]:
        found: dict[str, list[Flow]] = {}
        with self._db.connection() as conn:
            for ns, when, tool, part in conn.execute(
                "SELECT namespace, at, tool, part FROM flows WHERE namespace = ANY(%s) ORDER BY at", (list(namespaces),)
            ):
                found.setdefault(ns, []).append(Flow(float(when), tool, part))
        return found

    def get(self, namespace: str) -> NamespaceRecord | None:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT {WHOLE} FROM namespaces WHERE namespace = %s", (namespace,)).fetchone()
            return None if row is None else self._pg_record(conn, row)

    def newest(
        self, limit: int | None = None, owner: str | None = None, *, whole_arguments: bool = True
    ) -> list[NamespaceRecord]:
        sql = f"SELECT {WHOLE if whole_arguments else LISTED} FROM namespaces"
        params: list[Any] = []
        if owner is not None:
            sql += " WHERE owner = %s"
            params.append(owner)
        sql += " ORDER BY created DESC, seq DESC"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
            items: dict[str, list[ItemRecord]] = {}
            if rows:
                for namespace, *fields in conn.execute(
                    "SELECT namespace, item, kind, name, mime_type, tokens, bytes, meta FROM items "
                    "WHERE namespace = ANY(%s) ORDER BY namespace, item",
                    ([r[0] for r in rows],),
                ):
                    items.setdefault(namespace, []).append(item_from_row(fields))
        return [namespace_from_row(row, items.get(row[0], [])) for row in rows]

    def expired(self, now: float) -> list[str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT namespace FROM namespaces WHERE expires IS NOT NULL AND expires <= %s", (now,)
            ).fetchall()
        return [r[0] for r in rows]

    def total_bytes(self) -> int:
        with self._db.connection() as conn:
            row = conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM items").fetchone()
        return int(row[0]) if row else 0

    def stored_bytes(self, text_kinds: Collection[str]) -> int:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT COALESCE(SUM(bytes + CASE WHEN kind = ANY(%s) THEN 4 * (tokens + 1) ELSE 0 END), 0) FROM items",
                (list(text_kinds),),
            ).fetchone()
        return int(row[0]) if row else 0

    def used_bytes(self) -> int:
        return 0  # the catalog lives on the database server; the quota counts the payloads stored

    def reclaim(self) -> None:
        pass  # autovacuum gives deleted rows back

    def remove(self, namespace: str) -> None:
        with self._db.connection() as conn:
            conn.execute("DELETE FROM namespaces WHERE namespace = %s", (namespace,))

    def write_count(self) -> None:
        return None  # every server of the shared memory writes: a listing always reads

    def close(self) -> None:
        self._db.close()

    def _pg_record(self, conn: Any, row: tuple[Any, ...]) -> NamespaceRecord:
        return namespace_from_row(row, [item_from_row(fields) for fields in conn.execute(_ITEMS, (row[0],))])
