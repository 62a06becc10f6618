"""Cut a stored text into search chunks of about `target` tokens.

Chunks are byte spans of the stored text, contiguous and covering it, so a
hit's offset points exactly into what `memory_load` reads. Cuts prefer the
text's own boundaries: whole JSON records for JSON, line ends elsewhere; a
unit longer than a chunk is cut on token boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from offprompt.tokens import TokenIndex

TARGET_TOKENS = 200

Span = tuple[int, int]


def line_boundaries(data: bytes) -> list[int]:
    """Byte offsets where a line starts (after each newline)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    return (np.flatnonzero(arr == 0x0A) + 1).tolist()


def json_record_boundaries(text: str, data: bytes) -> list[int]:
    """Byte offsets where each top-level record of a JSON array or object starts."""
    decoder = json.JSONDecoder()
    stripped = len(text) - len(text.lstrip())
    if stripped >= len(text) or text[stripped] not in "[{":
        return []
    is_object = text[stripped] == "{"
    char_starts: list[int] = []
    pos = stripped + 1
    try:
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text) or text[pos] in "]}":
                break
            char_starts.append(pos)
            if is_object:
                _, pos = decoder.raw_decode(text, pos)  # the key
                while text[pos] in " \t\r\n:":
                    pos += 1
            _, pos = decoder.raw_decode(text, pos)
    except (ValueError, IndexError):
        return []
    return _chars_to_bytes(text, char_starts) if len(text) != len(data) else char_starts


def _chars_to_bytes(text: str, char_offsets: Iterable[int]) -> list[int]:
    """Byte offsets of ascending character offsets, encoding each stretch once."""
    out: list[int] = []
    last_char = last_byte = 0
    for char in char_offsets:
        last_byte += len(text[last_char:char].encode("utf-8"))
        last_char = char
        out.append(last_byte)
    return out


def pack(boundaries: list[int], index: TokenIndex, target: int = TARGET_TOKENS) -> list[Span]:
    """Greedy chunks: each ends at the last preferred boundary that keeps it within `target` tokens.

    Boundaries are bytes and need not fall between tokens; a stretch with no
    boundary inside the limit is cut after `target` tokens.
    """
    end = int(index.offsets[-1])
    cuts = np.asarray(sorted({b for b in boundaries if 0 < b < end} | {end}), dtype=np.int64)
    # A cut inside a token counts that token in full: sizes are never underestimated.
    cut_tokens = np.searchsorted(index.offsets, cuts, side="left")
    spans: list[Span] = []
    start, start_token = 0, 0
    while start < end:
        limit = start_token + target
        pos = int(np.searchsorted(cut_tokens, limit, side="right")) - 1
        if pos >= 0 and cuts[pos] > start:
            stop, stop_token = int(cuts[pos]), int(cut_tokens[pos])
        else:
            stop_token = min(limit, index.tokens)
            stop = int(index.offsets[stop_token])
        spans.append((start, stop))
        start, start_token = stop, stop_token
    return spans


def chunk(data: bytes, index: TokenIndex, kind: str, target: int = TARGET_TOKENS) -> list[Span]:
    """Search chunks for a stored text of the given artifact kind."""
    boundaries: list[int] = []
    if kind == "json":
        boundaries = json_record_boundaries(data.decode("utf-8"), data)
    if not boundaries:
        boundaries = line_boundaries(data)
    return pack(boundaries, index, target)
