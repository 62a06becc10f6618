"""Hybrid ranking's features and weights: what decides which of the candidate chunks comes first."""

from __future__ import annotations

import pytest

from offprompt.memory.storage import ranking
from offprompt.memory.storage.base import Candidate
from offprompt.memory.storage.lexical import ChunkRecord


def candidate(text: str, lexical: float = 0.0, dense: float = 0.0, share: float = 0.0, context: str = "") -> Candidate:
    c = Candidate(ChunkRecord("ns", 0, 0, 0, len(text), 0, context), {"lexical": lexical, "dense": dense}, text)
    c.coverage = share
    return c


def feature(query: str, texts: list[str], name: str) -> list[float]:
    return [row[0] for row in ranking.features(query, [candidate(t) for t in texts], [name])]


def test_a_question_in_plain_words_is_spelled_by_the_constant_that_answers_it() -> None:
    texts = [
        "DEFAULT_BUFFER_SIZE = 8 * 1024  # bytes",
        '    """Read at most the default buffer size at once."""\n    n = DEFAULT_BUFFER_SIZE',
        "BUFFER = bytearray()",
    ]
    # The defining line spells every word of the question; a docstring naming it defines nothing, and a name of
    # a single one of the words spells too little of the question to be what it names.
    assert feature("what is default buffer size", texts, "defines_value") == [1.0, 0.0, 0.0]
    assert feature("buffer size", texts, "defines_value")[2] == 0.5
    assert feature("what is default buffer size", texts, "defines") == [0.0, 0.0, 0.0]


def test_a_function_or_class_is_spelled_by_its_parts_whatever_the_case_and_indent() -> None:
    texts = [
        "def register_archive_format(name, function, extra_args=None,\n                            description=''):",
        "class SameFileError(Error):\n    pass",
        "    async def register(self):",
        "export function registerArchiveFormat() {}",
        "# see register_archive_format()",
    ]
    assert feature("register archive format", texts, "defines") == [
        1.0,
        0.0,
        0.0,  # one of the three words: not what the question names
        1.0,
        0.0,
    ]
    assert feature("same file error", texts, "defines")[1] == 1.0


def test_the_hand_set_weights_mix_both_scores_and_the_coverage() -> None:
    found = [candidate("x", lexical=4.0, dense=0.30, share=0.0), candidate("y", lexical=2.0, dense=0.50, share=1.0)]
    ranking.fuse("what is a", found)
    # BM25 over the best one (1 and 0.5), similarity min-max scaled (0 and 1), then 0.4 of the coverage; neither
    # text holds a word of the query, so `local` adds nothing.
    assert found[0].score == pytest.approx(0.4 * 1.0)
    assert found[1].score == pytest.approx(0.4 * 0.5 + 0.6 * 1.0 + 0.4 * 1.0)


def test_a_feature_with_no_weight_is_not_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(text: str) -> None:
        raise AssertionError("definitions looked for with no weight on them")

    monkeypatch.setattr(ranking, "_definitions", fail)
    found = [candidate("DEFAULT_BUFFER_SIZE = 8192", lexical=1.0)]
    ranking.fuse("default buffer size", found, {"lexical": 0.4, "dense": 0.6})
    assert found[0].score == pytest.approx(0.4)


def test_the_chunk_defining_what_the_question_names_outranks_one_that_mentions_it_more() -> None:
    found = [
        candidate('    """Reads the default buffer size: DEFAULT_BUFFER_SIZE."""', lexical=9.0, dense=0.6, share=1.0),
        candidate("DEFAULT_BUFFER_SIZE = 8 * 1024  # bytes", lexical=3.0, dense=0.4, share=1.0),
    ]
    ranking.fuse("what is default buffer size", found)
    assert found[1].score > found[0].score


def test_the_lines_that_hold_the_question_together_outrank_a_chunk_that_spreads_its_words() -> None:
    spread = "\n".join(
        ["def wait(self, timeout=None):", '    """Wait for the child."""']
        + [f"    step_{n} = self.poll()" for n in range(12)]
        + ["    # resume after an interrupt", "    return self.returncode"]
    )
    together = "    # How long to resume waiting on a child after the first interrupt.\n    _sigint_wait_secs = 0.25"
    query = "how long to resume waiting on the child after an interrupt"
    # The big chunk holds most of the words too, but no three of its lines hold many of them.
    local = feature(query, [spread, together], "local")
    assert local[0] <= 0.4
    assert local[1] == 1.0
    found = [
        candidate(spread, lexical=5.0, dense=0.5, share=0.8),
        candidate(together, lexical=4.0, dense=0.5, share=0.8),
    ]
    ranking.fuse(query, found)
    assert found[1].score > found[0].score
    ranking.fuse(query, found, {k: v for k, v in ranking.HAND_SET.items() if k != "local"})
    assert found[0].score > found[1].score


def test_a_chunk_not_embedded_yet_ranks_as_a_middling_match_by_meaning_not_the_worst() -> None:
    # A query a few seconds after a big output was stored: the chunk its words point to has no vector yet.
    # Scored as the least similar chunk, it fell below chunks that only share a common word with the question.
    waiting = Candidate(ChunkRecord("ns", 0, 0, 0, 9, 0, ""), {"lexical": 5.0}, "ambiguous option could match")
    embedded = [
        candidate("parser.error(msg)", lexical=3.0, dense=0.55),
        candidate("import argparse", lexical=1.0, dense=0.35),
        candidate("def error(self, message):", lexical=0.5, dense=0.60),
    ]
    ranking.fuse("what error does an ambiguous option report", [waiting, *embedded])
    assert waiting.score > max(c.score for c in embedded)
    # The median of the embedded candidates' scaled similarities (0.8, 0 and 1) stands in for its own.
    assert ranking.features("x", [waiting, *embedded], ["dense"])[0] == [pytest.approx(0.8)]


def test_beside_two_embedded_chunks_one_with_no_vector_takes_the_lower() -> None:
    # Min-max over two similarities says little: the chunk with no vector is not lifted to the best one's 1.
    waiting = Candidate(ChunkRecord("ns", 1, 0, 0, 9, 0, ""), {"lexical": 1.0}, "x")
    found = [waiting, candidate("y", lexical=1.0, dense=0.3), candidate("z", lexical=1.0, dense=0.6)]
    assert [row[0] for row in ranking.features("x", found, ["dense"])] == [0.0, 0.0, 1.0]


def test_with_no_candidate_embedded_meaning_decides_nothing() -> None:
    found = [Candidate(ChunkRecord("ns", 0, k, 0, 1, 0, ""), {"lexical": float(k + 1)}, "x") for k in range(3)]
    assert [row[0] for row in ranking.features("x", found, ["dense"])] == [0.0, 0.0, 0.0]
