"""A small reader of a text's syntax around one `key = value`: whether the value is a literal of the text's kind
(a quoted string in code; a scalar in YAML, JSON, TOML, INI, `.env` and `KEY=value` lines), an expression of code
(a call, an attribute, a variable, a template's function), or a name of the text's own things (an entry's `key:`,
a name the text defines with `name:`). At the bottom of the package, so the secret detector and chunking may both
read it; it knows nothing of secrets.

A value it cannot decide is `UNKNOWN`: the reader only ever rules a value out, never in.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = [
    "EXPRESSION",
    "LITERAL",
    "NAME",
    "UNKNOWN",
    "Reading",
    "code_language",
    "defined_names",
    "is_code_shaped",
    "read_value",
]

Reading = Literal["literal", "expression", "name", "unknown"]
LITERAL: Final = "literal"
EXPRESSION: Final = "expression"
NAME: Final = "name"
UNKNOWN: Final = "unknown"

#: The first line that makes a whole text code of a language whose strings are always quoted: PHP's open tag,
#: Elixir's module, a Go/Java/Kotlin package clause, a script's interpreter line.
_CODE_MARKER = re.compile(
    r"^(?:<\?php\b|defmodule[ \t]+[A-Z][\w.]*[ \t]+do\b|package[ \t]+[a-z][\w.]*;?[ \t]*$"
    r"|#!.*\b(?:php|ruby|elixir|pwsh)\b)",
    re.MULTILINE,
)
_LANGUAGES = (("<?php", "php"), ("defmodule", "elixir"), ("package", "package"), ("#!", "script"))


def code_language(text: str) -> str:
    """The language a whole text is code of, by its first marker line ("" when none: config, a log, prose, or
    code without one, which the reader then does not call code)."""
    found = _CODE_MARKER.search(text)
    if found is None:
        return ""
    return next(name for mark, name in _LANGUAGES if found.group().startswith(mark))


#: A bare value that can only be code: an instance variable's attribute (`@user.password`), PowerShell's
#: hashtable or array (`@{`, `@(`), a class's constant or member (`HashCaster::class`), an Erlang module's call
#: (`:crypto.hash(`), a qualified name opening a call or a literal (`socks5.StaticCredentials{`), a template's
#: tag inside the value (`valid_<%= schema %>`).
_CODE_VALUE = re.compile(
    r"^@(?:[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+$|[{(])|^[A-Z]\w*::[A-Za-z_]\w*$|^:[a-z_]\w*\.\w|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+[({]|<%|\{\{"
)


def is_code_shaped(value: str) -> bool:
    """A value only code writes, however random its letters look (`socks5.StaticCredentials{`)."""
    return _CODE_VALUE.search(value) is not None


#: A number, which code writes bare as config does.
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
#: An open template action before the key on its line (`{{- $rootPassword := randAlphaNum 16 }}`).
_TEMPLATE_OPEN = re.compile(r"\{\{(?!.*\}\})")
#: What follows an entry's `key:` value when the entry's `value` sits beside it: `, "value":` or the next line's.
_SIBLING_VALUE = re.compile(r"""\\?["']?[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\\?["']?value\\?["']?[ \t]*:""")
#: A name a text gives one of its things: a `name:` line's value (a Kubernetes object's, a list entry's).
_NAME_LINE = re.compile(r"""^[ \t]*(?:-[ \t]+)?name:[ \t]*["']?([\w.-]{3,253})["']?[ \t]*$""", re.MULTILINE)


def defined_names(text: str) -> frozenset[str]:
    """The names a text gives its own things with `name:` lines (read once per text)."""
    return frozenset(_NAME_LINE.findall(text))


def read_value(
    text: str,
    key: str,
    key_start: int,
    span: tuple[int, int],
    *,
    quoted: bool,
    code: str = "",
    names: frozenset[str] = frozenset(),
) -> Reading:
    """What the value `text[span[0]:span[1]]` of `key` (at `key_start`) is: a literal, code's expression, a name
    of the text's own things, or unknown. `quoted`: it was read between quotes; `code`: the text's language by
    `code_language` ("" when it is no code the reader knows); `names`: the text's `defined_names`."""
    value_start, value_end = span
    value = text[value_start:value_end]
    line_start = text.rfind("\n", 0, key_start) + 1
    before_key = text[line_start:key_start]
    operator = text[key_start + len(key) : value_start]
    if key.lower() == "key" and _names_an_entry(text, before_key, value_end):
        return NAME
    if not quoted and _NUMBER.fullmatch(value) is None and _is_expression(value, before_key, operator, code):
        return EXPRESSION
    if not quoted and text[value_end : value_end + 2] in ("<%", "{{"):
        return EXPRESSION  # a template's tag goes on (`password: valid_<%= schema.singular %>_password()`)
    if value in names or (not quoted and _colon_word(text, before_key, value_start, value_end)):
        return NAME
    return LITERAL if quoted or not code else UNKNOWN


#: A value of words, as a command's or a reference's parts are (`edit`, `tls:ca`, `my-secret:clientId`).
_WORDY = re.compile(r"[A-Za-z][A-Za-z_:-]*\d{0,2}")


def _colon_word(text: str, before_key: str, value_start: int, value_end: int) -> bool:
    """`key:value` with no space after the colon, which YAML does not read as a mapping: a command's word
    (`bin/rails credentials:edit`) or a chain of them (a generator's `password:string:redact`)."""
    if text[value_start - 1 : value_start] != ":" or text[value_start - 2 : value_start - 1] in ("", " ", "\t"):
        return False
    if _WORDY.fullmatch(text[value_start:value_end].rstrip("`")) is None:
        return False  # `vault:secret:Xk92jd0q!x`: a generated value in a chain stays a value
    if text[value_end : value_end + 1] == ":" or re.search(r"\w:$", before_key):
        return True  # a chain: `password:string:redact`, `urn:k8s:secret:tls:ca`
    words = before_key.split()
    return bool(words) and before_key[-1:] in (" ", "\t", "`") and not any(c in words[-1] for c in ":=")


#: The start of a `KEY=value` line of an environment or a shell (`export DB_PASSWORD=…`): no code writes one.
_ENV_LINE = re.compile(r"[ \t]*(?:export[ \t]+)?")


def _is_expression(value: str, before_key: str, operator: str, code: str) -> bool:
    """A bare value that only code writes: any in a text of code but on a `KEY=value` line (a log that prints
    code and then the environment), a variable's assignment (`$Password = New-Object`), a value inside a
    template's action, or a value of code's own shape."""
    return (
        (bool(code) and not (operator == "=" and _ENV_LINE.fullmatch(before_key)))
        or before_key.endswith("$")
        or _TEMPLATE_OPEN.search(before_key) is not None
        or _CODE_VALUE.search(value) is not None
    )


def _names_an_entry(text: str, before_key: str, value_end: int) -> bool:
    """An entry's `key:` names the entry: a list item's (`- key: hostvar0`), or one whose `value` is beside it."""
    closing = text[value_end : value_end + 2].lstrip("\\")[:1] in ('"', "'")
    at = value_end + (2 if text[value_end : value_end + 1] == "\\" else 1) if closing else value_end
    return before_key.lstrip().startswith("- ") or _SIBLING_VALUE.match(text, at) is not None
