from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from offprompt.tokens import count_tokens, encoding, index_tokens

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
    data = MIXED.encode()
    for window in (1, 2, 3, 7, 100, 10_000):
        assert read_all(data, window) == MIXED


def test_index_counts_the_same_tokens_as_tiktoken() -> None:
    index = index_tokens(MIXED.encode())
    assert index.tokens == count_tokens(MIXED) == len(encoding().encode_ordinary(MIXED))


def test_special_token_strings_are_counted_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


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


def test_a_later_process_reads_the_prepared_table_and_counts_the_same(tmp_path: Path) -> None:
    # The first process parses the packaged file and leaves the parsed table; the next loads that instead. A
    # damaged table (a disk full mid-write by another tool, say) is parsed again and replaced, never trusted.
    code = f"import offprompt.tokens as t; print(t.count_tokens({MIXED!r}), t.index_tokens({MIXED!r}.encode()).tokens)"
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path)}

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout

    expected = f"{count_tokens(MIXED)} {count_tokens(MIXED)}\n"
    assert run() == expected
    (prepared,) = tmp_path.glob("o200k_base.*.marshal")
    assert run() == expected
    prepared.write_bytes(prepared.read_bytes()[:1000])
    assert run() == expected
    assert len(prepared.read_bytes()) > 1_000_000
