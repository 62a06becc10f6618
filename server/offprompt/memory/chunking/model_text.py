"""A chunk as the embedding model reads it."""

from __future__ import annotations

import re

_ESCAPES = re.compile(r"\\[nrt]")
_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,80}>")
_IDENTIFIER = re.compile(
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*"
)
#: A run of word characters, matched without backtracking: `_IDENTIFIER` runs inside one run at a time.
_RUN = re.compile(r"[A-Za-z0-9_]+")
#: A longer run is no identifier a model reads (base64, hex): left as it is. This bounds `_IDENTIFIER`, which
#: backtracks quadratically in a run's length, to linear time over the text.
MAX_IDENTIFIER_CHARS = 256
#: What every match of `_IDENTIFIER` holds (an underscore, or a case change inside letters): a run without it is
#: left as it is after one linear scan, never tried at each of its characters (a JSON list of 100-letter strings
#: took 10 s a megabyte to read for the model, 0.2 s now).
_PARTED = re.compile(r"_|[a-z][A-Z]|[A-Z][A-Z][a-z]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SYMBOLS = re.compile(r"[{}\[\]\"`;()=<>|*#~^$\\]+|[-=_~+.]{3,}")
_SPACES = re.compile(r"[ \t]+")
_BLANKS = re.compile(r" *\n[ \n]*")


def for_embedding(text: str) -> str:
    """The text as the embedding model should read it: identifiers in words (``_sigint_wait_secs`` -> ``sigint
    wait secs``, ``CalledProcessError`` -> ``Called Process Error``), without markup tags, escapes and runs of
    symbols. The model was trained on sentences; this reads closer to them, and is about a quarter fewer
    wordpieces (so faster to embed) for code and JSON. Lexical search indexes the text as it is.
    """
    text = _ESCAPES.sub(" ", text)
    text = _TAG.sub(" ", text)
    text = _RUN.sub(_split_identifiers, text)
    text = _SYMBOLS.sub(" ", text)
    text = _SPACES.sub(" ", text)
    return _BLANKS.sub("\n", text).strip()


def _split_identifiers(run: re.Match[str]) -> str:
    # _IDENTIFIER never matches across a non-word character, so matching it run by run finds what matching the
    # whole text finds.
    word = run.group()
    if len(word) > MAX_IDENTIFIER_CHARS or _PARTED.search(word) is None:
        return word
    return _IDENTIFIER.sub(lambda m: " ".join(_CAMEL.sub(" ", m.group().replace("_", " ")).split()), word)
