"""Markdown, reStructuredText and HTML: the heading tree."""

from __future__ import annotations

import bisect
import html
import re

from offprompt.memory.chunking.lines import heading_levels
from offprompt.memory.outline.entries import Found, title

_HTML_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_ATX = re.compile(r"\n(#{1,6})[ \t]+(\S[^\n]*)")
# An underline or rule is at most 1,000 marks: repeating a backreference is Python's `re` at its slowest, and one
# match over a line of 16 MiB of `=` held the GIL (every other call waited) for seconds.
_UNDERLINE = re.compile(r"\n(([=\-~^\"'`*+#:._])\2{2,999})[ \t]*(?=\n|$)")
_UNDERLINE_LINE = re.compile(r"([=\-~^\"'`*+#:._])\1{2,999}\s*")
_FENCE = re.compile(r"\n[ \t]*(```|~~~)")
_LOOKS_HTML = re.compile(r"<(?:html|body|div|p|h[1-6]|!doctype)\b", re.IGNORECASE)


def markdown_outline(text: str) -> list[Found]:
    """The outline of Markdown with HTML in it (a README's centred banner), if the text has at least two
    Markdown headings; else nothing (a page of HTML)."""
    headings = _ATX.finditer("\n" + text)
    if next(headings, None) is None or next(headings, None) is None:
        return []
    return text_outline(text, html=True)


def looks_html(text: str, hint: str) -> bool:
    return "html" in hint.lower() or bool(_LOOKS_HTML.search(text[:4096]))


def html_outline(text: str) -> list[Found]:
    """Each ``<h1>``-``<h6>`` with its text; a section runs to the next heading of its level or above."""
    heads = [(m.start(), int(m.group(1)), _text(m.group(2))) for m in _HTML_HEADING.finditer(text)]
    heads = [h for h in heads if h[2]]
    if not heads:
        return []
    top = min(level for _, level, _ in heads)
    return _nest([(start, level - top, name) for start, level, name in heads], len(text))


def text_outline(text: str, html: bool = False) -> list[Found]:
    """Markdown (``#``) and reST (underlined, maybe overlined) headings, outside fenced code; depth as
    the chunker reads it (:func:`~offprompt.memory.chunking.lines.heading_levels`). With ``html``, ``<h1>``-
    ``<h6>`` too, at the level of as many ``#``: a README may open with ``<h3 align="center">``."""
    body = "\n" + text  # every line starts after a line break; offsets below are into `body`
    fences = [m.start() for m in _FENCE.finditer(body) if m.group(1) == "```" or _after_blank(body, m.start())]
    heads: list[tuple[int, str, str]] = []  # (start in text, style, title)
    for m in _ATX.finditer(body):
        heads.append((m.start(), m.group(1), m.group(2).strip().rstrip("#").strip()))
    opening = set(fences)
    for m in _UNDERLINE.finditer(body):
        if m.start() in opening:
            continue  # a fence right under a line of text (``print :`` then a fence) underlines nothing
        line_start = body.rfind("\n", 0, m.start()) + 1
        name = body[line_start : m.start()]
        mark = m.group(1)
        if (
            not name.strip()
            or name[0].isspace()
            or _ATX.match("\n" + name)  # `### A. Getting it` then `----`: a heading, then a thematic break
            or _UNDERLINE_LINE.fullmatch(name)
            or len(mark) < min(len(name.rstrip()), 3)
        ):
            continue
        above = body.rfind("\n", 0, line_start - 1) + 1
        over = line_start > 0 and body[above : line_start - 1] == mark
        heads.append((above - 1 if over else line_start - 1, ("over" if over else "under") + mark[0], name.strip()))
    if html:
        heads.extend((m.start(), "#" * int(m.group(1)), _text(m.group(2))) for m in _HTML_HEADING.finditer(text))
    heads = sorted(h for h in heads if h[2] and bisect.bisect_right(fences, h[0]) % 2 == 0)
    levels = heading_levels([style for _, style, _ in heads])
    found = [(max(start, 0), levels[style], name) for start, style, name in heads]
    return _nest(found, len(text))


def _after_blank(body: str, at: int) -> bool:
    """Whether the line before the one starting after ``body[at]`` is blank: a ``~~~`` right under text is a
    reST underline, not a fence."""
    return not body[body.rfind("\n", 0, at) + 1 : at].strip()


def _nest(heads: list[tuple[int, int, str]], size: int) -> list[Found]:
    out: list[Found] = []
    for k, (start, depth, name) in enumerate(heads):
        end = next((s for s, d, _ in heads[k + 1 :] if d <= depth), size)
        out.append(Found(title(name), "heading", depth, start, end))
    return out


def _text(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())
