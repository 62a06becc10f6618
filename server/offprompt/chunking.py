"""Cut a stored text into search chunks along its own structure.

What the text is decides where it is cut (:func:`detect`):

- **JSON**: along records (object members, array elements). A record too big
  for one chunk is cut along its own members, and each of those chunks carries
  the record's path (``shapes > SendMessageRequest > members``) as context.
- **code**: along definitions. A block is a line at the enclosing indentation
  with everything indented under it, plus the comments and decorators right
  above it, so a function with its docstring stays whole where it fits. A
  definition too big is cut along its body's blocks, under its signature.
- **prose** (Markdown, reStructuredText, plain text): into sections at the
  headings, then paragraphs (a paragraph keeps the indented block under it, as
  a reST directive keeps its body), then lines. Chunks carry the heading path.
- **logs**: along blank-line blocks, then lines.

Small neighbouring units share a chunk up to ``target`` wordpieces. No chunk
is longer than the embedding model reads (:data:`MAX_TEXT_WORDPIECES`,
context included); a unit with no structure left inside that is still too
long (a very long line, a JSON string) is cut into overlapping windows.

A chunk is a byte span of the stored text plus its ``context``; the context
is prepended only where the chunk is embedded and indexed, so a hit's offset
points exactly into what ``memory_load`` reads. Together the chunks cover
every non-blank byte of the text.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["TARGET_WORDPIECES", "Chunk", "Shape", "chunk", "detect"]

#: Neighbouring small units are packed together up to this many wordpieces, by what the text is. A JSON record
#: and a log line are answers on their own: their chunks stay small, so a question's words are not drowned out.
TARGET_WORDPIECES: Final[dict[str, int]] = {"json": 200, "code": 200, "prose": 200, "log": 200}
#: Records (JSON objects or definitions side by side) are packed together only up to this: each is an answer on
#: its own.
RECORD_TARGET_WORDPIECES: Final = 64
#: Windows over a run of plain lines (a log) share this share of themselves with the next one.
LINE_OVERLAP: Final = 0.5
#: A chunk's context (heading path, enclosing definitions, JSON path) is kept under this.
MAX_CONTEXT_WORDPIECES: Final = 40
#: Consecutive windows of an over-long unit share about this share of a window.
WINDOW_OVERLAP: Final = 0.15

_MAX_LABEL_CHARS = 140


def count_wordpieces(texts: list[str]) -> list[int]:
    """The embedding model's wordpieces per text (imported on first use: it brings Chroma along)."""
    from offprompt.embedding import count_wordpieces as count

    return count(texts)


_MAX_SUMMARY_CHARS = 80
_MAX_TITLES_CHARS = 400
_MAX_DEPTH = 40
_SNIFF_LINES = 2000

Shape = Literal["json", "code", "prose", "log"]


def line_starts(text: str) -> list[int]:
    """Character offsets where each line starts, then the text's end (once, if it ends in a newline)."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    if starts[-1] != len(text):
        starts.append(len(text))
    return starts


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes ``[start, end)`` of the stored text.

    ``context`` says where they sit (the headings, definitions or JSON path above them) and ``titles`` names what
    they hold (the headings, signatures or JSON keys of the units inside); both are for search only.
    """

    start: int
    end: int
    context: str = ""
    titles: str = ""


# -- what the text is ---------------------------------------------------------------------------------------------

_CODE_LINE = re.compile(
    r"""^\s*(?:
        (?:async\s+)?def\s|class\s|import\s|from\s+\S+\s+import\s|return\b|raise\s|yield\b|elif\s|else\s*:|try\s*:|
        except\b|finally\s*:|with\s.*:\s*$|if\s.*:\s*$|for\s.*:\s*$|while\s.*:\s*$|
        function\b|const\s|let\s|var\s|export\s|module\.exports|require\(|\#include|\#define|
        (?:public|private|protected|static)\s|fn\s|func\s|package\s|use\s|pub\s|struct\s|impl\s|interface\s|
        //|/\*|\*/|\}|@\w
    )
    |[{;]\s*$|\)\s*:\s*$|=>\s*\{?\s*$
    |^\s*[A-Za-z_][\w.\[\]'"]*\s*[-+*/%|&]?=\s*\S   # an assignment
    |^\s*[A-Za-z_][\w.]*\(.*\)[;,]?\s*$              # a call on a line of its own""",
    re.VERBOSE,
)
_LOG_LINE = re.compile(
    r"^\s*\[?(?:\d{4}-\d\d-\d\d|\d{4}/\d\d/\d\d|\d\d?:\d\d:\d\d|[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d|\d{10})"
    r"|^\s*\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\b"
)
_CODE_EXTENSIONS = re.compile(
    r"\.(?:py|pyi|js|mjs|cjs|jsx|ts|tsx|java|kt|go|rs|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|sh|bash|lua|pl|r|sql)(?:\s|$)",
    re.IGNORECASE,
)
_PROSE_EXTENSIONS = re.compile(r"\.(?:md|markdown|rst|txt|adoc|org|html?)(?:\s|$)", re.IGNORECASE)


def detect(text: str, kind: str = "text", hint: str = "") -> Shape:
    """What the text is: JSON, code, prose or a log. ``hint`` is a file name, URI or MIME type, if known."""
    stripped = text.lstrip()
    if kind == "json" or (stripped[:1] in ("{", "[") and _parses(stripped)):
        return "json"
    if hint:
        if _CODE_EXTENSIONS.search(hint) or re.search(r"(?:javascript|typescript|python|x-c|x-java)", hint):
            return "code"
        if _PROSE_EXTENSIONS.search(hint) or "markdown" in hint:
            return "prose"
        if re.search(r"\.log(?:\s|$)", hint):
            return "log"
    lines = [line for line in text.split("\n", _SNIFF_LINES)[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return "prose"
    if sum(1 for line in lines if _LOG_LINE.match(line)) >= 0.5 * len(lines):
        return "log"
    if sum(1 for line in lines if _CODE_LINE.search(line)) >= 0.3 * len(lines):
        return "code"
    if len(lines) >= 20:
        # Machine output repeats a few line shapes (``test_x (...) ... ok``); prose and code vary their starts.
        shapes = Counter(_line_shape(line) for line in lines)
        if sum(n for _, n in shapes.most_common(3)) >= 0.6 * len(lines):
            return "log"
    return "prose"


def _line_shape(line: str) -> str:
    """A line's first word with its digits and the tail after a separator dropped: ``test_overflow`` -> ``test``."""
    word = line.split(None, 1)[0] if line.strip() else ""
    return re.sub(r"[0-9]+", "0", re.split(r"(?<=.)[_.:(\[-]", word, maxsplit=1)[0])[:12]


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# -- the tree of units ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    """A unit of the text, characters ``[start, end)``; ``expand`` gives its parts when it is too big."""

    start: int
    end: int
    label: str = ""
    expand: Callable[[], list[_Node]] | None = None
    lead: bool = False  # introduces the sibling after it (a signature, a heading): packed forward, not back
    line: bool = False  # a single line of a run with no structure left
    record: bool = False  # one of many records alike (JSON objects side by side): a chunk of its own


def _label(line: str, limit: int = 80) -> str:
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


_DOCSTRING = re.compile(r"^\s*[rRbBuU]?(?:\"\"\"|\'\'\')")
_DOC_MARKUP = re.compile(r"^\s*(?:/\*\*?|\*/?|//+|#+|[rRbBuU]?\"\"\"|[rRbBuU]?\'\'\')|(?:\*/|\"\"\"|\'\'\')\s*$")


_CLOSER = re.compile(r"^\s*(?:[)\]}]|else\b|elif\b|except\b|finally\b|catch\b|end\b)")
_DEFINITION = re.compile(
    r"^\s*(?:(?:async\s+)?def\s|class\s|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\b|"
    r"(?:public|private|protected|static|override|abstract)\s|fn\s|func\s|impl\s|struct\s|interface\s)"
)
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|@)")
_ATX_HEADING = re.compile(r"^(#{1,6})\s+(\S.*?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#:._])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


_DEEP = 1 << 20
_CODE_TOKEN = re.compile(r"\\.|\"\"\"|'''|`|\"|'|#|//|/\*|\*/|\n", re.DOTALL)


def _continued_lines(text: str, starts: list[int]) -> dict[int, bool]:
    """Lines that begin inside a multi-line string (value False) or block comment (value True)."""
    inside: dict[int, bool] = {}
    state = ""  # "", or the token that opened the string or comment being read
    line = 0
    for match in _CODE_TOKEN.finditer(text):
        token = match.group()
        if token == "\n" or token == "\\\n":
            line += 1
            if token == "\n" and state in ('"', "'", "#", "//"):
                state = ""  # single-line strings and line comments end with their line
            elif state:
                inside[line] = state == "/*"
        elif token[0] == "\\" or (state and token != state and not (state == "/*" and token == "*/")):
            continue  # an escape, or another quote inside a string or comment
        elif not state:
            if token != "*/":
                state = token
        else:
            state = ""
    return {i: c for i, c in inside.items() if i < len(starts) - 1}


def _indent(line: str) -> int:
    """Columns of leading whitespace, a tab counting four."""
    body = line.lstrip(" \t")
    lead = line[: len(line) - len(body)]
    return len(lead) + 3 * lead.count("\t")


class _Lines:
    """A text's lines, their indentation, and the blocks they form."""

    def __init__(self, text: str, shape: Shape) -> None:
        self.text = text
        self.code = shape == "code"
        self.starts: list[int] = line_starts(text)
        self.count = len(self.starts) - 1
        self.lines = [text[self.starts[i] : self.starts[i + 1]] for i in range(self.count)]
        self.blank = [not line.strip() for line in self.lines]
        self.indent = [_indent(line) for line in self.lines]
        self.comment = [self.code and bool(_COMMENT.match(line)) for line in self.lines]
        self.continued = [False] * self.count
        if self.code:
            # A line inside a multi-line string or comment belongs to the statement that opened it, whatever its
            # indentation: a docstring or template literal at column 0 must not look like the end of a block.
            for i, in_comment in _continued_lines(text, self.starts).items():
                self.indent[i] = _DEEP
                self.comment[i] = in_comment
                self.continued[i] = True

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        return self.starts[lo], self.starts[hi]

    # Prose: sections at headings.

    def headings(self) -> list[tuple[int, int, int, str]]:
        """(first line, lines, level, title) of each heading; levels count from 1 in order of first use."""
        styles: dict[str, int] = {}
        found: list[tuple[int, int, int, str]] = []
        fenced = False
        i = 0
        while i < self.count:
            line = self.lines[i].rstrip("\r\n")
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced:
                atx = _ATX_HEADING.match(line)
                nxt = self.lines[i + 1].rstrip("\r\n") if i + 1 < self.count else ""
                if atx:
                    found.append((i, 1, styles.setdefault("#" * len(atx.group(1)), len(styles) + 1), atx.group(2)))
                elif (
                    line.strip()
                    and not line[0].isspace()
                    and _UNDERLINE.match(nxt)
                    and len(nxt.rstrip()) >= min(len(line.rstrip()), 3)
                    and not _UNDERLINE.match(line)
                ):
                    over = i > 0 and self.lines[i - 1].rstrip("\r\n") == nxt
                    style = ("over" if over else "") + nxt[0]
                    first = i - 1 if over else i
                    found.append((first, i + 2 - first, styles.setdefault(style, len(styles) + 1), line.strip()))
                    i += 2
                    continue
            i += 1
        return found

    def sections(self, lo: int, hi: int, heads: list[tuple[int, int, int, str]], depth: int = 0) -> list[_Node]:
        inside = [h for h in heads if lo <= h[0] < hi]
        if not inside or depth > _MAX_DEPTH:
            return self.blocks(lo, hi, depth)
        top = min(h[2] for h in inside)
        starts = [h for h in inside if h[2] == top]
        nodes: list[_Node] = []
        if starts[0][0] > lo:
            nodes.extend(self.blocks(lo, starts[0][0], depth))
        for k, (first, size, _, title) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else hi
            a, b = self.span(first, end)

            def expand(first: int = first, size: int = size, end: int = end) -> list[_Node]:
                head = self.leaf(first, min(first + size, end))
                head.lead = True
                return [head, *self.sections(first + size, end, heads, depth + 1)] if first + size < end else [head]

            # Sections side by side are records: a chunk holds one, unless they are tiny.
            nodes.append(_Node(a, b, _label(title, _MAX_LABEL_CHARS), expand, record=len(starts) >= 2))
        return nodes

    # Code, paragraphs, logs: indentation blocks.

    def units(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Line ranges that start at the range's shallowest indentation and hold what is indented under them."""
        nonblank = [i for i in range(lo, hi) if not self.blank[i]]
        if not nonblank:
            return [(lo, hi)]
        base = min(self.indent[i] for i in nonblank)
        starts = [lo]
        prev: int | None = None
        saw_blank = False
        for i in range(lo, hi):
            if self.blank[i]:
                saw_blank = True
                continue
            if prev is not None and self.indent[i] <= base and not _CLOSER.match(self.lines[i]):
                after_body = self.indent[prev] > base and not self.comment[prev]
                definition = self.code and bool(_DEFINITION.match(self.lines[i]))
                comment_starts = self.comment[i] and not self.comment[prev]
                if saw_blank or after_body or definition or comment_starts:
                    starts.append(i)
            prev, saw_blank = i, False
        # Comments and decorators belong to what follows them.
        kept = [starts[0]]
        for k in range(1, len(starts)):
            a, b = kept[-1], starts[k]
            if self.code and all(self.blank[i] or self.comment[i] for i in range(a, b)):
                continue
            kept.append(b)
        if len(kept) > 1 and self.code and all(self.blank[i] or self.comment[i] for i in range(kept[-1], hi)):
            kept.pop()  # trailing comments stay with the block above them
        return [(kept[k], kept[k + 1] if k + 1 < len(kept) else hi) for k in range(len(kept))]

    def blocks(self, lo: int, hi: int, depth: int = 0) -> list[_Node]:
        units = self.units(lo, hi)
        if len(units) == 1:
            return self.parts(lo, hi, depth)
        nodes = [self.block(a, b, depth) for a, b in units]
        # Definitions side by side (a class's methods, reST directives) are records: each an answer of its own.
        if len(nodes) >= 3 and sum(1 for n in nodes if n.label) >= 0.8 * len(nodes):
            for node in nodes:
                node.record = True
        return nodes

    def block(self, lo: int, hi: int, depth: int) -> _Node:
        a, b = self.span(lo, hi)
        return _Node(a, b, self.head(lo, hi), lambda: self.parts(lo, hi, depth + 1))

    def head(self, lo: int, hi: int) -> str:
        """A block's label: the line its body hangs from (a signature, a directive) with the first sentence of its
        docstring or doc comment; none for a block with nothing indented under it (a paragraph, a run of lines)."""
        nonblank = [i for i in range(lo, hi) if not self.blank[i]]
        found = self.signature(nonblank)
        if found is None:
            return ""
        signature, k = found
        summary = self.summary([i for i in nonblank[:k] if i < signature], nonblank[k:])
        line = " ".join(self.lines[signature].split())
        return _label(f"{line} — {summary}" if summary else line, _MAX_LABEL_CHARS)

    def signature(self, nonblank: list[int]) -> tuple[int, int] | None:
        """The line a block's body hangs from, and where in ``nonblank`` the body starts; None if it has none."""
        if not nonblank:
            return None
        base = min(self.indent[i] for i in nonblank)
        signature = None
        for k, i in enumerate(nonblank):
            if self.indent[i] > base and not self.comment[i] and not self.continued[i]:
                return None if signature is None else (signature, k)
            if self.indent[i] <= base and not self.comment[i]:
                signature = i
        return None

    def summary(self, above: list[int], body: list[int]) -> str:
        """The first sentence of a doc comment above a signature, or of the docstring opening its body."""
        if not self.code:
            return ""
        comment = [i for i in above if self.comment[i]]
        comment = comment[: next((k for k, i in enumerate(comment) if k and i != comment[k - 1] + 1), len(comment))]
        lines = comment if comment else [i for i in body[:6]] if _DOCSTRING.match(self.lines[body[0]]) else []
        words: list[str] = []
        for i in lines:
            text = _DOC_MARKUP.sub(" ", self.lines[i]).strip()
            if text.startswith("@") and words:
                break  # JSDoc tags follow the summary
            words.extend(text.split())
            joined = " ".join(words)
            if re.search(r"[.!?](?:\s|$)", joined):
                return _label(re.split(r"(?<=[.!?])\s", joined, maxsplit=1)[0], _MAX_SUMMARY_CHARS)
        return _label(" ".join(words), _MAX_SUMMARY_CHARS)

    def parts(self, lo: int, hi: int, depth: int) -> list[_Node]:
        """A block's parts: runs of lines at its indentation (signatures, else:, closing braces), each followed
        by the blocks indented under it; a block with nothing indented falls apart into lines."""
        nonblank = [i for i in range(lo, hi) if not self.blank[i]]
        if depth > _MAX_DEPTH or not nonblank:
            return self.line_nodes(lo, hi)
        base = min(self.indent[i] for i in nonblank)
        runs: list[tuple[int, bool]] = []  # (first line, deeper?)
        for i in nonblank:
            deeper = self.indent[i] > base
            if not runs or runs[-1][1] != deeper:
                runs.append((lo if not runs else i, deeper))
        if len(runs) == 1:
            return self.line_nodes(lo, hi)
        own = self.signature(nonblank)  # already in the context, as this block's label
        nodes: list[_Node] = []
        for k, (first, deeper) in enumerate(runs):
            end = runs[k + 1][0] if k + 1 < len(runs) else hi
            if deeper:
                above = next((i for i in range(first - 1, lo - 1, -1) if not self.blank[i]), None)
                label = "" if above is None or self.comment[above] or (own and own[0] == above) else self.lines[above]
                label = _label(label)
                a, b = self.span(first, end)
                nodes.append(_Node(a, b, label, self._blocks_of(first, end, depth + 1)))
            else:
                nodes.append(self.leaf(first, end))
                nodes[-1].lead = k + 1 < len(runs)
        return nodes

    def _blocks_of(self, lo: int, hi: int, depth: int) -> Callable[[], list[_Node]]:
        return lambda: self.blocks(lo, hi, depth)

    def leaf(self, lo: int, hi: int) -> _Node:
        a, b = self.span(lo, hi)
        return _Node(a, b, "", (lambda: self.line_nodes(lo, hi)) if hi - lo > 1 else None)

    def line_nodes(self, lo: int, hi: int) -> list[_Node]:
        """One node per line; blank lines stay with the line above them."""
        nodes: list[_Node] = []
        for i in range(lo, hi):
            a, b = self.span(i, i + 1)
            if nodes and self.blank[i]:
                nodes[-1].end = b
            else:
                nodes.append(_Node(a, b, line=True))
        return nodes


# -- JSON records ---------------------------------------------------------------------------------------------------

_WS = " \t\r\n"


class _Json:
    """Members of JSON containers as nodes that cover the container's text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()

    def members(self, start: int, end: int, value: int | None = None) -> list[_Node]:
        """Nodes covering ``text[start:end]``, one per member of the container there (or at ``value``).

        Empty when it holds a scalar or is not well-formed.
        """
        text = self.text
        pos = start if value is None else value
        while pos < end and text[pos] in _WS:
            pos += 1
        if pos >= end or text[pos] not in "[{":
            return []
        is_object = text[pos] == "{"
        pos += 1
        found: list[tuple[int, int, int, str]] = []  # (member start, value start, value end, label)
        index = 0
        try:
            while True:
                while pos < end and text[pos] in _WS + ",":
                    pos += 1
                if pos >= end or text[pos] in "]}":
                    break
                first = pos
                if is_object:
                    key, pos = self.decoder.raw_decode(text, pos)
                    while text[pos] in _WS + ":":
                        pos += 1
                    label = str(key)
                else:
                    label = f"[{index}]"
                at = pos
                _, pos = self.decoder.raw_decode(text, pos)
                found.append((first, at, pos, label))
                index += 1
        except (ValueError, IndexError):
            return []
        # Members that are mostly objects or arrays are records (a table's rows, an API's operations).
        records = len(found) >= 3 and sum(1 for _, at, _, _ in found if text[at] in "[{") >= 0.8 * len(found)
        nodes: list[_Node] = []
        for k, (first, at, _, label) in enumerate(found):
            a = start if k == 0 else first
            b = end if k + 1 == len(found) else found[k + 1][0]
            nodes.append(_Node(a, b, _label(label), self._expander(a, b, at), record=records))
        return nodes

    def _expander(self, start: int, end: int, value: int) -> Callable[[], list[_Node]] | None:
        if self.text[value] not in "[{":
            return None
        return lambda: self.members(start, end, value)


# -- packing --------------------------------------------------------------------------------------------------------


class _Measure:
    """Wordpieces of any span of a text: whole lines from one batch count, partial lines counted as asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = line_starts(text)
        counts = count_wordpieces([text[a:b] for a, b in itertools.pairwise(self.starts)])
        self.before = [0, *itertools.accumulate(counts)]  # wordpieces before each line

    def __call__(self, spans: list[tuple[int, int]]) -> list[int]:
        pieces: list[str] = []
        plans: list[tuple[int, int, int]] = []  # (piece index or -1, full-line wordpieces, piece index or -1)
        for a, b in spans:
            la = bisect.bisect_right(self.starts, a) - 1
            lb = bisect.bisect_right(self.starts, b) - 1
            if la == lb:
                plans.append((len(pieces), 0, -1))
                pieces.append(self.text[a:b])
                continue
            full_from = la if a == self.starts[la] else la + 1
            head = -1
            if full_from != la:
                head = len(pieces)
                pieces.append(self.text[a : self.starts[la + 1]])
            tail = -1
            if b != self.starts[lb]:
                tail = len(pieces)
                pieces.append(self.text[self.starts[lb] : b])
            plans.append((head, self.before[lb] - self.before[full_from], tail))
        counts = count_wordpieces(pieces)
        return [
            full + (counts[head] if head >= 0 else 0) + (counts[tail] if tail >= 0 else 0) for head, full, tail in plans
        ]


@dataclass(slots=True)
class _Piece:
    """A chunk in the making: characters ``[start, end)``, its wordpieces, and the labels above it."""

    start: int
    end: int
    size: int
    labels: tuple[str, ...]
    lead: bool = False
    target: int = 0  # how big it may grow by joining its neighbours
    titles: list[str] = field(default_factory=list)  # labels of the units packed into it


class _Packer:
    """Packs sibling units into chunks, descending into any unit too big for one."""

    def __init__(self, text: str, target: int, limit: int, overlap: float) -> None:
        self.text = text
        self.target = target
        self.limit = limit
        self.overlap = overlap
        self.measure = _Measure(text)
        self.pieces: list[_Piece] = []
        self._contexts: dict[tuple[str, ...], tuple[str, int]] = {}

    def context(self, labels: tuple[str, ...]) -> tuple[str, int]:
        """The context line for these labels and its wordpieces; the nearest labels are kept if all are too long."""
        found = self._contexts.get(labels)
        if found is None:
            kept = tuple(label for k, label in enumerate(labels) if label and (k == 0 or label != labels[k - 1]))
            found = ("", 0)
            while kept:
                context = " > ".join(kept)
                size = count_wordpieces([context])[0]
                if size <= MAX_CONTEXT_WORDPIECES:
                    found = (context, size)
                    break
                kept = kept[1:]
            self._contexts[labels] = found
        return found

    def pack(self, nodes: list[_Node], labels: tuple[str, ...] = (), depth: int = 0) -> None:
        """Greedy runs of siblings up to the target; a unit over the limit is packed from its parts."""
        limit = max(self.limit - self.context(labels)[1], 1)
        sizes = self.measure([(n.start, n.end) for n in nodes])
        if self.overlap and len(nodes) > 2 and all(n.line for n in nodes):
            self.slide(nodes, sizes, labels, limit, min(self.target, limit))
            return
        run: _Piece | None = None
        for k, (node, size) in enumerate(zip(nodes, sizes, strict=True)):
            if size > limit:
                self.add(run)
                run = None
                path, parts = labels, []
                while node.expand is not None and depth < _MAX_DEPTH:
                    parts, path = node.expand(), (*path, node.label)
                    if len(parts) != 1 or (parts[0].start, parts[0].end) != (node.start, node.end):
                        break
                    node, parts, depth = parts[0], [], depth + 1  # a wrapper around one member: go through it
                if parts:
                    self.pack(parts, path, depth + 1)
                else:
                    self.windows(node.start, node.end, labels, limit)
                continue
            target = min(RECORD_TARGET_WORDPIECES if node.record else self.target, limit)
            if run is not None:
                joined = run.size + size
                grown = min(run.target, target)
                small = grown // 4  # a unit this small joins a neighbour even past the target
                tail = size < small and k == len(nodes) - 1
                if joined <= grown or (joined <= limit and (run.size < small or tail)):
                    run.end, run.size, run.target = node.end, joined, grown
                    run.titles += [node.label] if node.label else []
                    continue
            self.add(run)
            run = _Piece(node.start, node.end, size, labels, node.lead, target, [node.label] if node.label else [])
        self.add(run)

    def slide(self, nodes: list[_Node], sizes: list[int], labels: tuple[str, ...], limit: int, target: int) -> None:
        """Windows of lines up to the target, each sharing about ``overlap`` of itself with the next: a run of lines
        has no structure left to cut along, so no line is left only at the edge of a chunk."""
        i, n = 0, len(nodes)
        while i < n:
            if sizes[i] > limit:
                self.windows(nodes[i].start, nodes[i].end, labels, limit)
                i += 1
                continue
            j, total = i, 0
            while j < n and sizes[j] <= limit and (j == i or total + sizes[j] <= target):
                total += sizes[j]
                j += 1
            self.add(_Piece(nodes[i].start, nodes[j - 1].end, total, labels, target=target))
            if j >= n or sizes[j] > limit:
                i = j
                continue
            rest, k = total, i
            while k < j - 1 and rest > self.overlap * total:
                rest -= sizes[k]
                k += 1
            i = max(k, i + 1)

    def add(self, piece: _Piece | None) -> None:
        if piece is not None and self.text[piece.start : piece.end].strip():
            self.pieces.append(piece)

    def windows(self, start: int, end: int, labels: tuple[str, ...], limit: int) -> None:
        """Overlapping windows of at most ``limit`` wordpieces over a unit with no structure left to cut along."""
        text = self.text
        chars_per_piece = (end - start) / max(count_wordpieces([text[start:end]])[0], 1)
        step = max(int(limit * chars_per_piece * 0.95), 1)
        pos = start
        while pos < end:
            cut = min(end, pos + step)
            while True:
                if cut < end:
                    cut = _soft_cut(text, pos, cut)
                size = count_wordpieces([text[pos:cut]])[0]
                if size <= limit or cut - pos <= 1:
                    break
                cut = pos + max(int((cut - pos) * 0.85), 1)
            self.add(_Piece(pos, cut, size, labels, target=self.target))
            if cut >= end:
                break
            back = _soft_cut(text, pos, cut - int((cut - pos) * WINDOW_OVERLAP))
            pos = back if pos < back < cut else cut

    def chunks(self) -> list[tuple[int, int, str, str]]:
        """The pieces in text order, each joined to the one before it where they touch and fit together:
        within the target, or within the limit when one is small (a closing line, a summary, a lone heading)."""
        merged: list[_Piece] = []
        for piece in sorted(self.pieces, key=lambda p: (p.start, p.end)):
            last = merged[-1] if merged else None
            if last is not None and last.end == piece.start and not piece.lead:
                common = _common_prefix(last.labels, piece.labels)
                size = last.size + piece.size + self.context(common)[1]
                grown = min(last.target, piece.target)
                if size <= grown or (min(last.size, piece.size) < grown // 4 and size <= self.limit):
                    # Labels the joined piece no longer sits under still name what it holds.
                    titles = [*last.titles, *last.labels[len(common) :], *piece.labels[len(common) :], *piece.titles]
                    merged[-1] = _Piece(last.start, piece.end, last.size + piece.size, common, last.lead, grown, titles)
                    continue
            merged.append(piece)
        return [
            (p.start, p.end, self.context(p.labels)[0], _label(" | ".join(dict.fromkeys(p.titles)), _MAX_TITLES_CHARS))
            for p in merged
        ]


def _soft_cut(text: str, start: int, cut: int) -> int:
    """``cut`` moved back to just after whitespace or punctuation, if there is some in the last quarter."""
    floor = start + (cut - start) * 3 // 4
    for k in range(cut, floor, -1):
        if text[k - 1].isspace():
            return k
    for k in range(cut, floor, -1):
        if not text[k - 1].isalnum():
            return k
    return cut


# -- chunking -------------------------------------------------------------------------------------------------------


def chunk(
    data: bytes,
    kind: str = "text",
    hint: str = "",
    *,
    target: int | None = None,
    limit: int | None = None,
) -> list[Chunk]:
    """Search chunks of a stored UTF-8 text of the given artifact kind, in text order.

    ``target`` (default :data:`TARGET_WORDPIECES` for the shape) is how far small units are packed together;
    ``limit`` (default: what the embedding model reads) is the most any chunk holds, context included.
    """
    from offprompt.embedding import MAX_TEXT_WORDPIECES

    text = data.decode("utf-8")
    if not text.strip():
        return []
    shape = detect(text, kind, hint)
    packer = _Packer(text, target or TARGET_WORDPIECES[shape], limit or MAX_TEXT_WORDPIECES, LINE_OVERLAP)
    roots: list[_Node] = []
    if shape == "json":
        roots = _Json(text).members(0, len(text))
    if not roots:
        lines = _Lines(text, shape)
        if shape == "prose":
            roots = lines.sections(0, lines.count, lines.headings())
        elif shape == "log":
            roots = lines.line_nodes(0, lines.count)  # a log is one run of lines, blank ones included
        else:
            roots = lines.blocks(0, lines.count)
    packer.pack(roots)
    return _to_bytes(text, data, packer.chunks())


def _to_bytes(text: str, data: bytes, spans: list[tuple[int, int, str, str]]) -> list[Chunk]:
    if len(text) == len(data):
        return [Chunk(a, b, context, titles) for a, b, context, titles in spans]
    offsets = sorted({x for a, b, _, _ in spans for x in (a, b)})
    to_byte = dict(zip(offsets, _chars_to_bytes(text, offsets), strict=True))
    return [Chunk(to_byte[a], to_byte[b], context, titles) for a, b, context, titles in spans]


def _chars_to_bytes(text: str, char_offsets: Iterable[int]) -> list[int]:
    """Byte offsets of ascending character offsets, encoding each stretch once."""
    out: list[int] = []
    last_char = last_byte = 0
    for char in char_offsets:
        last_byte += len(text[last_char:char].encode("utf-8"))
        last_char = char
        out.append(last_byte)
    return out


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


# -- what the embedding model reads ----------------------------------------------------------------------------------

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
