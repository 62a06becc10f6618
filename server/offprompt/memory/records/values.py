"""A field's text as a typed value: integers and decimals as numbers, sizes such as `1.5G` as bytes, the rest as
written, an empty cell as null."""

from __future__ import annotations

import re
from typing import Final

from offprompt.memory.records.base import Value

_INT: Final = re.compile(r"[+-]?(?:0|[1-9]\d*)")
_GROUPED: Final = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+")
_FLOAT: Final = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?")
_PERCENT: Final = re.compile(r"([+-]?\d+(?:\.\d+)?)%")
#: `ls -lh`, `du -h`, `docker ps --size`: K/M/G/T/P, in powers of 1024 unless written as kB/MB/GB (powers of 1000).
_SIZE: Final = re.compile(r"(\d+(?:\.\d+)?)\s?([kKMGTP])(i?B)?")
_POWERS: Final = {"k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def typed(text: str) -> Value:
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
