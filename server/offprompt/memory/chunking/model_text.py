"""A chunk as the embedding model reads it."""

from __future__ import annotations

import re

_ESCAPES = re.compile(r"\\[nrt]")
_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,80}>")
_IDENTIFIER = re.compile(
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*"
)
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
    text = _IDENTIFIER.sub(lambda m: " ".join(_CAMEL.sub(" ", m.group().replace("_", " ")).split()), text)
    text = _SYMBOLS.sub(" ", text)
    text = _SPACES.sub(" ", text)
    return _BLANKS.sub("\n", text).strip()
