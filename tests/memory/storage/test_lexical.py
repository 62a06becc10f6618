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


def test_words_whose_initials_and_last_word_spell_a_package_name_reach_its_line(tmp_path: Path) -> None:
    """ "The time zone data" names `tzdata`: a question in plain words reaches the line naming the package, by words
    alone. Lines in the shape of apt's /var/log/apt/history.log (Debian 12), one chunk each."""
    lines = [
        "Upgrade: tzdata:amd64 (2025a-0+deb12u1, 2025b-0+deb12u1)",
        "Upgrade: libc6:amd64 (2.36-9+deb12u8, 2.36-9+deb12u9)",
        "Install: openjdk-17-jdk:amd64 (17.0.13+11-2~deb12u1)",
        "Commandline: apt-get install -y --no-install-recommends data-tools",
        "Install: data-tools:amd64 (1.2-1), python3-data:all (0.4-2, automatic)",
        "Remove: fonts-data:all (2.1-3)",
    ]
    index = SqliteLexicalIndex(tmp_path / "lexical.sqlite3")
    try:
        records = [ChunkRecord("ns", 0, k, 0, len(line), 0, "") for k, line in enumerate(lines)]
        index.add("ns", 0, records, lines, ["" for _ in lines])
        hits = index.search("When was the time zone data updated, and to which version?", None, 5)
        assert hits[0].record.chunk == 0
    finally:
        index.close()
