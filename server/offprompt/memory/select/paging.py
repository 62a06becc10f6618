"""Token-bounded pages of a selection's text.

A page starts at a character offset and holds as much of the text as fits in
`max_tokens`, cut at a token boundary. Finding it tokenizes about one page, not
the whole result, so the first page of a 5 MB selection costs what a small one
does. Pages from offset 0, each starting at the last one's `next_offset`, join
back to the exact text.
"""

from __future__ import annotations

from dataclasses import dataclass

from offprompt.errors import InvalidArgumentError
from offprompt.tokens import Offsets, count_tokens, index_tokens

#: Characters per token to try first; JSON runs 2-4, so one try is the rule.
_FIRST_GUESS = 5


@dataclass(frozen=True, slots=True)
class Page:
    text: str
    offset: int
    next_offset: int | None


def page(text: str, offset: int, max_tokens: int) -> Page:
    """The page of `text` from character `offset` with at most `max_tokens` tokens."""
    if offset < 0 or (offset >= len(text) and offset != 0):
        last = max(len(text) - 1, 0)
        raise InvalidArgumentError(
            f"offset {offset} is past the end: the result has {len(text):,} characters (offsets 0 to {last}); "
            "start at 0 or at the next_offset of the page before"
        )
    if max_tokens <= 0:
        raise InvalidArgumentError(f"max_tokens must be at least 1, not {max_tokens}")
    span = max_tokens * _FIRST_GUESS
    while True:
        piece = text[offset : offset + span]
        data = piece.encode("utf-8")
        index = index_tokens(data)
        if index.tokens > max_tokens:
            piece = _fit(data, index.offsets, max_tokens)
            break
        if offset + span >= len(text):
            break
        span *= 2
    end = offset + len(piece)
    return Page(text=piece, offset=offset, next_offset=end if end < len(text) else None)


def _fit(data: bytes, offsets: Offsets, max_tokens: int) -> str:
    """The longest prefix that ends where a token starts and counts at most `max_tokens` on its own. A token
    that starts inside a character starts at the next one, so the prefix at `offsets[max_tokens]` can count a
    token or two more (emoji are several tokens each): step back until it fits, but keep one character."""
    for k in range(max_tokens, 0, -1):
        piece = data[: int(offsets[k])].decode("utf-8")
        if count_tokens(piece) <= max_tokens:
            return piece
    first = data[: int(offsets[1])].decode("utf-8")
    return first or data.decode("utf-8")[:1]
