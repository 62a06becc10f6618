"""The share of a question a chunk holds: what lifts the chunk that answers over one repeating a single word."""

from __future__ import annotations

import pytest

from offprompt.memory.storage.coverage import coverage


def test_a_chunk_holding_every_word_of_the_question_covers_all_of_it() -> None:
    shares = coverage(
        "does the lock give up after five attempts?",
        [
            "def acquire(lock):\n    '''Give up after five attempts at the lock.'''",
            "lock lock lock lock lock: the lock module's locks",
        ],
    )
    assert shares[0] == pytest.approx(1.0)
    assert shares[1] < 0.5


def test_a_rare_word_counts_more_than_one_every_chunk_holds() -> None:
    texts = [
        "the queue: messages wait in the queue",
        "the queue: a redrive moves messages back to the queue",
        "the queue: purge empties the queue",
    ]
    shares = coverage("redrive the queue", texts)
    # "queue" is in all three, so it tells them apart no more than "the" would; "redrive" is in one.
    assert shares[1] > 0.8
    assert shares[0] < 0.2
    assert shares[2] == shares[0]


def test_plurals_tenses_and_identifier_parts_count_as_the_word() -> None:
    shares = coverage(
        "which timeouts expired while configuring?",
        ["raise TimeoutExpired(cmd) from the configured child", "nothing to see"],
    )
    assert shares == [pytest.approx(1.0), 0.0]


def test_a_question_of_stop_words_only_still_counts_them() -> None:
    assert coverage("what is it?", ["what it is", "nothing"]) == [pytest.approx(1.0), 0.0]
