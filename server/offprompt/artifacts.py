"""Typed envelopes for what a tool returns, and their conversion from and to MCP content.

Every artifact has a `value`, a `name` (a fresh opaque id unless given), free
`meta` and `to_text()`. A tool result becomes a list of artifacts, one per
content block plus one for `structuredContent`; `to_result` turns that list
back into the same result. The block's own fields (annotations, `_meta`, a
resource's URI and MIME type) ride along in `meta["mcp"]` so nothing is lost.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import mcp_types as mt

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"

JsonValue = Any
"""A value `json.loads` can return."""


def new_name(length: int = 13) -> str:
    """An opaque id: 13 characters of base36 are 67 random bits."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


@dataclass(frozen=True, kw_only=True)
class Artifact:
    """The common envelope; `kind` names the subtype in the catalog and on the wire."""

    kind: ClassVar[str] = "artifact"

    value: Any
    name: str = field(default_factory=new_name)
    meta: Mapping[str, JsonValue] = field(default_factory=dict)

    def to_text(self) -> str:
        return str(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)


@dataclass(frozen=True, kw_only=True)
class TextArtifact(Artifact):
    kind: ClassVar[str] = "text"
    value: str

    def __bool__(self) -> bool:
        # A whitespace-only text is empty, so an empty result is never stored.
        return bool(self.value.strip())


@dataclass(frozen=True, kw_only=True)
class JsonArtifact(Artifact):
    """A JSON value, with the exact text it was read from (so it reassembles byte for byte)."""

    kind: ClassVar[str] = "json"
    value: JsonValue
    text: str = ""

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", json.dumps(self.value, ensure_ascii=False))

    def to_text(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return self.value is not None


@dataclass(frozen=True, kw_only=True)
class ErrorArtifact(TextArtifact):
    kind: ClassVar[str] = "error"


@dataclass(frozen=True, kw_only=True)
class InfoArtifact(TextArtifact):
    kind: ClassVar[str] = "info"


@dataclass(frozen=True, kw_only=True)
class BlobArtifact(Artifact):
    kind: ClassVar[str] = "blob"
    value: bytes
    mime_type: str = "application/octet-stream"

    def to_text(self) -> str:
        return f"[{self.kind} {self.mime_type}, {len(self.value)} bytes]"


@dataclass(frozen=True, kw_only=True)
class ImageArtifact(BlobArtifact):
    kind: ClassVar[str] = "image"
    mime_type: str = "image/png"


@dataclass(frozen=True, kw_only=True)
class AudioArtifact(BlobArtifact):
    kind: ClassVar[str] = "audio"
    mime_type: str = "audio/wav"


@dataclass(frozen=True, kw_only=True)
class ResourceLinkArtifact(Artifact):
    """A pointer to a resource; `value` is its URI, the link's other fields are in `meta["mcp"]`."""

    kind: ClassVar[str] = "resource_link"
    value: str

    def to_text(self) -> str:
        link = self.meta.get("mcp", {})
        return f"[resource {link.get('name') or ''} {self.value}]".replace("  ", " ")


@dataclass(frozen=True, kw_only=True)
class ListArtifact(Artifact):
    kind: ClassVar[str] = "list"
    value: Sequence[Artifact]

    def to_text(self) -> str:
        return "\n\n".join(a.to_text() for a in self.value)

    def __bool__(self) -> bool:
        return any(self.value)


KINDS: dict[str, type[Artifact]] = {
    cls.kind: cls
    for cls in (
        TextArtifact,
        JsonArtifact,
        ErrorArtifact,
        InfoArtifact,
        BlobArtifact,
        ImageArtifact,
        AudioArtifact,
        ResourceLinkArtifact,
    )
}

TEXT_KINDS = frozenset({"text", "json", "error", "info"})
"""Kinds read by token window; the others are loaded whole."""

STRUCTURED = "structured"
"""`meta["mcp"]["type"]` of the artifact made from a result's `structuredContent`."""


def parse_json_text(text: str) -> JsonValue | None:
    """The JSON object or array a text holds, or None (a bare number or string is not JSON here)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return None
    return value


def _text_artifact(text: str, mcp_fields: dict[str, Any]) -> Artifact:
    value = parse_json_text(text)
    if value is not None:
        return JsonArtifact(value=value, text=text, meta={"mcp": mcp_fields})
    return TextArtifact(value=text, meta={"mcp": mcp_fields})


def _b64decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        return base64.b64decode(data)


def from_block(block: mt.ContentBlock) -> Artifact:
    """One MCP content block as an artifact; its other fields are kept in `meta["mcp"]`."""
    if isinstance(block, mt.TextContent):
        return _text_artifact(
            block.text, block.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"text"})
        )
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        cls = ImageArtifact if isinstance(block, mt.ImageContent) else AudioArtifact
        fields = block.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"data"})
        return cls(value=_b64decode(block.data), mime_type=block.mime_type, meta={"mcp": fields})
    if isinstance(block, mt.ResourceLink):
        return ResourceLinkArtifact(
            value=block.uri, meta={"mcp": block.model_dump(mode="json", by_alias=True, exclude_none=True)}
        )
    resource = block.resource
    if isinstance(resource, mt.TextResourceContents):
        fields = block.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"resource": {"text"}})
        return _text_artifact(resource.text, fields)
    fields = block.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"resource": {"blob"}})
    return BlobArtifact(
        value=_b64decode(resource.blob),
        mime_type=resource.mime_type or "application/octet-stream",
        meta={"mcp": fields},
    )


def from_result(result: mt.CallToolResult) -> list[Artifact]:
    """A tool result as artifacts: one per content block, then one for `structuredContent`."""
    artifacts = [from_block(block) for block in result.content]
    if result.structured_content is not None:
        value = result.structured_content
        artifacts.append(JsonArtifact(value=value, meta={"mcp": {"type": STRUCTURED}}))
    return artifacts


def to_block(artifact: Artifact) -> mt.ContentBlock:
    """The MCP content block an artifact came from, or the natural block for one made here."""
    fields: dict[str, Any] = dict(artifact.meta.get("mcp", {}))
    kind = fields.get("type")
    if isinstance(artifact, BlobArtifact):
        data = base64.b64encode(artifact.value).decode("ascii")
        if kind == "resource":
            fields["resource"] = {**fields["resource"], "blob": data}
            return mt.EmbeddedResource.model_validate(fields)
        if isinstance(artifact, ImageArtifact | AudioArtifact):
            fields.update(type=artifact.kind, data=data, mimeType=artifact.mime_type)
            block_type = mt.ImageContent if isinstance(artifact, ImageArtifact) else mt.AudioContent
            return block_type.model_validate(fields)
        return mt.EmbeddedResource(
            resource=mt.BlobResourceContents(uri=f"blob:{artifact.name}", mime_type=artifact.mime_type, blob=data)
        )
    if isinstance(artifact, ResourceLinkArtifact):
        return mt.ResourceLink.model_validate(fields or {"type": "resource_link", "uri": artifact.value, "name": ""})
    text = artifact.to_text()
    if kind == "resource":
        fields["resource"] = {**fields["resource"], "text": text}
        return mt.EmbeddedResource.model_validate(fields)
    if kind not in (None, "text"):
        fields = {}
    fields.update(type="text", text=text)
    return mt.TextContent.model_validate(fields)


def to_result(artifacts: Sequence[Artifact], *, is_error: bool = False) -> mt.CallToolResult:
    """Artifacts back into the tool result they were made from."""
    content: list[mt.ContentBlock] = []
    structured: JsonValue = None
    for artifact in artifacts:
        if isinstance(artifact, JsonArtifact) and artifact.meta.get("mcp", {}).get("type") == STRUCTURED:
            structured = artifact.value
        else:
            content.append(to_block(artifact))
    return mt.CallToolResult(content=content, structured_content=structured, is_error=is_error)


#: A string at least this long written in base64 is a binary payload, not text to search.
BASE64_MIN_CHARS = 1024
#: base64's characters and the line breaks MIME and PEM wrap it with: never a space (one character class: linear).
_BASE64_CHARS = re.compile(r"[A-Za-z0-9+/=\r\n]*")
_BASE64_BODY = re.compile(r"[A-Za-z0-9+/]*")


def is_base64(value: str) -> bool:
    """Whether `value` is written in base64: letters, digits, `+` and `/`, then at most two `=`, in one run or in
    lines of one width (MIME's 76, PEM's 64) broken by line breaks. A table of words and spaces is not."""
    if not _BASE64_CHARS.fullmatch(value):
        return False
    lines = value.replace("\r\n", "\n").rstrip("\n").split("\n")
    width = len(lines[0])
    if any(len(line) != width for line in lines[:-1]) or not 0 < len(lines[-1]) <= width:
        return False
    last = lines[-1].rstrip("=")
    if len(lines[-1]) - len(last) > 2:
        return False
    return all(_BASE64_BODY.fullmatch(line) for line in lines[:-1]) and bool(_BASE64_BODY.fullmatch(last))


def base64_strings(value: JsonValue) -> list[str]:
    """The long base64 strings anywhere in a JSON value (an image's data repeated in structuredContent)."""
    found: list[str] = []
    stack = [value]
    while stack:  # iterative: a deeply nested value must not exhaust the stack
        current = stack.pop()
        if isinstance(current, str):
            if len(current) >= BASE64_MIN_CHARS and is_base64(current):
                found.append(current)
        elif isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def flatten(artifacts: Sequence[Artifact]) -> list[Artifact]:
    """List artifacts opened up into their members, in order."""
    flat: list[Artifact] = []
    for artifact in artifacts:
        if isinstance(artifact, ListArtifact):
            flat.extend(flatten(artifact.value))
        else:
            flat.append(artifact)
    return flat
