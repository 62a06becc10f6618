"""One result's artifacts written to their storages, item by item: a copy of another item (structuredContent that
repeats a text or an image) or a binary payload in JSON clothing is kept but never searched."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence

from offprompt import deadline
from offprompt.artifacts import STRUCTURED, Artifact, BlobArtifact, JsonArtifact, TextArtifact, base64_strings
from offprompt.memory.catalog import BINARY, DUPLICATE_OF, ItemRecord
from offprompt.memory.outline import Entry
from offprompt.memory.storage.base import Storage, TextStorage


def store_items(
    text: TextStorage,
    storage_for: Callable[[Artifact], Storage],
    namespace: str,
    flat: Sequence[Artifact],
    outline_tokens: int,
) -> tuple[list[ItemRecord], dict[int, tuple[Entry, ...]]]:
    """Write each artifact as item `position` of `namespace`; its record, and the outlines made while storing
    (only when the reference shows one: else the indexer makes them)."""
    items: list[ItemRecord] = []
    outlines: dict[int, tuple[Entry, ...]] = {}  # made while storing: not read back from where they were put
    for position, artifact in enumerate(flat):
        deadline.check()
        meta = dict(artifact.meta)
        copy_of = _copy_of(artifact, flat[:position])
        binary = copy_of is None and _mostly_base64(artifact)
        if copy_of is not None or binary:
            # structuredContent that repeats a text block or an image, or JSON that is mostly base64: kept
            # (lossless) but never indexed, grepped or embedded: base64 is not text to search.
            meta[DUPLICATE_OF if copy_of is not None else BINARY] = copy_of if copy_of is not None else True
            stored = text.store(namespace, position, artifact, searchable=False)
        elif (storage := storage_for(artifact)) is text:
            # The outline is made now only if the reference shows it; else the indexer makes it.
            stored = text.store(namespace, position, artifact, with_outline=outline_tokens > 0)
        else:
            stored = storage.store(namespace, position, artifact)
        if stored.outline is not None:
            outlines[position] = stored.outline
        items.append(
            ItemRecord(
                item=position,
                kind=artifact.kind,
                name=artifact.name,
                mime_type=artifact.mime_type if isinstance(artifact, BlobArtifact) else None,
                tokens=stored.tokens,
                bytes=stored.bytes,
                meta=meta,
            )
        )
    return items, outlines


def _copy_of(artifact: Artifact, earlier: Sequence[Artifact]) -> int | None:
    """The earlier item a structuredContent artifact repeats, if it does: `{"result": text}`, or the same JSON."""
    if not (isinstance(artifact, JsonArtifact) and artifact.meta.get("mcp", {}).get("type") == STRUCTURED):
        return None
    value = artifact.value
    strings = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) else []
    payloads = base64_strings(value)
    for position, other in enumerate(earlier):
        if isinstance(other, JsonArtifact) and other.value == value:
            return position
        if type(other) is TextArtifact and other.value in strings:
            return position
        if isinstance(other, JsonArtifact) and other.text in strings:  # a JSON text, quoted whole as a string
            return position
    if payloads and _mostly_base64(artifact):
        # `{"content": [{"type": "image", "data": …}]}` beside the image block itself (server-filesystem's
        # read_media_file): a copy of the blob items, once they are all there.
        blobs = {
            base64.b64encode(o.value).decode("ascii"): p for p, o in enumerate(earlier) if isinstance(o, BlobArtifact)
        }
        if all(p.replace("\n", "") in blobs for p in payloads):
            return blobs[payloads[0].replace("\n", "")]
    return None


def _mostly_base64(artifact: Artifact) -> bool:
    """A JSON item whose text is mostly long base64 strings: a binary payload in JSON clothing."""
    if not isinstance(artifact, JsonArtifact):
        return False
    payloads = base64_strings(artifact.value)
    return bool(payloads) and sum(map(len, payloads)) >= 0.9 * len(artifact.text)
