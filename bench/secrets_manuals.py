"""The ninth split's source for `bench.secrets_precision`: the machine's manual pages (`/usr/share/man/man*`, the
English ones), none of them in an earlier part.

A page is read as the words `man` shows: the troff source decompressed, its comments dropped, its font and size
changes dropped, `\\-` read as `-` and the named quote and dash characters (and pod2man's strings for them, `\\*(Aq`)
as the characters they name. Its
requests (`.TP`, `.B …`) stay: what matters is the text an option's description and a page's examples hold, the
text a tool returning a manual gives. A unit is one page, by its section and name (`man1/git-config.1`).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MANUALS = Path("/usr/share/man")

_COMMENT = re.compile(r'^\.\\".*$|^\'\\".*$|\\".*$', re.MULTILINE)
_FONT = re.compile(r"\\f(?:\[[^\]]*\]|\([A-Za-z]{2}|[A-Za-z0-9])|\\s[+-]?\d|\\&|\\%|\\:")
_NAMED = {
    r"\-": "-", r"\(aq": "'", r"\(dq": '"', r"\(lq": '"', r"\(rq": '"', r"\(oq": "'", r"\(cq": "'", r"\(em": "--",
    r"\(en": "-", r"\(hy": "-", r"\e": "\\", r"\(ti": "~", r"\(ha": "^", r"\(ga": "`", r"\ ": " ", r"\~": " ",
    r"\*(Aq": "'", r'\*(L"': '"', r'\*(R"': '"', r"\*(C+": "C++", r"\*(--": "--",  # pod2man's strings
}  # fmt: skip
_NAMED_RE = re.compile("|".join(re.escape(name) for name in sorted(_NAMED, key=len, reverse=True)))


@dataclass(frozen=True, slots=True)
class Page:
    name: str  # `man1/git-config.1`
    version: str  # the SHA-256 of its compressed file
    path: Path
    size: int  # the compressed file's bytes


def words_of(troff: str) -> str:
    """The page's text as `man` shows its words (see the module's docstring)."""
    text = _COMMENT.sub("", troff)
    text = _FONT.sub("", text)
    return _NAMED_RE.sub(lambda found: _NAMED[found.group()], text)


@cache
def pages() -> tuple[Page, ...]:
    """Every English manual page on this machine, by name; a link to another page is its target's, so left out."""
    found: list[Page] = []
    for section in sorted(MANUALS.glob("man[1-9]")):
        for path in sorted(section.glob("*.gz")):
            if path.is_symlink():
                continue
            data = path.read_bytes()
            name = f"{section.name}/{path.name.removesuffix('.gz')}"
            found.append(Page(name, f"sha256:{hashlib.sha256(data).hexdigest()[:16]}", path, len(data)))
    return tuple(found)


def read(path: Path) -> str:
    return words_of(gzip.decompress(path.read_bytes()).decode("utf-8"))
