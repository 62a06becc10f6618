"""The config's messages: the place of a key (`file:line: dotted.path`), a value shown without its secret, the
closest of the allowed words, pydantic's errors in plain words. Shared by the models and the parsing."""

from __future__ import annotations

import difflib
import json
import re
import typing
from collections.abc import Mapping
from typing import Any

from offprompt.config.variables import Loc


def place(source: str, lines: Mapping[Loc, int], loc: Loc) -> str:
    """`file:line: dotted.path`; the line of the deepest part of the path that is in the file."""
    line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
    where = source if line is None else f"{source}:{line}"
    return f"{where}: {dotted(loc)}" if loc else where


def dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            shown = part if re.fullmatch(r"[A-Za-z0-9_$-]+", part) else json.dumps(part)
            out += f".{shown}" if out else shown
    return out


def kind_of(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def show(value: object) -> str:
    if isinstance(value, dict | list):
        return kind_of(value)
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:57] + '..."'


def suggest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The choice `word` is most likely a typo of, ignoring case."""
    by_lower = {choice.lower(): choice for choice in choices}
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.7)
    return by_lower[found[0]] if found else None


_FRIENDLY = {
    "dict_type": "should be an object",
    "list_type": "should be a list",
    "string_type": "should be a string",
    "int_type": "should be a whole number",
    "int_parsing": "should be a whole number",
    "int_from_float": "should be a whole number",
    "float_type": "should be a number",
    "float_parsing": "should be a number",
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
}


def pydantic_message(error: Any) -> str:
    text = _FRIENDLY.get(error["type"]) or str(error["msg"])
    text = text.removeprefix("Value error, ").removeprefix("Input ")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
