"""Tests for offprompt.embedding against the real int8 model (no fakes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.config import Settings

from offprompt import embedding
from offprompt.embedding import (
    MAX_TEXT_WORDPIECES,
    MAX_WORDPIECES,
    MiniLMEmbedding,
    chroma_embedding_function,
    count_wordpieces,
)

SERVER_DIR = Path(embedding.__file__).resolve().parents[1]

MIXED = [
    "Short one.",
    "A considerably longer sentence about the weather in Lisbon during the spring months, when it rains a lot.",
    "Databases use indexes.",
    "x",
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map text to vectors so that similar meanings land close together.",
    "ok then",
    "A sentence of middling length, here to fill the batch.",
    "",
    "One more to spill into a second batch of eight.",
]


def _embed(texts: list[str], **kwargs: int) -> npt.NDArray[np.float32]:
    return np.asarray(MiniLMEmbedding(**kwargs)(texts), dtype=np.float32)


def _run_fresh(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a script in a new interpreter that can import offprompt and must not reach the network."""
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_vectors_are_384_dim_unit_norm() -> None:
    vectors = MiniLMEmbedding()(["The cat sat on the mat.", "Quarterly revenue grew by 12 percent."])
    assert len(vectors) == 2
    for v in vectors:
        assert v.shape == (384,)
        assert v.dtype == np.float32
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_paraphrase_scores_higher_than_unrelated() -> None:
    anchor, paraphrase, unrelated = _embed(
        [
            "The cat sat on the mat.",
            "A kitten is sitting on a rug.",
            "Quarterly revenue grew by twelve percent.",
        ]
    )
    assert float(anchor @ paraphrase) > float(anchor @ unrelated) + 0.3


def test_output_order_matches_input_with_mixed_lengths() -> None:
    batched = _embed(MIXED, batch_size=8)
    one_by_one = np.stack([_embed([t])[0] for t in MIXED])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    # A different batch size regroups the sorted inputs; results must not move.
    np.testing.assert_allclose(_embed(MIXED, batch_size=3), batched, atol=1e-5)


def test_concurrent_calls_agree() -> None:
    ef = MiniLMEmbedding()
    expected = np.asarray(ef(MIXED))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: np.asarray(ef(MIXED)), range(4)))
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_long_text_is_truncated_not_rejected() -> None:
    head = " ".join(f"token{i} alpha beta" for i in range(200))
    long_a = head + " the tail talks about cooking pasta"
    long_b = head + " the tail talks about orbital mechanics and rockets"
    assert min(count_wordpieces([long_a, long_b])) > MAX_WORDPIECES
    a, b = _embed([long_a, long_b])
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    # Only the head is read, so different tails beyond the limit give the same vector.
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_count_wordpieces_known_string() -> None:
    # hello , world ! una ##ffa ##ble
    assert count_wordpieces(["Hello, world! unaffable", "", "cat"]) == [7, 0, 1]
    assert count_wordpieces([]) == []
    assert MAX_TEXT_WORDPIECES == MAX_WORDPIECES - 2 == 254


def test_count_wordpieces_across_slices_matches_one_by_one() -> None:
    # A long text's lines are counted in slices; each count must still land on its own line.
    texts = [f"line {n}: " + "unaffable " * (n % 7) for n in range(2 * embedding.COUNT_SLICE + 3)]
    assert count_wordpieces(texts) == [count_wordpieces([t])[0] for t in texts]


def test_config_round_trip() -> None:
    ef = MiniLMEmbedding(batch_size=4, threads=1)
    assert MiniLMEmbedding.name() == "offprompt-minilm-int8"
    rebuilt = MiniLMEmbedding.build_from_config(ef.get_config())
    assert rebuilt.get_config() == ef.get_config()
    assert not ef.is_legacy()
    assert ef.default_space() == "cosine"


def test_import_and_count_do_not_load_model(tmp_path: Path) -> None:
    proc = _run_fresh(
        """
        import sys
        from offprompt import embedding
        ef = embedding.MiniLMEmbedding()
        embedding.MiniLMEmbedding.build_from_config(ef.get_config())
        assert "tokenizers" not in sys.modules, "tokenizer loaded at import"
        assert embedding.count_wordpieces(["hello world"]) == [2]
        assert "onnxruntime" not in sys.modules, "model runtime loaded by count_wordpieces"
        assert not embedding._sessions
        print("ok")
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_persisted_collection_reopens_in_fresh_process(tmp_path: Path) -> None:
    db = tmp_path / "chroma"
    client = chromadb.PersistentClient(path=str(db), settings=Settings(anonymized_telemetry=False))
    collection = client.create_collection("offprompt-test", embedding_function=chroma_embedding_function())
    collection.add(
        ids=["pets", "money", "code"],
        documents=[
            "The cat sat on the mat and purred.",
            "Quarterly revenue grew by twelve percent year over year.",
            "Python is a programming language with dynamic typing.",
        ],
    )
    assert collection.configuration_json["embedding_function"]["name"] == "offprompt-minilm-int8"

    proc = _run_fresh(
        f"""
        import json
        import chromadb
        from chromadb.config import Settings

        import offprompt.embedding  # registers the embedding function with Chroma

        client = chromadb.PersistentClient(path={str(db)!r}, settings=Settings(anonymized_telemetry=False))
        collection = client.get_collection("offprompt-test")
        result = collection.query(query_texts=["How much money did the company earn?"], n_results=3)
        print(json.dumps(result["ids"][0]))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout.strip().splitlines()[-1])
    assert ids[0] == "money"
    assert sorted(ids) == ["code", "money", "pets"]


NICENESS_PROBE = textwrap.dedent(
    """
    import glob, json, os, threading
    import onnxruntime  # starts a thread of its own, idle: not one that embeds
    from offprompt.embedding import MiniLMEmbedding

    def threads():
        found = {}
        for path in glob.glob("/proc/self/task/*/stat"):
            stat = open(path).read()
            fields = stat[stat.rindex(")") + 2 :].split()
            found[int(path.split("/")[4])] = int(fields[16])  # niceness
        return found

    before = set(threads())
    model = MiniLMEmbedding(threads=2)
    model.embed(["a sentence to embed"] * 8)  # from the main thread, at the process's own priority
    model.embed_query(["a query"])
    after = threads()
    print(json.dumps({"main": after[threading.get_native_id()],
                      "started": [n for tid, n in after.items() if tid not in before]}))
    """
)


def test_the_models_own_threads_run_below_the_serving_threads() -> None:
    # A fresh process: sessions are made once per process. Linux keeps niceness per thread, so this reads each
    # thread's own from /proc. (Under `nice -n 19` there is no room below: nothing to check.)
    if not sys.platform.startswith("linux") or os.getpriority(os.PRIO_PROCESS, 0) >= 19:
        return
    out = subprocess.run(
        [sys.executable, "-c", NICENESS_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SERVER_DIR)},
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["main"] == os.getpriority(os.PRIO_PROCESS, 0)  # the caller keeps its priority
    assert found["started"], "onnxruntime started no thread of its own: the test proves nothing"
    assert all(n > found["main"] for n in found["started"]), found
