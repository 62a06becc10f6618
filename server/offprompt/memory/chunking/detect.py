"""What a text is: JSON, code, prose or a log, from its kind, a file name or MIME type, and its lines."""

from __future__ import annotations

import json
import re
from collections import Counter

from offprompt.memory.chunking.units import Shape

_SNIFF_LINES = 2000
_SNIFF_CHARS = 1000

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
#: A MIME type, not a word of a file name (``cpython_test.log`` is no Python).
_CODE_MIME = re.compile(
    r"(?:^|\s)(?:text|application)/(?:x-)?(?:javascript|ecmascript|typescript|python|c|csrc|c\+\+src|chdr|java|java-source)"
    r"(?:[;\s]|$)",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_ATX_HEADING = re.compile(r"^#{1,6}[ \t]+\S")
#: A list item, a link or a table row: what Markdown prose is made of besides headings.
_MARKDOWN_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])[ \t]+\S|\[[^\]\n]+\]\([^)\s]+\)|^\s*\|.*\|\s*$")


def detect(text: str, kind: str = "text", hint: str = "") -> Shape:
    """What the text is: JSON, code, prose or a log. ``hint`` is a file name, URI or MIME type, if known."""
    stripped = text.lstrip()
    if kind == "json" or (stripped[:1] in ("{", "[") and _parses(stripped)):
        return "json"
    if hint:
        if _CODE_EXTENSIONS.search(hint) or _CODE_MIME.search(hint):
            return "code"
        if _PROSE_EXTENSIONS.search(hint) or "markdown" in hint:
            return "prose"
        if re.search(r"\.log(?:\s|$)", hint):
            return "log"
    lines = [_sniffed(line) for line in text.split("\n", _SNIFF_LINES)[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return "prose"
    if _reads_as_markdown(lines):
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


def _sniffed(line: str) -> str:
    """What the rules read of a line: its start and its end, which is all they look at, so a line of megabytes
    costs what a short one does."""
    if len(line) <= _SNIFF_CHARS:
        return line
    return line[: _SNIFF_CHARS // 2] + line[-(_SNIFF_CHARS // 2) :]


def _reads_as_markdown(lines: list[str]) -> bool:
    """Headings with fences, lists, links or tables around them, and outside the fences neither mostly code nor
    mostly log lines: a README's examples do not make it code, nor its lists a log. A Python file's ``# comments``
    are no headings here: its lines outside any fence are code."""
    outside: list[str] = []
    fences = 0
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fences += 1
            fenced = not fenced
        elif not fenced:
            outside.append(line)
    headings = sum(1 for line in outside if _ATX_HEADING.match(line))
    if headings < 2 or (fences < 2 and sum(1 for line in outside if _MARKDOWN_LINE.search(line)) < 3):
        return False
    code = sum(1 for line in outside if _CODE_LINE.search(line) and not _ATX_HEADING.match(line))
    logs = sum(1 for line in outside if _LOG_LINE.match(line))
    return code < 0.3 * len(outside) and logs < 0.5 * len(outside)


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
