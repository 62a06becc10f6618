"""Where things are in a stored text: lines in bytes, characters in bytes, bytes in tokens.

A stored text is UTF-8 bytes; the cutters read it as `str`. An outline entry or a passage is found by
character offsets and handed out as a 1-based line and a token offset, both exact for that byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class LineIndex:
    """Byte offset where each line starts; line ``n`` (1-based) starts at ``starts[n - 1]``."""

    starts: npt.NDArray[np.int64]
    size: int

    @classmethod
    def of(cls, data: bytes) -> LineIndex:
        breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
        starts = np.concatenate((np.zeros(1, dtype=np.int64), breaks.astype(np.int64) + 1))
        if len(starts) > 1 and starts[-1] == len(data):
            starts = starts[:-1]  # a final line break ends the last line; no empty line follows it
        return cls(starts, len(data))

    def to_bytes(self) -> bytes:
        return np.concatenate((self.starts, [self.size])).astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> LineIndex:
        stored = np.frombuffer(data, dtype="<u4").astype(np.int64)
        return cls(stored[:-1], int(stored[-1]))

    @property
    def lines(self) -> int:
        return len(self.starts)

    def line_at(self, byte: int) -> int:
        """The 1-based line holding ``byte`` (the last line for the end of the text)."""
        return int(np.searchsorted(self.starts, byte, side="right"))

    def lines_at(self, bytes_: Sequence[int] | npt.NDArray[np.int64]) -> list[int]:
        return [int(n) for n in np.searchsorted(self.starts, np.asarray(bytes_, dtype=np.int64), side="right")]

    def start_of(self, line: int) -> int:
        """Byte where the 1-based ``line`` starts."""
        return int(self.starts[line - 1])

    def starts_line(self, byte: int) -> int | None:
        """The 1-based line that starts exactly at ``byte``, if one does (none at the end of the text)."""
        if byte >= self.size:
            return None
        k = int(np.searchsorted(self.starts, byte, side="left"))
        return k + 1 if k < len(self.starts) and int(self.starts[k]) == byte else None


def chars_to_bytes(text: str, data: bytes, chars: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Byte offsets of character offsets of ``text`` (``data`` is its UTF-8), encoding each stretch between
    them once: a few ms for 1 MB, whatever its characters."""
    if len(text) == len(data):
        return chars
    order = np.argsort(chars, kind="stable")
    out = np.empty(len(chars), dtype=np.int64)
    last_char = last_byte = 0
    for k in order:
        char = int(chars[k])
        last_byte += len(text[last_char:char].encode("utf-8"))
        last_char = char
        out[k] = last_byte
    return out
