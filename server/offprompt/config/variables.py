"""`${VAR}`, `${env:VAR}`, `${VAR:-default}` and the editors' `${userHome}` in a config's string values."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeAlias

Loc: TypeAlias = tuple[str | int, ...]

_VARIABLE = re.compile(r"\$\$\{|\$\{([^}]*)(\}?)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PREDEFINED: dict[str, Callable[[], str]] = {
    "userHome": lambda: str(Path.home()),  # Cursor and VS Code
    "pathSeparator": lambda: os.sep,
    "/": lambda: os.sep,
}
_EDITOR_ONLY = ("workspaceFolder", "workspaceFolderBasename", "workspaceRoot", "fileDirname", "file", "relativeFile")


class _UnresolvedError(Exception):
    pass


def _resolve(body: str) -> tuple[str, str | None] | str:
    """`env:NAME:-default` → (NAME, default); a predefined variable → its value."""
    name, sep, default = body.partition(":-")
    if name.startswith("env:"):
        name = name[4:]
    elif name in _PREDEFINED:
        return _PREDEFINED[name]()
    elif name in _EDITOR_ONLY:
        raise _UnresolvedError(f"${{{name}}} is the editor's; offprompt has no workspace, so write the path itself")
    elif name.startswith("input:"):
        raise _UnresolvedError(
            f"${{{name}}} is a VS Code prompt, which offprompt can't show; put the value in an environment variable "
            "and write ${env:NAME}"
        )
    if not _ENV_NAME.fullmatch(name):
        raise _UnresolvedError(
            f"${{{body}}} is not a variable offprompt knows; write ${{NAME}} or ${{env:NAME}} for an environment "
            "variable, or $${ for a literal ${"
        )
    return name, default if sep else None


def _expand(value: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        body, closed = match.group(1), match.group(2)
        if not closed:
            raise _UnresolvedError(f"'${{{body}' has no closing '}}'")
        resolved = _resolve(body)
        if isinstance(resolved, str):
            return resolved
        name, default = resolved
        found = environ.get(name)
        if default is not None and not found:
            return default
        if found is None:
            raise _UnresolvedError(
                f"environment variable {name} is not set; set it where offprompt starts, "
                f"or give a default: ${{{name}:-value}}"
            )
        return found

    return _VARIABLE.sub(replace, value)


def interpolate(value: object, loc: Loc, environ: Mapping[str, str], errors: list[tuple[Loc, str]]) -> object:
    if isinstance(value, str):
        try:
            return _expand(value, environ)
        except _UnresolvedError as exc:
            errors.append((loc, str(exc)))
            return value
    if isinstance(value, dict):
        return {key: interpolate(item, (*loc, key), environ, errors) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, (*loc, index), environ, errors) for index, item in enumerate(value)]
    return value
