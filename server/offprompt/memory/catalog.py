"""The memory's catalog: what each namespace holds and where it came from (Griptape's meta memory).

One SQLite file per memory. A namespace row is written last, in one
transaction with its items, so a namespace is either listed whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from offprompt.artifacts import TEXT_KINDS
from offprompt.memory.storage.files import sqlite_used_bytes
from offprompt.memory.storage.sqlite_db import SqliteDb

_SCHEMA = """
CREATE TABLE IF NOT EXISTS namespaces (
    namespace TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    expires REAL,
    shown TEXT,
    arguments TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    namespace TEXT NOT NULL REFERENCES namespaces(namespace) ON DELETE CASCADE,
    item INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    mime_type TEXT,
    tokens INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    meta TEXT NOT NULL,
    PRIMARY KEY (namespace, item)
);
CREATE INDEX IF NOT EXISTS namespaces_created ON namespaces(created);
CREATE INDEX IF NOT EXISTS namespaces_expires ON namespaces(expires);
CREATE TABLE IF NOT EXISTS origins (
    namespace TEXT PRIMARY KEY REFERENCES namespaces(namespace) ON DELETE CASCADE,
    server TEXT NOT NULL,
    sensitive INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS flows (
    namespace TEXT NOT NULL REFERENCES namespaces(namespace) ON DELETE CASCADE,
    at REAL NOT NULL,
    tool TEXT NOT NULL,
    part TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS flows_namespace ON flows(namespace);
CREATE TABLE IF NOT EXISTS usage (
    minute INTEGER NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    model_tokens INTEGER NOT NULL,
    PRIMARY KEY (minute, server, tool, kind)
);
"""
# `origins` holds the server whose output a namespace is and whether that output is sensitive (an `always` tool's):
# who may receive it as a `⟦memory:…⟧` argument. A namespace stored before the table has no row, and goes to no
# server. `flows` records each time a namespace was passed to a tool that way (provenance: memory_list shows it).
# `usage` (added in place to catalogs made before it: CREATE ... IF NOT EXISTS runs on every open) counts what
# passed through per minute, server, tool and kind: "inline" (bytes), "stored" (tokens held, model_tokens of the
# reference) and "read" (model_tokens of a memory tool's answer). No content, only sizes.
# `namespaces.shown` (added in place to catalogs made before it) holds the arguments as memory_list shows them,
# when that is not the arguments themselves: a listing then never reads a megabyte argument to show 300 characters.
# `arguments` is the last column of a new catalog: SQLite walks a long value's overflow pages to reach the columns
# after it, so a listing, the TTL sweep and the quota read the small ones without touching it.


DUPLICATE_OF = "offprompt_copy_of"
"""Item meta key: this item repeats an earlier one (the SDKs send structuredContent beside its text or image)."""
BINARY = "offprompt_binary"
"""Item meta key: this JSON item is mostly base64 payloads, kept as it came but not searched or counted as text."""


#: memory_list shows each stored call's argument values cut to this many characters (of their JSON) ...
MAX_ARGUMENT_CHARS = 300
#: ... and at most this many of them: one answer stays small whatever was stored.
MAX_ARGUMENTS_SHOWN = 20


def shown_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a stored call as memory_list shows them: long values cut, with a marker saying so."""
    shown: dict[str, Any] = {}
    for key, value in list(arguments.items())[:MAX_ARGUMENTS_SHOWN]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > MAX_ARGUMENT_CHARS:
            value = f"{text[:MAX_ARGUMENT_CHARS]}… [cut: {len(text):,} characters]"
        shown[key[:MAX_ARGUMENT_CHARS]] = value
    if len(arguments) > MAX_ARGUMENTS_SHOWN:
        shown["…"] = f"[{len(arguments) - MAX_ARGUMENTS_SHOWN:,} more arguments not shown]"
    return shown


def arguments_columns(arguments: Mapping[str, Any]) -> tuple[str, str | None]:
    """The `arguments` and `shown` columns of a call: its whole arguments as JSON, and memory_list's form of
    them when that differs (None: the listing shows the arguments as they are)."""
    whole = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(whole) <= MAX_ARGUMENT_CHARS:  # no value, key or count can be over the limits
        return whole, None
    shown = shown_arguments(arguments)
    return whole, None if shown == arguments else json.dumps(shown, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class ItemRecord:
    item: int
    kind: str
    name: str
    mime_type: str | None
    tokens: int
    bytes: int
    meta: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class UsageRow:
    server: str
    tool: str
    kind: str
    count: int
    bytes: int
    tokens: int
    model_tokens: int


@dataclass(frozen=True, slots=True)
class Origin:
    """Whose output a namespace is: the server that produced it, and whether it is sensitive (`always`)."""

    server: str
    sensitive: bool


@dataclass(frozen=True, slots=True)
class Flow:
    """A namespace passed to a tool as a `⟦memory:…⟧` argument: when, to which tool, which part of it."""

    at: float
    tool: str
    part: str


@dataclass(frozen=True, slots=True)
class NamespaceRecord:
    namespace: str
    tool: str
    arguments: Mapping[str, Any]
    owner: str
    created: float
    expires: float | None
    items: tuple[ItemRecord, ...]
    #: True when `arguments` is memory_list's cut form (a listing's record), not the call's whole arguments.
    arguments_cut: bool = False

    @property
    def listed_arguments(self) -> dict[str, Any]:
        """The arguments as memory_list shows them."""
        return dict(self.arguments) if self.arguments_cut else shown_arguments(self.arguments)

    @property
    def kinds(self) -> list[str]:
        return [i.kind for i in self.items]

    @property
    def first_text(self) -> int | None:
        """The first text item that is not a copy of another (its outline, its reference), or None."""
        return next((i.item for i in self.items if i.kind in TEXT_KINDS and DUPLICATE_OF not in i.meta), None)

    @property
    def tokens(self) -> int:
        """Tokens of its text, each text once: a copy of another item, and base64 payloads, count none."""
        return sum(i.tokens for i in self.items if DUPLICATE_OF not in i.meta and BINARY not in i.meta)

    @property
    def bytes(self) -> int:
        """Bytes of its items, a copy of another item not counted again."""
        return sum(i.bytes for i in self.items if DUPLICATE_OF not in i.meta)


class CatalogStore(Protocol):
    """What the task memory keeps of its namespaces, wherever they live: `Catalog` (SQLite, one memory's
    directory) and `pgcatalog.PgCatalog` (a shared memory's PostgreSQL schema) are its two implementations."""

    readonly: bool

    def add_usage(self, rows: Mapping[tuple[int, str, str, str], tuple[int, int, int, int]]) -> None: ...

    def usage(self, since: float | None = None, until: float | None = None) -> list[UsageRow]: ...

    def count(self) -> int: ...

    def add(self, record: NamespaceRecord, origin: Origin | None = None) -> None: ...

    def origin(self, namespace: str) -> Origin | None: ...

    def sensitive(self) -> set[str]: ...

    def add_flows(self, rows: Sequence[tuple[str, Flow]]) -> None: ...

    def flows(self, namespaces: Sequence[str]) -> dict[str, list[Flow]]: ...

    def get(self, namespace: str) -> NamespaceRecord | None: ...

    def newest(
        self, limit: int | None = None, owner: str | None = None, *, whole_arguments: bool = True
    ) -> list[NamespaceRecord]: ...

    def expired(self, now: float) -> list[str]: ...

    def total_bytes(self) -> int: ...

    def stored_bytes(self, text_kinds: Collection[str]) -> int: ...

    def used_bytes(self) -> int: ...

    def reclaim(self) -> None: ...

    def remove(self, namespace: str) -> None: ...

    def write_count(self) -> int | None:
        """How many writes that a listing reads (outputs added or removed, flows) went through this object; None
        when others may write too (a shared memory, a read-only view), so a listing must read."""
        ...

    def close(self) -> None: ...


class Catalog:
    """Namespace and item records in SQLite; safe to use from several threads."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self._path = path
        self._sql = SqliteDb(path, _SCHEMA, ("journal_mode = WAL", "foreign_keys = ON"), readonly=readonly)
        self.readonly = readonly
        with self._sql.lock:
            columns = {row[1] for row in self._sql.db.execute("PRAGMA table_info(namespaces)")}
            if "shown" not in columns and not readonly:  # a catalog made before the column
                with contextlib.suppress(sqlite3.OperationalError):  # "duplicate column": another opener added it
                    self._sql.db.execute("ALTER TABLE namespaces ADD COLUMN shown TEXT")
                columns.add("shown")
        self._shown = "shown" in columns
        self._writes = 0  # the memory's lock keeps every other writer out while this process holds it

    def write_count(self) -> int | None:
        return None if self.readonly else self._writes

    def add_usage(self, rows: Mapping[tuple[int, str, str, str], tuple[int, int, int, int]]) -> None:
        """Add counts, keyed by (minute, server, tool, kind), valued (count, bytes, tokens, model_tokens)."""
        with self._sql.transaction() as db:
            db.executemany(
                "INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (minute, server, tool, kind) DO UPDATE "
                "SET count = count + excluded.count, bytes = bytes + excluded.bytes, "
                "tokens = tokens + excluded.tokens, model_tokens = model_tokens + excluded.model_tokens",
                [(*key, *value) for key, value in rows.items()],
            )

    def usage(self, since: float | None = None, until: float | None = None) -> list[UsageRow]:
        """Counts summed per server, tool and kind over [since, until) (minute resolution)."""
        sql = "SELECT server, tool, kind, SUM(count), SUM(bytes), SUM(tokens), SUM(model_tokens) FROM usage"
        where, params = [], []
        if since is not None:
            where.append("minute >= ?")
            params.append(int(since // 60))
        if until is not None:
            where.append("minute < ?")
            params.append(int(-(-until // 60)))
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " GROUP BY server, tool, kind ORDER BY server, tool, kind"
        with self._sql.lock:
            try:
                rows = self._sql.db.execute(sql, params).fetchall()
            except sqlite3.OperationalError:  # a catalog older than the table, opened read-only
                return []
        return [UsageRow(*row) for row in rows]

    def count(self) -> int:
        with self._sql.lock:
            return int(self._sql.db.execute("SELECT COUNT(*) FROM namespaces").fetchone()[0])

    def add(self, record: NamespaceRecord, origin: Origin | None = None) -> None:
        with self._sql.transaction() as db:
            db.execute(
                "INSERT INTO namespaces (namespace, tool, arguments, owner, created, expires, shown) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                namespace_row(record),
            )
            db.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)", item_rows(record))
            if origin is not None:
                db.execute(
                    "INSERT INTO origins VALUES (?, ?, ?)", (record.namespace, origin.server, int(origin.sensitive))
                )
            self._writes += 1

    def origin(self, namespace: str) -> Origin | None:
        with self._sql.lock:
            try:
                row = self._sql.db.execute(
                    "SELECT server, sensitive FROM origins WHERE namespace = ?", (namespace,)
                ).fetchone()
            except sqlite3.OperationalError:  # a catalog older than the table, opened read-only
                return None
        return None if row is None else Origin(str(row[0]), bool(row[1]))

    def sensitive(self) -> set[str]:
        """The namespaces of sensitive outputs (an `always` tool's)."""
        with self._sql.lock:
            try:
                rows = self._sql.db.execute("SELECT namespace FROM origins WHERE sensitive != 0").fetchall()
            except sqlite3.OperationalError:  # a catalog older than the table, opened read-only
                return set()
        return {str(row[0]) for row in rows}

    def add_flows(self, rows: Sequence[tuple[str, Flow]]) -> None:
        """Record (namespace, flow) rows; a namespace deleted meanwhile takes none."""
        with self._sql.transaction() as db:
            db.executemany(
                "INSERT INTO flows SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM namespaces WHERE namespace = ?)",
                [(ns, f.at, f.tool, f.part, ns) for ns, f in rows],
            )
            self._writes += 1

    def flows(self, namespaces: Sequence[str]) -> dict[str, list[Flow]]:
        """Where each of `namespaces` went, oldest first."""
        found: dict[str, list[Flow]] = {}
        with self._sql.lock:
            for at in range(0, len(namespaces), 500):
                chunk = namespaces[at : at + 500]
                marks = ",".join("?" * len(chunk))
                try:
                    rows = self._sql.db.execute(
                        f"SELECT namespace, at, tool, part FROM flows WHERE namespace IN ({marks}) ORDER BY at", chunk
                    ).fetchall()
                except sqlite3.OperationalError:  # a catalog older than the table, opened read-only
                    return {}
                for ns, when, tool, part in rows:
                    found.setdefault(ns, []).append(Flow(float(when), tool, part))
        return found

    def get(self, namespace: str) -> NamespaceRecord | None:
        with self._sql.lock:
            row = self._sql.db.execute(f"SELECT {WHOLE} FROM namespaces WHERE namespace = ?", (namespace,)).fetchone()
            if row is None:
                return None
            return self._records([row])[0]

    def newest(
        self, limit: int | None = None, owner: str | None = None, *, whole_arguments: bool = True
    ) -> list[NamespaceRecord]:
        """The newest namespaces first; without `whole_arguments`, each with memory_list's form of its arguments
        (`arguments_cut`), read without the megabytes a call may have taken."""
        sql = f"SELECT {WHOLE if whole_arguments or not self._shown else LISTED} FROM namespaces"
        params: list[Any] = []
        if owner is not None:
            sql += " WHERE owner = ?"
            params.append(owner)
        sql += " ORDER BY created DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._sql.lock:
            return self._records(self._sql.db.execute(sql, params).fetchall())

    def expired(self, now: float) -> list[str]:
        with self._sql.lock:
            rows = self._sql.db.execute(
                "SELECT namespace FROM namespaces WHERE expires IS NOT NULL AND expires <= ?", (now,)
            )
            return [r[0] for r in rows.fetchall()]

    def total_bytes(self) -> int:
        with self._sql.lock:
            return int(self._sql.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM items").fetchone()[0])

    def stored_bytes(self, text_kinds: Collection[str]) -> int:
        """The payloads' bytes plus the token index of each text item (4 bytes a token, one more at the end)."""
        marks = ",".join("?" * len(text_kinds))
        sql = (
            f"SELECT COALESCE(SUM(bytes + CASE WHEN kind IN ({marks}) THEN 4 * (tokens + 1) ELSE 0 END), 0) FROM items"
        )
        with self._sql.lock:
            return int(self._sql.db.execute(sql, tuple(text_kinds)).fetchone()[0])

    def used_bytes(self) -> int:
        """What the catalog file uses on disk: its pages in use (free pages are reused) and its WAL."""
        return sqlite_used_bytes(self._path, self._sql.free_bytes)

    def reclaim(self) -> None:
        self._sql.reclaim()

    def remove(self, namespace: str) -> None:
        with self._sql.transaction() as db:
            db.execute("DELETE FROM namespaces WHERE namespace = ?", (namespace,))
            self._writes += 1

    def close(self) -> None:
        self._sql.close()

    def _records(self, rows: Sequence[tuple[Any, ...]]) -> list[NamespaceRecord]:
        """The namespaces of `rows` with their items, read in one query per 500 namespaces, not one each."""
        items: dict[str, list[ItemRecord]] = {row[0]: [] for row in rows}
        for at in range(0, len(rows), 500):
            chunk = [row[0] for row in rows[at : at + 500]]
            found = self._sql.db.execute(
                "SELECT namespace, item, kind, name, mime_type, tokens, bytes, meta FROM items "
                f"WHERE namespace IN ({','.join('?' * len(chunk))}) ORDER BY namespace, item",
                chunk,
            )
            for namespace, *fields in found.fetchall():
                items[namespace].append(item_from_row(fields))
        return [namespace_from_row(row, items[row[0]]) for row in rows]


# Rows as both catalogs (this one and the shared memory's `pgcatalog`) store them.

#: The columns a namespace is read from: with its whole arguments, or with memory_list's form of them.
WHOLE = "namespace, tool, arguments, owner, created, expires"
LISTED = "namespace, tool, COALESCE(shown, arguments), owner, created, expires, shown IS NOT NULL"


def namespace_row(record: NamespaceRecord) -> tuple[Any, ...]:
    """The `namespaces` row of a record: namespace, tool, arguments, owner, created, expires, shown."""
    whole, shown = arguments_columns(record.arguments)
    return (record.namespace, record.tool, whole, record.owner, record.created, record.expires, shown)


def item_rows(record: NamespaceRecord) -> list[tuple[Any, ...]]:
    """The `items` rows of a namespace: namespace, item, kind, name, mime_type, tokens, bytes, meta (JSON)."""
    return [
        (
            record.namespace,
            i.item,
            i.kind,
            i.name,
            i.mime_type,
            i.tokens,
            i.bytes,
            json.dumps(i.meta, ensure_ascii=False),
        )
        for i in record.items
    ]


def item_from_row(fields: Sequence[Any]) -> ItemRecord:
    """An item from its row's item, kind, name, mime_type, tokens, bytes and meta."""
    item, kind, name, mime_type, tokens, size, meta = fields
    return ItemRecord(
        item=int(item),
        kind=kind,
        name=name,
        mime_type=mime_type,
        tokens=int(tokens),
        bytes=int(size),
        meta=json.loads(meta),
    )


def namespace_from_row(row: Sequence[Any], items: Sequence[ItemRecord]) -> NamespaceRecord:
    """A namespace from its row's namespace, tool, arguments (JSON), owner, created and expires (`WHOLE`), and
    whether those arguments are memory_list's cut form (`LISTED`)."""
    namespace, tool, arguments, owner, created, expires, *cut = row
    return NamespaceRecord(
        namespace=namespace,
        tool=tool,
        arguments=json.loads(arguments),
        owner=owner,
        created=float(created),
        expires=None if expires is None else float(expires),
        items=tuple(items),
        arguments_cut=bool(cut and cut[0]),
    )
