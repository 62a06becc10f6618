"""Structure-aware chunking: what the text is decides where it is cut; spans stay exact and within the model."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

import pytest

from offprompt.embedding import MAX_TEXT_WORDPIECES, count_wordpieces
from offprompt.memory.chunking import Chunk, chunk, detect, for_embedding
from offprompt.memory.chunking.record_names import names
from offprompt.memory.chunking.units import (
    CHARS_PER_LONG_PIECE_WORDPIECE,
    LONG_PIECE_CHARS,
    WordpieceCounter,
    long_piece_wordpieces,
)
from offprompt.memory.storage.text import searchable

from ..support import DOCS, REPO

READMES = REPO / "tests" / "data" / "readmes"

SHAPES = {
    "code_subprocess.py": "code",
    "code_commander_command.js": "code",
    "prose_flask_config.rst": "prose",
    "prose_pytest_deprecations.rst": "prose",
    "logs_dpkg.log": "log",
    "logs_cpython_regrtest.log": "log",
    "json_mime_db.json": "json",
    "json_botocore_sqs_service-2.json": "json",
}


def texts(data: bytes, chunks: list[Chunk]) -> list[str]:
    return [data[c.start : c.end].decode("utf-8") for c in chunks]


def assert_covered(data: bytes, chunks: list[Chunk]) -> None:
    """Every non-blank byte is in some chunk, and every chunk is a valid span of the text."""
    covered = bytearray(len(data))
    for c in chunks:
        assert 0 <= c.start < c.end <= len(data)
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, byte in enumerate(data) if not covered[i] and not chr(byte).isspace()]
    assert missing == [], f"bytes {missing[:5]}… are in no chunk"


def assert_within_the_model(data: bytes, chunks: list[Chunk], limit: int = MAX_TEXT_WORDPIECES) -> None:
    embedded = [searchable(c.context, t) for c, t in zip(chunks, texts(data, chunks), strict=True)]
    assert max(count_wordpieces(embedded)) <= limit
    assert max(count_wordpieces([for_embedding(t) for t in embedded])) <= limit


@pytest.mark.parametrize(("name", "shape"), SHAPES.items())
def test_real_documents_are_cut_by_what_they_are_and_fit_the_model(name: str, shape: str) -> None:
    data = (DOCS / name).read_bytes()
    kind = "json" if shape == "json" else "text"
    assert detect(data.decode(), kind) == shape
    chunks = chunk(data, kind)
    assert_covered(data, chunks)
    assert_within_the_model(data, chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


@pytest.mark.parametrize("name", ["cors-2.8.6.md", "jose-6.2.18.md", "debug-4.4.3.md"])
def test_a_readme_with_no_file_name_is_prose_whatever_its_examples_and_lists(name: str) -> None:
    """A fetched README comes with no file name: its code examples must not make it code (cors), nor its
    lists a log (jose), or its map lists the examples' functions instead of its headings."""
    assert detect((READMES / name).read_text()) == "prose"


def test_a_line_of_text_right_above_a_fence_heads_no_section() -> None:
    """debug's README has `print :` then a fence: read as an underlined heading, it put the fence's output
    (`3 false`) in the heading path of the chunks after it."""
    text = (READMES / "debug-4.4.3.md").read_text()
    headings = {line.lstrip("#").strip() for line in text.split("\n") if line.startswith("#")}
    chunks = chunk(text.encode(), "text")
    assert {part for c in chunks for part in c.context.split(" > ")} <= headings


def test_python_with_comment_lines_and_a_fenced_docstring_is_still_code() -> None:
    headed = "# Section one\n\n# Section two\n\n" + (DOCS / "code_subprocess.py").read_text()
    fenced = headed.replace('"""', '"""\n```\nexample()\n```\n', 1)
    assert detect(fenced) == "code"


def test_a_file_name_is_read_for_its_extension_not_for_words_inside_it() -> None:
    text = (DOCS / "logs_cpython_regrtest.log").read_text()
    assert detect(text, "text", "logs_cpython_regrtest.log") == "log"
    assert detect("x = 1\n", "text", "text/x-python") == "code"


PYTHON = '''"""A module."""

import os


def small(a, b):
    """Add two numbers.

    Used everywhere.
    """
    return a + b


class Big:
    """A class with a long method."""

    def long(self):
        """Do many things, one after another."""
{body}
        return None

    def after(self):
        return 1
'''


def test_a_definition_with_its_docstring_stays_whole_and_a_long_one_is_cut_under_its_signature() -> None:
    body = "".join(
        f"        step_{i} = compute_value({i}, factor={i * 3})  # step {i} of the work\n" for i in range(80)
    )
    data = PYTHON.format(body=body).encode()
    chunks = chunk(data)
    small = data.index(b"def small")
    small_end = data.index(b"return a + b") + len(b"return a + b")
    assert any(c.start <= small and small_end <= c.end for c in chunks)  # docstring and body together
    inside_long = [c for c in chunks if b"step_40 " in data[c.start : c.end]]
    assert inside_long
    assert all("def long(self): — Do many things, one after another." in c.context for c in inside_long)
    assert all("class Big:" in c.context for c in inside_long)
    assert_covered(data, chunks)
    assert_within_the_model(data, chunks)


def test_a_docstring_at_column_zero_does_not_end_its_function() -> None:
    data = (
        b'def f():\n    """First line.\nsecond line at column zero\n    """\n    return 1\n\n\ndef g():\n    return 2\n'
    )
    [only] = chunk(data)
    assert (only.start, only.end) == (0, len(data))


MARKDOWN = """# Guide

Intro paragraph.

## Install

{install}

## Configure

### Timeouts

{timeouts}
"""


def test_prose_is_cut_at_headings_and_carries_the_heading_path() -> None:
    install = "\n\n".join(f"Install step {i}: run the installer with option number {i} and wait." for i in range(40))
    timeouts = "\n\n".join(f"Timeout rule {i}: a request waits {i} seconds before it gives up." for i in range(40))
    data = MARKDOWN.format(install=install, timeouts=timeouts).encode()
    chunks = chunk(data, hint="guide.md")
    for c, text in zip(chunks, texts(data, chunks), strict=True):
        if "Timeout rule 30" in text:
            assert c.context.endswith("Configure > Timeouts") or "Timeouts" in c.titles
            assert "Install step" not in text
        if "Install step 30" in text:
            assert "Install" in c.context or "Install" in c.titles
    assert_covered(data, chunks)


def test_json_records_are_chunks_of_their_own_and_big_ones_keep_their_path() -> None:
    records = {f"type/{i}": {"source": "iana", "compressible": i % 2 == 0, "extensions": [f"x{i}"]} for i in range(200)}
    big = {f"Field{i}": {"shape": "String", "documentation": f"The field number {i}. " * 12} for i in range(30)}
    value = {"records": records, "shapes": {"BigRequest": {"type": "structure", "members": big}}}
    data = json.dumps(value, indent=2).encode()
    chunks = chunk(data, "json")
    assert_covered(data, chunks)
    assert_within_the_model(data, chunks)
    record_chunks = [t for c, t in zip(chunks, texts(data, chunks), strict=True) if c.context == "records"]
    assert len(record_chunks) >= 100  # a record, or two tiny ones, per chunk
    assert all(t.lstrip().startswith('"type/') for t in record_chunks[1:])
    deep = [c for c, t in zip(chunks, texts(data, chunks), strict=True) if '"Field7"' in t]
    assert deep
    assert deep[0].context == "shapes > BigRequest > members"


def test_a_big_records_chunks_name_the_record_they_were_cut_from() -> None:
    # `pip inspect`'s shape: each installed distribution is an array element too big for one chunk, and its name
    # sits two objects down (`metadata.name`). A chunk of its later fields must still say whose fields they are.
    installed = [
        {
            "metadata": {
                "metadata_version": "2.1",
                "name": name,
                "version": f"1.{k}",
                "summary": summary,
                "description": f"{name}: {summary}\n\n" + f"Read the documentation of {name} online. " * 60,
                "requires_python": f">=3.{k}",
            },
            "installer": "pip",
        }
        for k, (name, summary) in enumerate(
            [
                ("tzdata", "Provider of IANA time zone data"),
                ("idna", "Internationalized Domain Names in Applications (IDNA)"),
                ("six", "Python 2 and 3 compatibility utilities"),
            ]
        )
    ]
    data = json.dumps({"version": "1", "installed": installed}, indent=2).encode()
    chunks = chunk(data, "json")
    assert_covered(data, chunks)
    assert_within_the_model(data, chunks)
    holding = [c for c, t in zip(chunks, texts(data, chunks), strict=True) if '"requires_python": ">=3.0"' in t]
    assert holding
    assert holding[0].context.startswith("installed > [0] tzdata: Provider of IANA time zone data")


def test_records_past_the_first_two_hundred_are_named_by_the_key_found_in_those() -> None:
    # Only the first 200 are held decoded to find the key column; every later record is named as it is read.
    records = [{"kind": "pod", "name": f"web-{i}", "note": "a pod of the web tier"} for i in range(450)]
    found = names(records)
    assert len(found) == 450
    assert found[0] == "web-0: a pod of the web tier"
    assert found[449] == "web-449: a pod of the web tier"


def test_records_without_a_member_that_tells_them_apart_keep_their_index() -> None:
    rows = [{"status": "ok", "notes": "nothing to report " * 80} for _ in range(4)]
    data = json.dumps(rows, indent=2).encode()
    contexts = {c.context for c in chunk(data, "json")}
    assert contexts == {"[0]", "[1]", "[2]", "[3]"}


def test_a_log_is_cut_into_overlapping_windows_of_lines() -> None:
    lines = [f"2026-11-30 12:{i // 60:02d}:{i % 60:02d} INFO worker {i % 7} handled request {i}\n" for i in range(600)]
    data = "".join(lines).encode()
    assert detect(data.decode()) == "log"
    chunks = chunk(data)
    assert_covered(data, chunks)
    assert all(data[c.start : c.end].endswith(b"\n") for c in chunks)  # whole lines
    shared = [a.end > b.start for a, b in itertools.pairwise(chunks)]
    assert all(shared)  # a line at the edge of one window sits inside the next


def test_a_line_with_no_structure_is_split_into_overlapping_windows_within_the_limit() -> None:
    data = ("word " * 5000).encode()
    chunks = chunk(data, limit=100)
    assert len(chunks) > 40
    assert_covered(data, chunks)
    assert max(count_wordpieces(texts(data, chunks))) <= 100
    assert all(a.end > b.start for a, b in itertools.pairwise(chunks))


def test_multibyte_text_keeps_exact_byte_offsets() -> None:
    text = "".join(f"Grüße {i} 日本 emoji🎉 naïve line\n\n" for i in range(400))
    data = text.encode()
    chunks = chunk(data)
    assert_covered(data, chunks)
    for t in texts(data, chunks):  # every span decodes: no cut inside a character
        assert t


def test_counting_word_by_word_gives_the_tokenizers_own_count_for_any_piece() -> None:
    # The packer counts each distinct word once and adds them up; a piece's count must still be the tokenizer's, or
    # chunks would overflow what the model reads. Pieces cut anywhere, whitespace the model does not split on
    # (\x0b, \x85, U+2028), accents, CJK, special tokens, and a word too long to be remembered.
    data = (DOCS / "code_subprocess.py").read_text() + (DOCS / "json_botocore_sqs_service-2.json").read_text()
    pieces = [data[a : a + n] for a, n in zip(range(0, len(data), 997), itertools.cycle((40, 300, 1500)))]
    odd = ["a\x0bb c\x85d e\u2028f\u3000g\xa0h", "café naïve 日本語の文 Grüße", "x" * 150 + " tail", "", " \n\t "]
    odd += ["x[SEP]y [UNK] a[[CLS]]b [cls] [MASK]"]  # the tokenizer's special tokens, one wordpiece each
    count = WordpieceCounter()
    texts = pieces + odd + pieces[:50]  # the second time from what it remembered
    long = [t for t in texts if any(len(w) > LONG_PIECE_CHARS for w in re.split(r"[\s!-/:-@\[-`{-~]", t))]
    assert long == [odd[2]]  # the one piece the tokenizer reads as a single [UNK]: measured by its length
    assert count(texts) == [
        long_piece_wordpieces("x" * 150) + 1 if t in long else n
        for t, n in zip(texts, count_wordpieces(texts), strict=True)
    ]


def test_a_line_without_white_space_is_cut_into_chunks_as_long_as_any_others() -> None:
    # The tokenizer reads a word past 100 characters as one [UNK]: measured so, 1 MiB of `zzz…` (or of blanks
    # around two words) was one chunk of 1 MiB, which the lexical index took whole and a query hit answered whole.
    for data in (b"z" * (1 << 20), b"a" + b" " * (1 << 20) + b"b", b"Zq9" * 100_000 + b"\n" + b"x=1\n" * 50):
        chunks = chunk(data)
        assert_covered(data, chunks)
        assert max(c.end - c.start for c in chunks) <= 4 * MAX_TEXT_WORDPIECES * CHARS_PER_LONG_PIECE_WORDPIECE
    assert count_wordpieces(["z" * 5000]) == [1]  # what the tokenizer says of such a word


def test_blank_text_has_no_chunks() -> None:
    assert chunk(b"   \n\n\t") == []


def test_what_the_model_reads_spells_identifiers_out_and_drops_markup() -> None:
    assert for_embedding('self._sigint_wait_secs = 0.25  # "<code>CalledProcessError</code>"') == (
        "self.sigint wait secs 0.25 Called Process Error"
    )
    assert for_embedding("ERR_CONN_RESET\n\n------\nHTTPServer") == "ERR CONN RESET\nHTTP Server"


def test_embedding_text_is_linear_in_a_run_of_letters() -> None:
    # A 40,000-letter run took ~50 s, blocking every call; 100,000 would take minutes. A subprocess with a
    # generous timeout is the hang guard (no speed assertion).
    code = (
        "from offprompt.memory.chunking import for_embedding; "
        "text = for_embedding('a' * 100_000 + ' ' + 'B' * 100_000 + ' x_' + 'y' * 100_000); "
        "assert text.startswith('aaa') and text.endswith('yyy'), text[:20]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_heading_followed_by_a_long_run_of_spaces_is_chunked_in_linear_time() -> None:
    # The heading regex took cubic time here (10 s for 1,000 spaces), holding the GIL while a result was
    # indexed: every call waited. A subprocess with a generous timeout is the hang guard.
    code = (
        "from offprompt.memory.chunking import chunk; "
        "chunks = chunk(('# Title' + ' ' * 40_000 + 'end\\n## Next ##  \\nbody\\n').encode()); "
        "assert (chunks[0].titles or chunks[0].context).startswith('Title'), chunks"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
