"""The memory tools' arguments: their models (strict: a string is not a number), the limits on their sizes, and
the lean input schema each tool lists, made once."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from offprompt.memory.storage.base import SearchMode

DEFAULT_WINDOW = 2000
MAX_WINDOW = 20000

#: Longest memory_query query (a question, not a document: longer ones cost seconds of tokenising and matching).
MAX_QUERY_CHARS = 4000
#: Longest memory_grep pattern.
MAX_PATTERN_CHARS = 1000
#: Longest memory_select expression.
MAX_EXPRESSION_CHARS = 4000
#: Longest string in any other argument (namespaces are 16 characters).
MAX_NAME_CHARS = 200


class Args(BaseModel):
    # strict: "10" and true are not numbers; a client that sends them gets told, not guessed at.
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _bounded_text(self) -> Args:
        """Every string is valid Unicode and of a sensible size (checked here, so the JSON schema stays small)."""
        limits = {"query": MAX_QUERY_CHARS, "pattern": MAX_PATTERN_CHARS, "expression": MAX_EXPRESSION_CHARS}
        for name, value in self:
            if not isinstance(value, str):
                continue
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"{name} holds a lone surrogate ({value[exc.start]!r} at character {exc.start}), which is not "
                    "valid Unicode text: send the text as valid UTF-8"
                ) from None
            limit = limits.get(name, MAX_NAME_CHARS)
            if len(value) > limit:
                raise ValueError(
                    f"{name} is {len(value):,} characters long; the limit is {limit:,}: send a shorter {name}"
                )
        return self


class _Scoped(Args):
    @model_validator(mode="after")
    def _namespace_given(self) -> _Scoped:
        if getattr(self, "artifact_namespace", None) == "":
            raise ValueError("artifact_namespace is empty: name one output, or omit artifact_namespace to search all")
        return self


class LoadArgs(Args):
    artifact_namespace: str = Field(description="From the reference.")
    memory_name: str | None = None
    item: int = Field(default=0, ge=0)
    offset: int = Field(default=0, ge=0, description="First token: 0, next_offset or a hit's offset.")
    line: int | None = Field(default=None, ge=1, description="Or the first line (1-based), e.g. next_line.")
    max_tokens: int = Field(default=DEFAULT_WINDOW, ge=1, le=MAX_WINDOW)


class QueryArgs(_Scoped):
    query: str = Field(description="A question, or the exact names it involves.")
    artifact_namespace: str | None = Field(default=None, description="Only this output; omit for all.")
    top_k: int = Field(default=5, ge=1, le=50, description="Passages to return.")
    mode: SearchMode = Field(
        default="hybrid",
        description="hybrid (best), dense (meaning) or lexical (words).",
    )
    queries: list[str] = Field(default_factory=list, max_length=8, description="Other phrasings, fused with query.")
    more: int = Field(default=10, ge=0, le=50, description="Further candidates, one line each.")


class OutlineArgs(Args):
    artifact_namespace: str = Field(description="From the reference.")
    item: int = Field(default=0, ge=0)
    max_tokens: int = Field(default=DEFAULT_WINDOW, ge=1, le=MAX_WINDOW)
    offset: int = Field(default=0, ge=0, description="First entry: 0, or next_offset.")


class GrepArgs(_Scoped):
    pattern: str = Field(description="A Python regular expression, matched against each line.")
    artifact_namespace: str | None = Field(default=None, description="Only this output; omit for all.")
    max_matches: int = Field(default=50, ge=1, le=1000)


class SelectArgs(Args):
    artifact_namespace: str = Field(description="From the reference.")
    expression: str = Field(description='jq, e.g. [.[] | select(.state == "open") | .id]')
    item: int = Field(default=0, ge=0)
    max_tokens: int = Field(default=DEFAULT_WINDOW, ge=1, le=MAX_WINDOW)
    offset: int = Field(default=0, ge=0, description="0, or next_offset.")
    artifact_namespaces: list[str] = Field(
        default_factory=list, description="Outputs to join: $ns_<namespace>, $ns[0], ..."
    )


class ListArgs(Args):
    limit: int = Field(default=50, ge=1, le=1000)


class DeleteArgs(Args):
    artifact_namespace: str = Field(description="The output to delete.")


@functools.cache
def input_schema(args: type[Args]) -> dict[str, Any]:
    """A tool's input schema, made once: pydantic takes ~0.3 ms to generate it, and every tools/list asked again.
    Shared by every definition: read it, never change it."""
    schema = args.model_json_schema()
    schema.pop("title", None)
    # Every token of tools/list is paid by every request: no titles that repeat the names, and an optional
    # field is simply not required (`null` is accepted all the same).
    schema["properties"] = {name: _lean(field) for name, field in schema["properties"].items()}
    return schema


def _lean(field: dict[str, Any]) -> dict[str, Any]:
    field = {key: value for key, value in field.items() if key != "title"}
    options = field.pop("anyOf", None)
    if options is None:
        return field
    kept = [option for option in options if option != {"type": "null"}]
    if field.get("default", "") is None:
        del field["default"]
    return {**kept[0], **field} if len(kept) == 1 else {"anyOf": kept, **field}
