"""What names a JSON record among its siblings, read from the records themselves (no list of key names): the value
of their key column, the first short string member (in text order, at most two objects down) that differs in every
record, and the first phrase of a few words beside it: ``tzdata: Provider of IANA time zone data``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

#: A record's name is found among its string members this many objects deep (``metadata.name`` is two).
NAME_DEPTH = 2
#: A name is a short string holding a letter; the phrase beside it (a summary, a title) a few words on one line.
MAX_NAME_CHARS = 60
MAX_PHRASE_CHARS = 100
PHRASE_WORDS = 3
#: The key column is looked for in this many records: a million-row array is named as fast as a short one, and
#: only these are held decoded at once.
NAME_SAMPLE = 200


class RecordNames:
    """The names of an array's records, fed one decoded record at a time."""

    def __init__(self) -> None:
        self._sample: list[Any] = []
        self._key: tuple[str, ...] | None = None
        self._settled = False
        self._names: list[str] = []

    def add(self, record: Any) -> None:
        if self._settled:
            self._names.append(_name(record, self._key))
            return
        self._sample.append(record)
        if len(self._sample) == NAME_SAMPLE:
            self._settle()

    def names(self) -> list[str]:
        """One name per record added, in order; all empty when they have no key column."""
        if not self._settled:
            self._settle()
        return self._names

    def _settle(self) -> None:
        columns = [dict(_strings(r, ())) if isinstance(r, dict) else {} for r in self._sample]
        self._key = next((path for path in columns[0] if _is_key(path, columns)), None) if columns else None
        self._names = [_name(r, self._key) for r in self._sample]
        self._sample, self._settled = [], True


def names(records: Iterable[Any]) -> list[str]:
    """What names each of these records (see the module's docstring); empty for each when none tells them apart."""
    found = RecordNames()
    for record in records:
        found.add(record)
    return found.names()


def _name(record: Any, key: tuple[str, ...] | None) -> str:
    if key is None:
        return ""
    holder: Any = record
    for part in key[:-1]:
        holder = holder.get(part) if isinstance(holder, dict) else None
    name = holder.get(key[-1]) if isinstance(holder, dict) else None
    if not isinstance(name, str):
        return ""
    phrase = next((v for v in holder.values() if v is not name and _is_phrase(v)), None)
    return f"{name}: {phrase}" if phrase else name


def _strings(value: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """The short string members of an object and of the objects in it, down to `NAME_DEPTH`, in text order."""
    for key, member in value.items():
        if isinstance(member, str) and _is_name(member):
            yield (*path, key), member
        elif isinstance(member, dict) and len(path) + 1 < NAME_DEPTH:
            yield from _strings(member, (*path, key))


def _is_key(path: tuple[str, ...], sample: list[dict[tuple[str, ...], str]]) -> bool:
    seen = [row.get(path) for row in sample]
    return None not in seen and len(set(seen)) == len(seen)


def _is_name(value: str) -> bool:
    return len(value) <= MAX_NAME_CHARS and "\n" not in value and any(c.isalpha() for c in value)


def _is_phrase(value: Any) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= MAX_PHRASE_CHARS
        and "\n" not in value
        and len(value.split()) >= PHRASE_WORDS
    )
