"""Lexical search over a memory's chunks: SQLite FTS5 with BM25, in a file next to the raw texts.

The index is built first for every stored text, before any embedding, so
words and identifiers are searchable about a second after `store` returns
while the vectors take minutes. It also keeps each chunk's span and context,
the one list of chunks both indexes share.

Text is turned into terms here rather than by FTS5's tokenizer, so that code
is searchable the way people write it: an identifier is indexed whole
(``err_conn_reset``, ``calledprocesserror``, ``application_wasm``) and by its
parts (``err conn reset``, ``called process error``), and FTS5 then stems
the terms (Porter). A query goes through the same function, so
``TimeoutExpired`` matches ``TimeoutExpired`` exactly and ``timeout`` matches
it in part. A query also looks for the names its plain words shorten to
(``search_words``: "time zone data" → ``tzdata``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

from offprompt.memory.storage.files import sqlite_used_bytes
from offprompt.memory.storage.sqlite_db import SqliteDb

__all__ = [
    "ChunkRecord",
    "LexicalHit",
    "SqliteLexicalIndex",
    "WindowHit",
    "identifiers",
    "query_words",
    "search_words",
    "term_line",
    "terms",
]

#: Query words too common to say anything; documents keep them.
_STOPWORD_TEXT = """
    a about above after again all also am an and any are as at be been before being below between both but by can
    could did do does doing done down during each either else ever few for from get gets got had has have having he
    her here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only
    or other our out over own same she should so some such than that the their them then there these they this those
    through to too under until up upon us very was we were what whats when where which while who whom why will with
    would yet you your
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"\w+(?:[./:+\-#@$']\w+)*")
_CONNECTOR = re.compile(r"[./:+\-#@$']")
_ASCII_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_UNICODE_PARTS = re.compile(r"[^\W_]+")
_SPLIT = re.compile(r"[\W_]+")


def _parts(segment: str) -> list[str]:
    if segment.isascii():
        return [p.lower() for p in _ASCII_PARTS.findall(segment)]
    return [p.lower() for p in _UNICODE_PARTS.findall(segment)]


def name_parts(name: str) -> list[str]:
    """The lowercase parts of an identifier as the index keeps them: `default_buffer_size` → default, buffer,
    size; `HTTPServer` → http, server. Both lexical indexes match a name by these."""
    return [p for match in _WORD.finditer(name) for p in _parts(match.group())]


def _compound(word: str) -> str:
    return _SPLIT.sub("_", word.lower()).strip("_")


def word_terms(word: str) -> list[str]:
    """One word's terms: the whole identifier (if it has parts), its dotted/slashed segments, then the parts."""
    parts = _parts(word)
    out: list[str] = []
    if len(parts) > 1:
        out.append(_compound(word))
        segments = _CONNECTOR.split(word)
        if len(segments) > 1:
            out.extend(_compound(s) for s in segments if len(_parts(s)) > 1)
    out.extend(parts)
    return out


def terms(text: str) -> list[str]:
    """The index terms of a text, in order."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        out.extend(word_terms(match.group()))
    return out


#: Longer words (base64 joined by its slashes and pluses, a URL) are split each time rather than kept.
_KEPT_WORD_CHARS: Final = 64


@lru_cache(maxsize=1 << 16)
def _kept_word_line(word: str) -> str:
    return " ".join(word_terms(word))


def _word_line(word: str) -> str:
    return _kept_word_line(word) if len(word) <= _KEPT_WORD_CHARS else " ".join(word_terms(word))


def term_line(text: str) -> str:
    """`terms` joined by spaces, as the index stores them. A text repeats its words (a log its keys, JSON its
    field names), so each distinct word is split once: a quarter of the time for 1 MB of logs or code."""
    return " ".join(filter(None, map(_word_line, _WORD.findall(text))))


def query_words(query: str) -> list[str]:
    """A query's distinct terms without stop words (unless it has nothing else)."""
    every = list(dict.fromkeys(terms(query)))
    return [t for t in every if t not in STOPWORDS] or every


#: A compound shorter than this is too often a word of its own (`new one` → `none`).
_MIN_COMPOUND: Final = 5


def search_words(query: str) -> list[str]:
    """The terms a query is ranked by: its words (`query_words`), and for each two or three plain words in a row
    the initials of all but the last joined to the last, as package names shorten what a question spells out
    ("the time zone data" → `tzdata`). A compound no chunk holds matches nothing."""
    words = query_words(query)
    runs: list[list[str]] = [[]]  # runs of plain words, broken by a stop word or an identifier
    for match in _WORD.finditer(query):
        word = match.group().lower()
        if word in STOPWORDS or not word.isalpha():
            runs.append([])
        else:
            runs[-1].append(word)
    compounds = [
        "".join(w[0] for w in run[k : k + n - 1]) + run[k + n - 1]
        for run in runs
        for n in (2, 3)
        for k in range(len(run) - n + 1)
    ]
    return list(dict.fromkeys([*words, *(c for c in compounds if len(c) >= _MIN_COMPOUND and c not in words)]))


def _exact(name: str) -> str:
    """An FTS5 expression for chunks that hold ``name``: its whole-identifier term, or its parts as a phrase."""
    parts = name_parts(name)
    if not parts:
        return ""
    phrase = '"' + " ".join(parts) + '"'
    return f'("{_compound(name)}" OR {phrase})' if len(parts) > 1 else phrase


_IDENTIFIER_HINT = re.compile(r"[_./:+#@$]|[a-z][A-Z]|[A-Za-z][0-9]|[0-9][A-Za-z]|[0-9]-|-[0-9]")
_QUOTED = re.compile(r"`([^`]+)`|'([^'\s]{2,})'|\"([^\"\s]{2,})\"")


def identifiers(query: str) -> list[str]:
    """The words of a query that name something exactly, as one would grep for them.

    ``ERR_CONN_RESET``, ``TimeoutExpired``, ``/bin/junk``, ``setup.cfg``, ``libc6``, ``2026-05-20``, anything in
    backticks or quotes. Plain, hyphenated or all-capitals words (``timeout``, ``dead-letter``, ``JSON``) are not:
    BM25 weighs those.
    """
    found = [m.group() for m in _WORD.finditer(query) if _is_identifier(m.group())]
    found.extend(next(g for g in m.groups() if g) for m in _QUOTED.finditer(query))
    return list(dict.fromkeys(found))


def _is_identifier(word: str) -> bool:
    return (
        len(word) >= 3
        and any(len(p) > 1 for p in _parts(word))
        and bool(_IDENTIFIER_HINT.search(word.replace("'", "")))
    )


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One chunk of one stored text: its byte span, first token (for `memory_load`) and context."""

    namespace: str
    item: int
    chunk: int
    start: int
    end: int
    offset: int
    context: str

    @property
    def id(self) -> str:
        return f"{self.namespace}:{self.item}:{self.chunk}"


@dataclass(frozen=True, slots=True)
class LexicalHit:
    record: ChunkRecord
    score: float


@dataclass(frozen=True, slots=True)
class WindowHit:
    """One of a text's windows of characters (`windows.py`) that matched a query: its byte span and BM25."""

    namespace: str
    item: int
    start: int
    end: int
    score: float


_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    context TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_item ON chunks (namespace, item, chunk);
CREATE TABLE IF NOT EXISTS items (namespace TEXT NOT NULL, item INTEGER NOT NULL, PRIMARY KEY (namespace, item));
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5 (
    body, title, ns, tokenize = "porter unicode61 tokenchars '_'"
);
CREATE TABLE IF NOT EXISTS windows (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS windows_by_item ON windows (namespace, item);
CREATE VIRTUAL TABLE IF NOT EXISTS window_terms USING fts5 (body, ns, tokenize = "porter unicode61 tokenchars '_'");
"""
#: A query term found in a chunk's titles (its context, headings, names) counts this much more than in its text.
TITLE_WEIGHT: Final = 4.0
_BM25 = f"bm25(terms, 1.0, {TITLE_WEIGHT}, 0.0)"  # body, title, ns
_COLUMNS = "c.namespace, c.item, c.chunk, c.start, c.end, c.offset, c.context"


class SqliteLexicalIndex:
    """Chunks and their terms in one SQLite file; safe to use from several threads."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self._path = path
        self._sql = SqliteDb(path, _SCHEMA, ("journal_mode = WAL", "synchronous = NORMAL"), readonly=readonly)

    def disk_bytes(self) -> int:
        return sqlite_used_bytes(self._path, self._sql.free_bytes)

    def add(
        self,
        namespace: str,
        item: int,
        chunks: Sequence[ChunkRecord],
        texts: Sequence[str],
        titles: Sequence[str],
    ) -> None:
        """Index an item's chunks (replacing any earlier ones) by their text and their titles (context, headings,
        names), which weigh more."""
        rows = [(term_line(text), term_line(title)) for text, title in zip(texts, titles, strict=True)]
        with self._sql.transaction() as db:
            self._drop(db, "namespace = ? AND item = ?", (namespace, item))
            for record, (body, title) in zip(chunks, rows, strict=True):
                cursor = db.execute(
                    "INSERT INTO chunks (namespace, item, chunk, start, end, offset, context) VALUES (?,?,?,?,?,?,?)",
                    (namespace, item, record.chunk, record.start, record.end, record.offset, record.context),
                )
                db.execute(
                    "INSERT INTO terms (rowid, body, title, ns) VALUES (?, ?, ?, ?)",
                    (cursor.lastrowid, body, title, namespace),
                )
            db.execute("INSERT OR REPLACE INTO items (namespace, item) VALUES (?, ?)", (namespace, item))

    def add_windows(self, namespace: str, item: int, spans: Sequence[tuple[int, int]], texts: Sequence[str]) -> None:
        """Index an item's windows of characters (replacing any earlier ones) by their words."""
        rows = [term_line(text) for text in texts]
        with self._sql.transaction() as db:
            self._drop_windows(db, "namespace = ? AND item = ?", (namespace, item))
            for (start, end), body in zip(spans, rows, strict=True):
                cursor = db.execute(
                    "INSERT INTO windows (namespace, item, start, end) VALUES (?, ?, ?, ?)",
                    (namespace, item, start, end),
                )
                db.execute(
                    "INSERT INTO window_terms (rowid, body, ns) VALUES (?, ?, ?)", (cursor.lastrowid, body, namespace)
                )

    def search_windows(self, query: str, namespaces: Collection[str] | None, limit: int) -> list[WindowHit]:
        """The windows that best match the query's terms by plain BM25, best first (none for an item indexed
        before windows were)."""
        words = search_words(query)
        if not words or (namespaces is not None and not namespaces):
            return []
        expression = "body : (" + " OR ".join(f'"{w}"' for w in words) + ")"
        if namespaces is not None:
            expression = "ns : (" + " OR ".join(f'"{ns}"' for ns in sorted(namespaces)) + f") AND {expression}"
        sql = (
            "SELECT w.namespace, w.item, w.start, w.end, bm25(window_terms, 1.0, 0.0) AS score FROM window_terms "
            "JOIN windows w ON w.id = window_terms.rowid WHERE window_terms MATCH ? ORDER BY score, w.id LIMIT ?"
        )
        with self._sql.lock:
            try:
                rows = self._sql.db.execute(sql, (expression, limit)).fetchall()
            except sqlite3.OperationalError:
                return []  # a read-only view of an index made before windows were: its chunks alone rank
        return [WindowHit(ns, int(item), int(a), int(b), round(-float(score), 4)) for ns, item, a, b, score in rows]

    def indexed(self) -> set[tuple[str, int]]:
        """The items whose chunks are all in the index."""
        with self._sql.lock:
            return {(ns, int(item)) for ns, item in self._sql.db.execute("SELECT namespace, item FROM items")}

    def windowed(self) -> set[tuple[str, int]]:
        """The items whose windows are in the index."""
        with self._sql.lock:
            rows = self._sql.db.execute("SELECT DISTINCT namespace, item FROM windows")
            return {(ns, int(item)) for ns, item in rows}

    def chunks(self, namespace: str, item: int) -> list[ChunkRecord]:
        with self._sql.lock:
            rows = self._sql.db.execute(
                f"SELECT {_COLUMNS} FROM chunks c WHERE c.namespace = ? AND c.item = ? ORDER BY c.chunk",
                (namespace, item),
            ).fetchall()
        return [ChunkRecord(*row) for row in rows]

    def count(self, namespace: str, item: int) -> int:
        """How many chunks the item has in the index."""
        with self._sql.lock:
            row = self._sql.db.execute(
                "SELECT COUNT(*) FROM chunks WHERE namespace = ? AND item = ?", (namespace, item)
            ).fetchone()
        return int(row[0])

    def search(
        self, query: str, namespaces: Collection[str] | None, limit: int, require_any: Sequence[str] = ()
    ) -> list[LexicalHit]:
        """The chunks that best match the query's terms by BM25, best first; scores are positive.

        With ``require_any``, only chunks holding one of those identifiers (as a whole term or as its parts in a
        row) are ranked.
        """
        words = search_words(query)
        if not words or (namespaces is not None and not namespaces):
            return []
        expression = "{body title} : (" + " OR ".join(f'"{w}"' for w in words) + ")"
        if require_any:
            alternatives = [_exact(name) for name in require_any]
            expression += " AND {body title} : (" + " OR ".join(a for a in alternatives if a) + ")"
        if namespaces is not None:
            expression = "ns : (" + " OR ".join(f'"{ns}"' for ns in sorted(namespaces)) + f") AND {expression}"
        sql = (
            f"SELECT {_COLUMNS}, {_BM25} AS score FROM terms JOIN chunks c ON c.id = terms.rowid "
            "WHERE terms MATCH ? ORDER BY score LIMIT ?"
        )
        with self._sql.lock:
            rows = self._sql.db.execute(sql, (expression, limit)).fetchall()
        return [LexicalHit(ChunkRecord(*row[:7]), round(-float(row[7]), 4)) for row in rows]

    def scores(self, query: str, records: Sequence[ChunkRecord]) -> dict[str, float]:
        """BM25 scores of these chunks for the query (chunks it does not match are left out)."""
        words = search_words(query)
        if not words or not records:
            return {}
        expression = "{body title} : (" + " OR ".join(f'"{w}"' for w in words) + ")"
        with self._sql.lock:
            ids: dict[int, str] = {}
            for r in records:
                row = self._sql.db.execute(
                    "SELECT id FROM chunks WHERE namespace = ? AND item = ? AND chunk = ?",
                    (r.namespace, r.item, r.chunk),
                ).fetchone()
                if row is not None:
                    ids[int(row[0])] = r.id
            if not ids:
                return {}
            marks = ",".join("?" * len(ids))
            # `+rowid`: the filter stays out of FTS5. Handed to it, each id is a search of its own, and bm25 counts
            # every query term's chunks again for each (its IDF): 30 candidates cost 30 scans of the common
            # words' lists. Filtered here, the match runs once and bm25 is computed for these rows only.
            rows = self._sql.db.execute(
                f"SELECT rowid, {_BM25} FROM terms WHERE terms MATCH ? AND +rowid IN ({marks})",
                (expression, *ids),
            ).fetchall()
        return {ids[int(rowid)]: round(-float(score), 4) for rowid, score in rows}

    def delete(self, namespace: str) -> None:
        with self._sql.transaction() as db:
            self._drop(db, "namespace = ?", (namespace,))
            self._drop_windows(db, "namespace = ?", (namespace,))
            db.execute("DELETE FROM items WHERE namespace = ?", (namespace,))

    def namespaces(self) -> set[str]:
        with self._sql.lock:
            return {ns for (ns,) in self._sql.db.execute("SELECT DISTINCT namespace FROM chunks")}

    def chunk_counts(self) -> dict[tuple[str, int], int]:
        """How many chunks each indexed item has."""
        with self._sql.lock:
            rows = self._sql.db.execute("SELECT namespace, item, COUNT(*) FROM chunks GROUP BY namespace, item")
            return {(ns, int(item)): int(n) for ns, item, n in rows}

    def reclaim(self) -> None:
        # FTS5 deletes only mark entries deleted; merging the segments drops them and frees their pages.
        with self._sql.transaction() as db:
            db.execute("INSERT INTO terms(terms) VALUES ('optimize')")
            db.execute("INSERT INTO window_terms(window_terms) VALUES ('optimize')")
        self._sql.reclaim()

    @staticmethod
    def _drop(db: sqlite3.Connection, where: str, args: tuple[object, ...]) -> None:
        db.execute(f"DELETE FROM terms WHERE rowid IN (SELECT id FROM chunks WHERE {where})", args)
        db.execute(f"DELETE FROM chunks WHERE {where}", args)

    @staticmethod
    def _drop_windows(db: sqlite3.Connection, where: str, args: tuple[object, ...]) -> None:
        db.execute(f"DELETE FROM window_terms WHERE rowid IN (SELECT id FROM windows WHERE {where})", args)
        db.execute(f"DELETE FROM windows WHERE {where}", args)

    def close(self) -> None:
        self._sql.close()
