"""A field's text as a typed value: integers and decimals as numbers, sizes such as `1.5G` as bytes, the rest as
written, an empty cell as null; and a column settled as a whole (`settle_columns`): numbers only where most of its
cells are, so a Version column of `3.134` and `2.12.1+dfsg` stays text as written; and a column of versions
(named so, or holding one such as `1.2.10`, `1:2.3-4`, `17.0.8+7`) is text whatever its cells, so `3.10` is not 3.1."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

from offprompt.memory.records.base import Record, Value

_INT: Final = re.compile(r"[+-]?(?:0|[1-9]\d*)")
_GROUPED: Final = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+")
_FLOAT: Final = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?")
_PERCENT: Final = re.compile(r"([+-]?\d+(?:\.\d+)?)%")
#: `ls -lh`, `du -h`, `docker ps --size`: K/M/G/T/P, in powers of 1024 unless written as kB/MB/GB (powers of 1000).
_SIZE: Final = re.compile(r"(\d+(?:\.\d+)?)\s?([kKMGTP])(i?B)?")
_POWERS: Final = {"k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
#: A version's syntax: three dotted numbers, or dotted numbers (after an epoch `1:`) with a revision (`-4`,
#: `+dfsg`, `~bpo12`); not a date or a time.
_VERSION: Final = re.compile(
    r"v?\d+(?:\.\d+){2,}(?:[-+~]\S*)?|(?:\d+:)?\d+(?:\.\d+)+[-+~][\w.+~-]*|\d+:\d+(?:\.\d+)+|\d+:\d+[-+~][\w.+~-]*"
)
_VERSION_NAME: Final = re.compile(r"(?:^|[\W_])(?:version|ver)(?:$|[\W_])", re.IGNORECASE)


class _ReadInt(int):
    """An integer read from a cell, with the cell's text: a column that is mostly text gets the text back."""

    raw: str


class _ReadFloat(float):
    """A decimal read from a cell, with the cell's text (`3.10` stays `3.10` in a column of versions)."""

    raw: str


def _read(number: int | float, raw: str) -> int | float:
    read: _ReadInt | _ReadFloat = _ReadInt(number) if isinstance(number, int) else _ReadFloat(number)
    read.raw = raw
    return read


def typed(text: str) -> Value:
    """The cell as a number when it reads as one (see `_typed`), remembering its text for `settle_columns`."""
    value = _typed(text)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _read(value, text.strip())
    return value


def settle_columns(records: Sequence[Record]) -> list[Record]:
    """Each field typed as its column is: where fewer than half of its filled cells read as numbers, every cell is
    the text it was written as; elsewhere numbers are plain numbers (a stray `N/A` stays text)."""
    numbers: Counter[str] = Counter()
    texts: Counter[str] = Counter()
    for record in records:
        for key, value in record.items():
            if isinstance(value, _ReadInt | _ReadFloat):
                numbers[key] += 1
            elif isinstance(value, str):
                texts[key] += 1
    textual = {key for key, count in texts.items() if count >= numbers[key]}
    textual |= {key for key in numbers if _VERSION_NAME.search(key)}
    textual |= {key for record in records for key, value in record.items() if _is_version(value)}
    return [{key: _settled(value, key in textual) for key, value in record.items()} for record in records]


def _is_version(value: Value) -> bool:
    return isinstance(value, str) and not isinstance(value, _ReadInt | _ReadFloat) and bool(_VERSION.fullmatch(value))


def _settled(value: Value, as_text: bool) -> Value:
    if isinstance(value, _ReadInt):
        return value.raw if as_text else int(value)
    if isinstance(value, _ReadFloat):
        return value.raw if as_text else float(value)
    return value


def _typed(text: str) -> Value:
    """`"10"` → 10, `"2.5"` → 2.5, `"1,234"` → 1234, `"12%"` → 12, `"1.5G"` → 1610612736, `""` → None; else the
    text, stripped. A leading zero (`"007"`, a code, not a count) keeps it text."""
    value = text.strip()
    if not value:
        return None
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if _GROUPED.fullmatch(value):
        return int(value.replace(",", ""))
    if (percent := _PERCENT.fullmatch(value)) is not None:
        return _number(percent.group(1))
    if (size := _SIZE.fullmatch(value)) is not None:
        base = 1000 if size.group(3) == "B" else 1024
        return round(float(size.group(1)) * float(base ** _POWERS[size.group(2)]))
    return value


def _number(text: str) -> int | float:
    return int(text) if _INT.fullmatch(text) else float(text)


def unique_names(names: list[str], prefix: str = "column") -> list[str]:
    """Field names as given, an empty one as `column_N`, a repeated one with `_2`, `_3`… so no field hides
    another."""
    out: list[str] = []
    seen: set[str] = set()
    for n, raw in enumerate(names, start=1):
        name = raw.strip() or f"{prefix}_{n}"
        base, k = name, 2
        while name in seen or name == "line":
            name = f"{base}_{k}"
            k += 1
        seen.add(name)
        out.append(name)
    return out
