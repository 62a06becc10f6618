"""Lexical search over a shared memory's chunks and windows: PostgreSQL full-text search, ranked by `ts_rank`.

The terms are the same as FTS5's (`lexical.terms`: identifiers whole and by their parts), written without
their underscores so PostgreSQL's parser keeps each one a single word (``err_conn_reset`` is indexed as
``errconnreset``, next to ``err``, ``conn`` and ``reset``); the `english` configuration then stems them and
drops stop words. A chunk's titles (context, headings, names) carry weight A, its text weight D, weighted
TITLE_WEIGHT to 1 as in FTS5. `ts_rank` knows no inverse document frequency, so each query word's rank is
weighted by its IDF over the chunks in scope: the rarer a word, the more it counts, as in BM25. A text's windows
of characters (`windows.py`) are ranked the same way in a table of their own (text only, IDF over the windows),
for the words' first window the hybrid ranking keeps (`text_query.py`).

On the retrieval eval (`bench/retrieval/eval.py --lexical-only [--postgres DSN]`, 132 questions) this ranks
within a document as FTS5 does at rank 1 (R@1 0.636 vs 0.629) and a little below at 5 (R@5 0.780 vs 0.833);
over the whole memory it is behind (R@1 0.462 vs 0.553, R@5 0.644 vs 0.795), most on code and logs: ts_rank has
no length normalisation that helps here (flags 1, 2 and ts_rank_cd all measured worse).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any, Final

from offprompt.memory.storage.lexical import ChunkRecord, LexicalHit, WindowHit, name_parts, search_words, term_line
from offprompt.memory.storage.pg import PgDatabase

__all__ = ["PgLexicalIndex"]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS chunks (
    id BIGSERIAL PRIMARY KEY,
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    start_byte BIGINT NOT NULL,
    end_byte BIGINT NOT NULL,
    first_token BIGINT NOT NULL,
    context TEXT NOT NULL,
    doc TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_item ON chunks (namespace, item, chunk);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks USING GIN (doc);
CREATE TABLE IF NOT EXISTS lexical_items (
    namespace TEXT NOT NULL, item INTEGER NOT NULL, PRIMARY KEY (namespace, item)
);
CREATE TABLE IF NOT EXISTS windows (
    id BIGSERIAL PRIMARY KEY,
    namespace TEXT NOT NULL,
    item INTEGER NOT NULL,
    start_byte BIGINT NOT NULL,
    end_byte BIGINT NOT NULL,
    doc TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS windows_by_item ON windows (namespace, item);
CREATE INDEX IF NOT EXISTS windows_doc ON windows USING GIN (doc);
"""
#: ts_rank's weights for labels D, C, B, A: text (D) 1, titles (A) 4, as FTS5's TITLE_WEIGHT.
_WEIGHTS: Final = "{0.25, 0, 0, 1}"
_COLUMNS: Final = "c.namespace, c.item, c.chunk, c.start_byte, c.end_byte, c.first_token, c.context"


def _word(term: str) -> str:
    """A term as one PostgreSQL word: identifiers lose their underscores (the parser would split on them)."""
    return term.replace("_", "")


def _document(text: str) -> str:
    return term_line(text).replace("_", "")  # each term as `_word` makes it


def _any(words: Sequence[str]) -> str:
    return " | ".join(_word(w) for w in words)


def _exact(name: str) -> str:
    """A tsquery for chunks holding ``name``: its whole-identifier word, or its parts as a phrase."""
    parts = name_parts(name)
    if not parts:
        return ""
    phrase = " <-> ".join(parts)
    return f"({''.join(parts)} | ({phrase}))" if len(parts) > 1 else phrase


class PgLexicalIndex:
    """Chunks and their tsvectors in the memory's schema; safe to use from several threads and servers."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def add(
        self, namespace: str, item: int, chunks: Sequence[ChunkRecord], texts: Sequence[str], titles: Sequence[str]
    ) -> None:
        rows = [
            (namespace, item, r.chunk, r.start, r.end, r.offset, r.context, _document(title), _document(text))
            for r, text, title in zip(chunks, texts, titles, strict=True)
        ]
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE namespace = %s AND item = %s", (namespace, item))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chunks (namespace, item, chunk, start_byte, end_byte, first_token, context, doc) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, setweight(to_tsvector('english', %s), 'A') || "
                    "setweight(to_tsvector('english', %s), 'D'))",
                    rows,
                )
            conn.execute("INSERT INTO lexical_items VALUES (%s, %s) ON CONFLICT DO NOTHING", (namespace, item))

    def add_windows(self, namespace: str, item: int, spans: Sequence[tuple[int, int]], texts: Sequence[str]) -> None:
        """Index an item's windows of characters (`windows.py`), replacing any earlier ones: their text as a
        chunk's, weight D (a window has no titles)."""
        rows = [(namespace, item, a, b, _document(text)) for (a, b), text in zip(spans, texts, strict=True)]
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM windows WHERE namespace = %s AND item = %s", (namespace, item))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO windows (namespace, item, start_byte, end_byte, doc) "
                    "VALUES (%s, %s, %s, %s, setweight(to_tsvector('english', %s), 'D'))",
                    rows,
                )

    def search_windows(self, query: str, namespaces: Collection[str] | None, limit: int) -> list[WindowHit]:
        """The windows that best match the query, ranked as chunks are (each word's ts_rank times its IDF, here
        over the windows in scope); none for an item indexed before windows were."""
        words = search_words(query)
        if not words or (namespaces is not None and not namespaces):
            return []
        scope, scope_args = self._scope(namespaces)
        with self._db.connection() as conn:
            lexemes = self._idf(conn, words, namespaces, "windows")
            if not lexemes:
                return []
            score, score_args = self._score(lexemes)
            rows = conn.execute(
                f"SELECT c.namespace, c.item, c.start_byte, c.end_byte, {score} AS score FROM windows c "
                f"WHERE c.doc @@ to_tsquery('english', %s) {scope} ORDER BY score DESC, c.id LIMIT %s",
                (*score_args, " | ".join(f"({q})" for q, _ in lexemes), *scope_args, limit),
            ).fetchall()
        return [WindowHit(ns, int(item), int(a), int(b), round(float(s), 4)) for ns, item, a, b, s in rows]

    def windowed(self) -> set[tuple[str, int]]:
        with self._db.connection() as conn:
            return {(ns, int(item)) for ns, item in conn.execute("SELECT DISTINCT namespace, item FROM windows")}

    def indexed(self) -> set[tuple[str, int]]:
        with self._db.connection() as conn:
            return {(ns, int(item)) for ns, item in conn.execute("SELECT namespace, item FROM lexical_items")}

    def chunks(self, namespace: str, item: int) -> list[ChunkRecord]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM chunks c WHERE c.namespace = %s AND c.item = %s ORDER BY c.chunk",
                (namespace, item),
            ).fetchall()
        return [ChunkRecord(*row) for row in rows]

    def count(self, namespace: str, item: int) -> int:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM chunks WHERE namespace = %s AND item = %s", (namespace, item)
            ).fetchone()
        return int(row[0]) if row else 0

    def chunk_counts(self) -> dict[tuple[str, int], int]:
        with self._db.connection() as conn:
            rows = conn.execute("SELECT namespace, item, COUNT(*) FROM chunks GROUP BY namespace, item")
            return {(ns, int(item)): int(n) for ns, item, n in rows}

    def _idf(
        self, conn: Any, words: Sequence[str], namespaces: Collection[str] | None, table: str = "chunks"
    ) -> list[tuple[str, float]]:
        """Each query word that is a lexeme, with its inverse document frequency over the `table`'s rows in scope
        (one round trip: a query is a few of these)."""
        scope, args = self._scope(namespaces)
        rows = conn.execute(
            "WITH words AS (SELECT plainto_tsquery('english', w)::text AS q FROM unnest(%s::text[]) AS w) "
            f"SELECT q, (SELECT COUNT(*) FROM {table} c WHERE c.doc @@ words.q::tsquery {scope}), "
            f"(SELECT COUNT(*) FROM {table} c WHERE TRUE {scope}) FROM words WHERE q <> ''",
            ([_word(w) for w in words], *args, *args),
        ).fetchall()
        lexemes: dict[str, float] = {}
        for query, found, total in rows:
            lexemes.setdefault(query, math.log(1 + (int(total) - int(found) + 0.5) / (int(found) + 0.5)))
        return list(lexemes.items())

    @staticmethod
    def _scope(namespaces: Collection[str] | None) -> tuple[str, tuple[Any, ...]]:
        if namespaces is None:
            return "", ()
        return "AND c.namespace = ANY(%s)", (sorted(namespaces),)

    @staticmethod
    def _score(lexemes: Sequence[tuple[str, float]]) -> tuple[str, tuple[Any, ...]]:
        """An SQL sum of each word's rank times its IDF, and its arguments."""
        parts = [f"%s * ts_rank('{_WEIGHTS}', c.doc, %s::tsquery)" for _ in lexemes]
        args: list[Any] = []
        for query, idf in lexemes:
            args.extend((idf, query))
        return " + ".join(parts) or "0", tuple(args)

    def search(
        self, query: str, namespaces: Collection[str] | None, limit: int, require_any: Sequence[str] = ()
    ) -> list[LexicalHit]:
        words = search_words(query)
        if not words or (namespaces is not None and not namespaces):
            return []
        scope, scope_args = self._scope(namespaces)
        with self._db.connection() as conn:
            lexemes = self._idf(conn, words, namespaces)
            if not lexemes:
                return []
            score, score_args = self._score(lexemes)
            match = "c.doc @@ to_tsquery('english', %s)"
            match_args: tuple[Any, ...] = (" | ".join(f"({q})" for q, _ in lexemes),)
            if require_any:
                alternatives = [a for a in (_exact(name) for name in require_any) if a]
                if not alternatives:
                    return []
                match += " AND c.doc @@ to_tsquery('english', %s)"
                match_args += (" | ".join(alternatives),)
            rows = conn.execute(
                f"SELECT {_COLUMNS}, {score} AS score FROM chunks c WHERE {match} {scope} "
                "ORDER BY score DESC, c.id LIMIT %s",
                (*score_args, *match_args, *scope_args, limit),
            ).fetchall()
        return [LexicalHit(ChunkRecord(*row[:7]), round(float(row[7]), 4)) for row in rows]

    def scores(self, query: str, records: Sequence[ChunkRecord]) -> dict[str, float]:
        words = search_words(query)
        if not words or not records:
            return {}
        namespaces = {r.namespace for r in records}
        by_key = {(r.namespace, r.item, r.chunk): r.id for r in records}
        with self._db.connection() as conn:
            lexemes = self._idf(conn, words, None if len(namespaces) > 1 else namespaces)
            if not lexemes:
                return {}
            score, score_args = self._score(lexemes)
            rows = conn.execute(
                f"SELECT c.namespace, c.item, c.chunk, {score} FROM chunks c "
                "JOIN unnest(%s::text[], %s::int[], %s::int[]) AS k(namespace, item, chunk) "
                "USING (namespace, item, chunk) WHERE c.doc @@ to_tsquery('english', %s)",
                (
                    *score_args,
                    [r.namespace for r in records],
                    [r.item for r in records],
                    [r.chunk for r in records],
                    " | ".join(f"({q})" for q, _ in lexemes),
                ),
            ).fetchall()
        return {by_key[(ns, int(item), int(chunk))]: round(float(s), 4) for ns, item, chunk, s in rows}

    def delete(self, namespace: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE namespace = %s", (namespace,))
            conn.execute("DELETE FROM windows WHERE namespace = %s", (namespace,))
            conn.execute("DELETE FROM lexical_items WHERE namespace = %s", (namespace,))

    def namespaces(self) -> set[str]:
        with self._db.connection() as conn:
            return {ns for (ns,) in conn.execute("SELECT DISTINCT namespace FROM lexical_items")}

    def disk_bytes(self) -> int:
        return 0  # on the database server, not this machine: the quota counts stored payloads only

    def reclaim(self) -> None:
        pass  # autovacuum gives deleted rows back

    def close(self) -> None:
        pass  # the database's connections are closed by the text storage that owns it
