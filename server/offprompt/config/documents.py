"""A client's settings file as a document: read as plain data, edited member by member, written back with its
comments and layout kept. JSON and JSONC by text edits, TOML with tomlkit, YAML with ruamel.yaml."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

from offprompt.config.jsonc import strip_jsonc
from offprompt.config.jsonc_edit import remove_member, set_member
from offprompt.errors import ConfigError

Syntax: TypeAlias = Literal["json", "toml", "yaml"]


class Document(Protocol):
    """One settings file's text, edited in place."""

    @property
    def text(self) -> str: ...

    def data(self) -> dict[str, Any]:
        """The whole file as plain data (dicts, lists, strings, numbers)."""
        ...

    def set(self, at: Sequence[str], name: str, value: Any) -> None:
        """Set member `name` of the table at key path `at` (made when missing)."""
        ...

    def remove(self, at: Sequence[str], name: str) -> None: ...


def _object(value: Any, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: the file holds no table of settings at its top; fix it first")
    return value


class JsoncDocument:
    def __init__(self, text: str, path: Path) -> None:
        self.text, self._path = text or "{}\n", path
        self.data()

    def data(self) -> dict[str, Any]:
        try:
            return _object(json.loads(strip_jsonc(self.text)), self._path)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{self._path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); fix it first"
            ) from None

    def set(self, at: Sequence[str], name: str, value: Any) -> None:
        self.text = set_member(self.text, at, name, value)

    def remove(self, at: Sequence[str], name: str) -> None:
        self.text = remove_member(self.text, at, name)


class TomlDocument:
    def __init__(self, text: str, path: Path) -> None:
        import tomlkit
        from tomlkit.exceptions import ParseError

        try:
            self._doc = tomlkit.parse(text)
        except ParseError as exc:
            raise ConfigError(f"{path}:{exc.line}:{exc.col}: not valid TOML; fix it first") from None

    @property
    def text(self) -> str:
        import tomlkit

        return tomlkit.dumps(self._doc)

    def data(self) -> dict[str, Any]:
        return dict(self._doc.unwrap())

    def _table(self, at: Sequence[str]) -> Any:
        import tomlkit

        table: Any = self._doc
        for key in at:
            if key not in table:
                table[key] = tomlkit.table(is_super_table=True)
            table = table[key]
        return table

    def set(self, at: Sequence[str], name: str, value: Any) -> None:
        import tomlkit

        entry = tomlkit.table()
        for key, item in value.items():
            entry[key] = tomlkit.inline_table() if isinstance(item, dict) else item
            if isinstance(item, dict):
                entry[key].update(item)
        entry.add(tomlkit.nl())  # a blank line before the next table, as people write them
        self._table(at)[name] = entry

    def remove(self, at: Sequence[str], name: str) -> None:
        table = self._table(at)
        if name in table:
            del table[name]


class YamlDocument:
    def __init__(self, text: str, path: Path) -> None:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        self._yaml = YAML()  # round-trip: comments, order and quotes kept
        self._yaml.preserve_quotes = True
        self._yaml.width = 4096
        try:
            loaded = self._yaml.load(text) if text.strip() else None
        except YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc}); fix it first") from None
        if loaded is None:
            from ruamel.yaml.comments import CommentedMap

            loaded = CommentedMap()
        self._doc = _object(loaded, path)

    @property
    def text(self) -> str:
        out = io.StringIO()
        self._yaml.dump(self._doc, out)
        return out.getvalue()

    def data(self) -> dict[str, Any]:
        return _object(json.loads(json.dumps(self._doc, default=str)), Path())

    def _table(self, at: Sequence[str]) -> Any:
        from ruamel.yaml.comments import CommentedMap

        table: Any = self._doc
        for key in at:
            if not isinstance(table.get(key), dict):
                table[key] = CommentedMap()
            table = table[key]
        return table

    def set(self, at: Sequence[str], name: str, value: Any) -> None:
        self._table(at)[name] = _flow_lists(value)

    def remove(self, at: Sequence[str], name: str) -> None:
        self._table(at).pop(name, None)


def _flow_lists(value: Any) -> Any:
    """Lists written on one line (`args: [serve, --config, …]`), as people write them in these files."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = _flow_lists(item)
        return out
    if isinstance(value, list):
        seq = CommentedSeq(_flow_lists(item) for item in value)
        seq.fa.set_flow_style()
        return seq
    return value


_KINDS: dict[Syntax, type[JsoncDocument] | type[TomlDocument] | type[YamlDocument]] = {
    "json": JsoncDocument,
    "toml": TomlDocument,
    "yaml": YamlDocument,
}


def read_document(path: Path, syntax: Syntax) -> Document:
    """The file at `path` (an empty one when there is none)."""
    text = path.read_text(encoding="utf-8-sig") if path.exists() else ""
    return parse_document(text, syntax, path)


def parse_document(text: str, syntax: Syntax, path: Path) -> Document:
    return _KINDS[syntax](text, path)
