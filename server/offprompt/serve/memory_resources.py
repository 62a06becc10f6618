"""The stored outputs as `memory://` resources: their list, their URI templates, and reading one.

`memory://{memory_name}/{namespace}` is every item of a stored output, `.../{namespace}/{item}` one item, and
`.../{namespace}/{item}?offset=N` a text item from token N.

One answer stays under the 1 MiB HTTP clients accept: a text item comes as its first window (its share of the
answer), with the URI that reads on in the contents' `_meta["offprompt"]["next_uri"]`; a blob comes whole, but
over HTTP only when it fits (else the error says how to get it whole). Over stdio nothing caps a blob.
"""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlparse

import mcp_types as mt

from offprompt.artifacts import TEXT_KINDS, BlobArtifact
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.reference import URI_SCHEME
from offprompt.memory.task_memory import TaskMemory
from offprompt.tools import PAYLOAD_LIMIT, base64_size, blob_too_big

Contents = mt.TextResourceContents | mt.BlobResourceContents


def is_memory_uri(uri: str) -> bool:
    return uri.startswith(f"{URI_SCHEME}://")


def memory_resources(memory: TaskMemory, owner: str | None) -> list[mt.Resource]:
    """The 50 newest stored outputs `owner` may see (blocking: run it in a thread)."""
    return [
        mt.Resource(
            uri=f"{URI_SCHEME}://{memory.name}/{r.namespace}",
            name=r.namespace,
            title=f"Output of {r.tool}",
            description=f"{'+'.join(r.kinds)}, {r.tokens:,} tokens, {r.bytes:,} bytes",
            size=r.bytes,
        )
        for r in memory.recent(50, owner)
    ]


def memory_templates(memory: TaskMemory) -> list[mt.ResourceTemplate]:
    return [
        mt.ResourceTemplate(
            uri_template=f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}",
            name="stored-output",
            description="A tool output offprompt stored, every item of it (text as its first window).",
        ),
        mt.ResourceTemplate(
            uri_template=f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}/{{item}}{{?offset}}",
            name="stored-output-window",
            description="One item of a stored output; text from token `offset` on, as much as one answer holds "
            "(_meta.offprompt.next_uri reads on).",
        ),
    ]


def read_memory_uri(memory: TaskMemory, uri: str, owner: str | None, over_http: bool) -> mt.ReadResourceResult:
    """The contents at a `memory://` URI (blocking: run it in a thread)."""
    parsed = urlparse(uri)
    parts = [p for p in parsed.path.split("/") if p]
    if (
        parsed.scheme != URI_SCHEME
        or parsed.netloc != memory.name
        or len(parts) not in (1, 2)
        or (len(parts) == 2 and not parts[1].isdigit())
    ):
        raise NotFoundError(
            f"cannot read {uri}: this offprompt serves {URI_SCHEME}://{memory.name}/{{artifact_namespace}} and "
            f"{URI_SCHEME}://{memory.name}/{{artifact_namespace}}/{{item}}?offset=N"
        )
    record = memory.get(parts[0], owner)
    items = [int(parts[1])] if len(parts) == 2 else [i.item for i in record.items]
    offset = _offset(parse_qs(parsed.query), uri, single_item=len(parts) == 2)
    share = PAYLOAD_LIMIT // len(items)
    contents = [_item_contents(memory, record.namespace, item, offset, share, owner, over_http) for item in items]
    return mt.ReadResourceResult(contents=contents)


def _item_contents(
    memory: TaskMemory, namespace: str, item: int, offset: int, share: int, owner: str | None, over_http: bool
) -> Contents:
    """One item: a text item's window of at most `share` tokens from `offset`, a blob whole."""
    found = memory.item(namespace, item, owner)
    item_uri = f"{URI_SCHEME}://{memory.name}/{namespace}/{item}"
    if found.kind in TEXT_KINDS:
        window = memory.window_within(namespace, item, offset, share, share, owner)
        end = window.next_offset if window.next_offset is not None else window.total_tokens
        facts = {
            "item": item,
            "offset": window.offset,
            "next_offset": window.next_offset,
            "total_tokens": window.total_tokens,
            "next_uri": f"{item_uri}?offset={window.next_offset}" if window.next_offset is not None else None,
            "window": f"tokens {window.offset}-{end} of {window.total_tokens}",
        }
        mime = "application/json" if found.kind == "json" else "text/plain"
        here = item_uri if offset == 0 else f"{item_uri}?offset={offset}"
        return mt.TextResourceContents(uri=here, mime_type=mime, text=window.text, _meta={"offprompt": facts})
    if found.mime_type is not None and over_http and base64_size(found.bytes) > share:
        raise blob_too_big(memory.name, namespace, item, found.kind, found.bytes)
    artifact = memory.load(namespace, item, owner)
    if isinstance(artifact, BlobArtifact):
        blob = base64.b64encode(artifact.value).decode()
        return mt.BlobResourceContents(uri=item_uri, mime_type=artifact.mime_type, blob=blob)
    return mt.TextResourceContents(uri=item_uri, mime_type="text/plain", text=artifact.to_text())


def _offset(query: dict[str, list[str]], uri: str, *, single_item: bool) -> int:
    values = query.get("offset")
    if values is None:
        return 0
    if not single_item or len(values) != 1 or not values[0].isdigit():
        raise InvalidArgumentError(
            f"cannot read {uri}: offset=N (a token offset, 0 or more) goes on one item's URI, "
            f"{URI_SCHEME}://{{memory_name}}/{{artifact_namespace}}/{{item}}?offset=N"
        )
    return int(values[0])
