"""Code: classes, functions and methods, nested, each with the first sentence of its docstring if short.

A definition is found by its first line (``def``, ``class``, ``function``, a method signature ending in ``{``,
a function assigned to a name) and ends before the next line indented no deeper that is not a closing
bracket, so a closing brace at its own indentation (or a multi-line signature's ``):``) stays in it. Lines
inside multi-line strings and block comments are never taken for a definition or its end. Everything runs
as regular expressions over the whole text, and per definition, not per line: 1 MB of code in tens of ms.
"""

from __future__ import annotations

import bisect
import re
from functools import cache

import numpy as np

from offprompt.memory.outline.entries import Found, title

_CLASS = re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?(?:class|struct|interface|impl|trait)\s+\w")
_FUNCTION = re.compile(
    r"""^\s*(?:
        (?:async\s+)?def\s+\w
      | (?:export\s+)?(?:default\s+)?(?:async\s+)?function\b\s*\*?\s*[\w$]*\s*\(
      | (?:pub(?:\([\w\s]+\))?\s+)?(?:async\s+)?fn\s+\w
      | func\s+(?:\([^)]*\)\s*)?\w
      | (?:export\s+)?(?:const|let|var)\s+[\w$]+\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[\w$]+\s*=>)
      | [\w$.]+\s*=\s*(?:async\s+)?function\b
    )""",
    re.VERBOSE,
)
#: A method in a class body of a brace language: ``name(args) {``, maybe static, async, get or set.
_METHOD = re.compile(
    r"^\s*(?:(?:static|async|get|set|public|private|protected|override|readonly)\s+)*\*?#?[\w$]+\s*\([^;]*\)\s*"
    r"(?::\s*[^{;=]+)?\{\s*$"
)
_NOT_METHOD = re.compile(r"^\s*(?:if|for|while|switch|catch|with|return|else|do|try|function)\b")
#: Lines that may start a definition, found in a few passes that each start at a literal character (fast in
#: ``re``); the patterns above are tried on these lines only.
_CANDIDATES = (
    re.compile(
        r"\n[ \t]*(?=[a-z])(?:(?:export|default|abstract|async|pub|static|get|set|public|private|protected|override"
        r"|readonly|class|struct|interface|impl|trait|def|function|fn|func|const|let|var)\b)"
    ),
    re.compile(r"\)[ \t]*(?::[^\n{;=]*)?\{[ \t]*(?=\n)"),  # a method's signature ends the line
    re.compile(r"=[ \t]*(?:async[ \t]+)?function\b"),  # a function assigned to a name
)
#: What may open a string or comment that spans lines; the rest of a line decides whether it really does.
_OPENER = re.compile(r'"""|\'\'\'|/\*|`')
_CLOSER_OF = {'"""': '"""', "'''": "'''", "/*": "*/", "`": "`"}
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_DOCSTRING = re.compile(r"^\s*[rRbBuU]?(?:\"\"\"|''')")
_DOC_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*)")
_DOC_MARKUP = re.compile(r"^\s*(?:/\*\*?|\*/?|//+|#+|[rRbBuU]?\"\"\"|[rRbBuU]?\'\'\')|(?:\*/|\"\"\"|\'\'\')\s*$")
_SIGNATURE_END = re.compile(r"(?::|\{|=>\s*\{?)\s*(?:#.*|//.*)?$")
MAX_SUMMARY_CHARS = 80


@cache
def _end_pattern(indent: int) -> re.Pattern[str]:
    """The line break before the next line indented at most ``indent`` that is not a closing bracket, or
    before one indented less (a literal first character keeps the search fast)."""
    closer = rf"|[ \t]{{0,{indent - 1}}}[)\]}}]" if indent else ""
    return re.compile(rf"\n(?:[ \t]{{0,{indent}}}(?![\s)\]}}]){closer})")


class _Text:
    def __init__(self, text: str) -> None:
        self.text = text
        codes = (
            np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            if text.isascii()
            else np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        )
        starts = np.concatenate(([0], np.flatnonzero(codes == 10) + 1)).astype(np.int64)
        self.starts: list[int] = starts.tolist()
        self.count = len(self.starts)
        inside = np.zeros(self.count + 1, dtype=np.int64)
        spans = _multiline_literals(text)
        if spans:
            firsts, lasts = np.searchsorted(starts, np.asarray(spans, dtype=np.int64), side="right").T - 1
            np.add.at(inside, firsts + 1, 1)
            np.add.at(inside, lasts + 1, -1)
        self.continued: list[bool] = (np.cumsum(inside)[: self.count] > 0).tolist()

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos) - 1

    def line(self, i: int) -> str:
        end = self.starts[i + 1] - 1 if i + 1 < self.count else len(self.text)
        return self.text[self.starts[i] : end]

    def blank(self, i: int) -> bool:
        return not self.line(i).strip()


def _multiline_literals(text: str) -> list[tuple[int, int]]:
    """(first, last character) of each string or block comment that spans lines: triple-quoted strings, block
    comments, template literals. An opener inside a one-line string or after a line comment is skipped."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := _OPENER.search(text, pos)) is not None:
        at, token = m.start(), m.group()
        before = _QUOTED.sub("", text[text.rfind("\n", 0, at) + 1 : at])
        if "//" in before or "#" in before or before.count('"') % 2 or before.count("'") % 2:
            pos = m.end()
            continue
        closer = _CLOSER_OF[token]
        end = text.find(closer, m.end())
        while token == "`" and end > 0 and text[end - 1] == "\\":
            end = text.find(closer, end + 1)  # an escaped backtick
        end = len(text) if end == -1 else end + len(closer)
        if text.find("\n", at, end) != -1:
            spans.append((at, end - 1))
        pos = end
    return spans


def outline(text: str) -> list[Found]:
    """The definitions of a source text, in order, each with its depth of nesting."""
    t = _Text(text)
    found: list[Found] = []
    stack: list[tuple[int, bool]] = []  # (last line, is a class) of the open definitions
    text_nl = "\n" + text  # the first line starts after a line break too
    # A keyword match starts at the line break before its line; the others inside their line.
    positions = [m.start() + (k == 0) - 1 for k, pattern in enumerate(_CANDIDATES) for m in pattern.finditer(text_nl)]
    for i in sorted({t.line_of(p) for p in positions}):
        if t.continued[i]:
            continue
        line = t.line(i)
        while stack and stack[-1][0] < i:
            stack.pop()
        kind = _kind(line, bool(stack) and stack[-1][1])
        if kind is None:
            continue
        last = _last_line(t, i, line)
        found.append(Found(_title(t, i, line), kind, len(stack), t.starts[i], _end(t, last)))
        stack.append((last, kind == "class"))
    return found


def _kind(line: str, in_class: bool) -> str | None:
    if _CLASS.match(line):
        return "class"
    if _FUNCTION.match(line):
        return "method" if in_class else "function"
    if in_class and _METHOD.match(line) and not _NOT_METHOD.match(line):
        return "method"
    return None


def _last_line(t: _Text, i: int, line: str) -> int:
    body = line[: len(line) - len(line.lstrip(" \t"))]
    pattern = _end_pattern(len(body) + 3 * body.count("\t"))
    pos = t.starts[i + 1] - 1 if i + 1 < t.count else len(t.text)
    while True:
        m = pattern.search(t.text, pos)
        if m is None:
            end = t.count
            break
        end = t.line_of(m.start() + 1)
        if not t.continued[end]:
            break
        pos = t.starts[end + 1] - 1 if end + 1 < t.count else len(t.text)
    last = end - 1
    while last > i and t.blank(last):
        last -= 1
    return last


def _end(t: _Text, last: int) -> int:
    return t.starts[last + 1] if last + 1 < t.count else len(t.text)


def _title(t: _Text, i: int, line: str) -> str:
    signature = " ".join(line.split()).rstrip("{").rstrip()
    summary = _summary(t, i)
    return title(f"{signature} — {summary}" if summary else signature)


def _summary(t: _Text, i: int) -> str:
    """The first sentence of the doc comment right above line ``i``, or of the docstring opening its body."""
    k = i - 1
    while k >= 0 and t.line(k).lstrip().startswith("@"):
        k -= 1  # decorators
    if k > 0 and t.blank(k):
        k -= 1  # a doc comment a blank line above
    above: list[int] = []
    if k >= 0 and t.line(k).rstrip().endswith("*/"):
        opener = t.text.rfind("/*", 0, t.starts[k] + len(t.line(k)))
        first = t.line_of(opener) if opener != -1 else k
        above = list(range(first, min(first + 8, k + 1)))  # a block comment: its first lines hold the summary
    else:
        while k >= 0 and _DOC_COMMENT.match(t.line(k)) and len(above) < 40:
            above.append(k)
            k -= 1
        above = above[::-1][:8]
    if above:
        return _sentence([t.line(j) for j in above])
    end = i
    while end < min(i + 12, t.count - 1) and not _SIGNATURE_END.search(t.line(end).rstrip()):
        end += 1  # a signature over several lines
    k = end + 1
    while k < t.count and t.blank(k):
        k += 1
    if k < t.count and _DOCSTRING.match(t.line(k)):
        return _sentence([t.line(j) for j in range(k, min(k + 6, t.count))])
    return ""


def _sentence(lines: list[str]) -> str:
    words: list[str] = []
    for line in lines:
        text = _DOC_MARKUP.sub(" ", line).strip()
        if text.startswith("@"):
            break  # JSDoc tags follow the summary
        words.extend(text.split())
        joined = " ".join(words)
        if re.search(r"[.!?](?:\s|$)", joined):
            return title(re.split(r"(?<=[.!?])\s", joined, maxsplit=1)[0], MAX_SUMMARY_CHARS)
        if line.rstrip().endswith(('"""', "'''", "*/")) and words:
            break
    return title(" ".join(words), MAX_SUMMARY_CHARS)
