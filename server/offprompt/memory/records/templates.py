"""Log lines without timestamps, by the template each line is an instance of (`npm verb …`, `npm http fetch GET 200
URL 12ms (cache miss)`, pip's `Collecting x`, `Downloading x (62 kB)`): one record per line, its `template`, its
whole `message`, and the template's variable fields as typed values.

The templates are mined from the lines as Drain does (He et al., "Drain: An Online Log Parsing Approach with Fixed
Depth Tree", ICWS 2017), with the standard library: a line is split into tokens (words, and brackets and commas on
their own); a token holding a digit or a URL is variable from the start (a number keeps its unit: `12ms` is
`<*>ms`); lines of as many tokens and the same first word (past a line's own number) are one group, and within a
group a line joins the template it shares at least half of its tokens with, whose differing tokens become `<*>`. So
`(cache miss)` and `(cache updated)` are one template with a field `cache`, and no list of npm's or pip's phrases is
needed.

A field is named by what its values are (`url`; a unit: `ms`, `kB`; `package` and `version` where every value is
`name@version` or `name@URL`) or else by the constant word before it (`cache`), else `field_N`. Numbers are numbers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from offprompt.memory.chunking.detect import detect as shape_of
from offprompt.memory.records.base import Record, Value
from offprompt.memory.records.values import typed

#: Brackets on their own, and a comma or a semicolon that ends a word (`a, b`; not `<4,>=2`).
_TOKEN: Final = re.compile(r"[()\[\]{}]|[,;](?=\s|$)|(?:[^\s()\[\]{},;]|[,;](?!\s|$))+")
_NUMBER_UNIT: Final = re.compile(r"[-+]?\d+(?:\.\d+)?(?P<unit>[A-Za-z%]{1,3})?")
_URL: Final = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
#: `name@version` (npm's `left-pad@1.3.0`, `node@v20.11.1`, a scoped `@babel/core@7.24.0`) or `name@URL`.
_AT: Final = re.compile(r"(?P<name>@?[\w.-]+(?:/[\w.-]+)?)@(?P<spec>v?\d[\w.+-]*|[a-z][a-z0-9+.-]*://\S+)")
_DIGIT: Final = re.compile(r"\d")
_TIGHT: Final = re.compile(r"([(\[{]) | ([)\]},;])")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z_-]*")
_ANY: Final = "<*>"
#: A line joins a template it shares at least this share of its tokens with (Drain's similarity threshold).
SIMILAR: Final = 0.5
#: A text is read so when at least this share of its head's lines are in templates of two lines or more.
_REPEATED: Final = 0.6
_MIN_LINES: Final = 8
#: A line is compared with the newest this many templates of its group (lines of a shape come together in a log):
#: a text of thousands of distinct lines of one length is mined in linear time.
_RECENT: Final = 16
#: Fields a template's field may not be named as.
_OWN: Final = frozenset({"line", "template", "message"})


@dataclass(slots=True)
class _Template:
    tokens: list[str]
    lines: list[int] = field(default_factory=list)

    def similarity(self, shape: Sequence[str]) -> float:
        """The share of the line's tokens this template holds as they are (its variables hold none, as in Drain)."""
        return sum(1 for a, b in zip(self.tokens, shape, strict=True) if a == b and a != _ANY) / len(shape)

    def absorb(self, shape: Sequence[str]) -> None:
        self.tokens = [a if a == b else _ANY for a, b in zip(self.tokens, shape, strict=True)]


class TemplateLogReader:
    """Lines of a log that carry no timestamp, one record each, read by their mined templates."""

    name = "log by its line templates"
    what = "lines"

    def fits(self, lines: Sequence[str]) -> bool:
        rows = [row for row in lines if row.strip()]
        if len(rows) < _MIN_LINES:
            return False
        # Lines of one template share their number of words and their first word, nearly always: prose and code,
        # whose lines seldom do, are told apart before any line is split into tokens.
        words = [row.split() for row in rows]
        keys = Counter((len(w), _lead(w)) for w in words)
        if sum(n for n in keys.values() if n >= 2) < _REPEATED * len(rows) or shape_of("\n".join(rows)) == "code":
            return False
        templates = _mine([_shape(_tokens(row)) for row in rows])
        repeated = [t for t in templates if len(t.lines) >= 2 and _WORD.match(_lead(t.tokens))]
        with_fields = any(_ANY in " ".join(t.tokens) for t in repeated)
        return with_fields and sum(len(t.lines) for t in repeated) >= _REPEATED * len(rows)

    def read(self, text: str) -> Iterator[Record]:
        rows = [(n, row) for n, row in enumerate(text.split("\n"), start=1) if row.strip()]
        tokens = [_tokens(row) for _, row in rows]
        templates = _mine([_shape(t) for t in tokens])
        of_row: dict[int, _Template] = {k: t for t in templates for k in t.lines}
        names = {id(t): _field_names(t, [tokens[k] for k in t.lines]) for t in templates}
        for k, (n, row) in enumerate(rows):
            template = of_row[k]
            record: Record = {"line": n, "template": _render(template.tokens), "message": row.strip()}
            record.update(_fields(template.tokens, tokens[k], names[id(template)]))
            yield record


def _tokens(row: str) -> list[str]:
    return _TOKEN.findall(row)


def _shape(tokens: Sequence[str]) -> list[str]:
    """Each token as a template first sees it: a number with its unit, a URL or a word holding a digit as variable."""
    out = []
    for token in tokens:
        number = _NUMBER_UNIT.fullmatch(token)
        if number is not None:
            out.append(_ANY + (number.group("unit") or ""))
        elif _DIGIT.search(token) or _URL.fullmatch(token):
            out.append(_ANY)
        else:
            out.append(token)
    return out


def _mine(shapes: Sequence[Sequence[str]]) -> list[_Template]:
    """The templates of these lines, in order of their first line; each lists its lines' indexes."""
    groups: dict[tuple[int, str], list[_Template]] = {}
    found: list[_Template] = []
    for k, shape in enumerate(shapes):
        if not shape:
            continue
        group = groups.setdefault((len(shape), _lead(shape)), [])
        best = max(group[-_RECENT:], key=lambda t: t.similarity(shape), default=None)
        if best is None or best.similarity(shape) < SIMILAR:
            best = _Template(list(shape))
            group.append(best)
            found.append(best)
        else:
            best.absorb(shape)
        best.lines.append(k)
    return found


def _lead(tokens: Sequence[str]) -> str:
    """The first word that is no number: a line's own sequence number before it (npm's debug log numbers every
    line, `12 http fetch GET 200 …`) does not decide its shape, its first word does."""
    return next((t for t in tokens if not t.startswith(_ANY) and not t.isdigit()), "")


def _render(tokens: Sequence[str]) -> str:
    """A template as text: tokens joined by spaces, none inside brackets or before a comma."""
    return _TIGHT.sub(lambda m: m.group(1) or m.group(2), " ".join(tokens))


def _variables(template: Sequence[str]) -> list[int]:
    return [k for k, token in enumerate(template) if token.startswith(_ANY)]


def _field_names(template: _Template, rows: Sequence[Sequence[str]]) -> dict[int, tuple[str, ...]]:
    """Per variable position, its field's name (two for `name@version`), by what its values are."""
    names: dict[int, tuple[str, ...]] = {}
    used: set[str] = set(_OWN)
    for k in _variables(template.tokens):
        values = [row[k] for row in rows]
        unit = template.tokens[k][len(_ANY) :]
        before = template.tokens[k - 1] if k else ""
        if all(_URL.fullmatch(v) for v in values):
            wanted: tuple[str, ...] = ("url",)
        elif all(_AT.fullmatch(v) for v in values):
            wanted = ("package", "url" if all(_URL.search(v) for v in values) else "version")
        elif unit:
            wanted = (unit,)
        elif _is_unit(template.tokens, k + 1) and all(isinstance(typed(v), int | float) for v in values):
            wanted = (template.tokens[k + 1],)  # `(62 kB)`
        elif _WORD.fullmatch(before.rstrip(":")):
            wanted = (before.rstrip(":").lower().replace("-", "_"),)
        else:
            wanted = ("field",)
        names[k] = tuple(_unused(name, used) for name in wanted)
    return names


def _is_unit(tokens: Sequence[str], k: int) -> bool:
    """Whether the token at `k` is a constant short word after a number, a unit (`kB`, `ms`, `MiB`)."""
    return k < len(tokens) and len(tokens[k]) <= 3 and tokens[k].isalpha()


def _unused(name: str, used: set[str]) -> str:
    out, n = name, 2
    while out in used:
        out = f"{name}_{n}"
        n += 1
    used.add(out)
    return out


def _fields(template: Sequence[str], tokens: Sequence[str], names: dict[int, tuple[str, ...]]) -> Record:
    out: Record = {}
    for k, name in names.items():
        value = tokens[k]
        if len(name) == 2:
            at = _AT.fullmatch(value)
            if at is not None:
                out[name[0]], out[name[1]] = at.group("name"), at.group("spec")
            continue
        unit = template[k][len(_ANY) :]
        out[name[0]] = _value(value[: -len(unit)] if unit and value.endswith(unit) else value)
    return out


def _value(text: str) -> Value:
    return typed(text)
