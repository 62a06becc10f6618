"""BM25 of given chunks (how a hybrid query scores the chunks found by meaning) is the score a search gives them;
a text is indexed by the terms its queries are split into."""

from __future__ import annotations

from pathlib import Path

from offprompt.memory.storage.lexical import ChunkRecord, SqliteLexicalIndex, term_line, terms

from ...support import DOCS


def test_scores_of_chunks_equal_their_search_scores_and_skip_chunks_without_the_words(tmp_path: Path) -> None:
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    text = (DOCS / "code_subprocess.py").read_text()
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    try:
        for ns in ("ns-a", "ns-b"):  # two namespaces holding the same chunks: the words' counts double
            records = [ChunkRecord(ns, 0, k, 0, len(p), 0, "") for k, p in enumerate(paragraphs)]
            index.add(ns, 0, records, paragraphs, ["" for _ in paragraphs])
        query = "timeout expired while waiting for the child process"
        hits = index.search(query, None, 25)
        assert len(hits) == 25
        words = ("timeout", "expir", "wait", "child", "process")
        lacking = next(k for k, p in enumerate(paragraphs) if not any(w in p.lower() for w in words))
        unrelated = ChunkRecord("ns-a", 0, lacking, 0, 1, 0, "")  # holds none of the query's words
        scores = index.scores(query, [h.record for h in hits] + [unrelated])
        assert scores == {h.record.id: h.score for h in hits}
    finally:
        index.close()


def test_a_text_is_indexed_by_the_terms_a_query_is_split_into() -> None:
    # The index splits each distinct word once (term_line); a query goes through `terms`. Were they to differ, a
    # query would miss the very words it names.
    text = (DOCS / "code_subprocess.py").read_text() + (DOCS / "logs_dpkg.log").read_text()
    text += " ERR_CONN_RESET TimeoutExpired /usr/bin/junk café 日本語 _ __init__ x" * 3
    assert term_line(text) == " ".join(terms(text))
