"""What memory_select reads of a stored item: its JSON text, the records of a text that is a table or a log
(made now if the indexer has not made them yet), or else a text's lines."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from offprompt.artifacts import TEXT_KINDS
from offprompt.errors import InvalidArgumentError, NotFoundError
from offprompt.memory.catalog import BINARY, DUPLICATE_OF, ItemRecord, NamespaceRecord
from offprompt.memory.records import Summary
from offprompt.memory.select import LINES, Source
from offprompt.memory.storage.base import TextStorage


def json_source(text: TextStorage, record: NamespaceRecord, item: int, found: ItemRecord) -> Source:
    """What memory_select reads of `item` of `record` (`found`): its JSON, or the records of a table or a log."""
    label = f"item {item} of {record.namespace!r} ({found.kind})"
    # Where the namespace's JSON is, if not here: structuredContent that only repeats this text is no JSON of its own.
    json_items = [
        str(i.item) for i in record.items if i.kind == "json" and i.item != item and i.meta.get(DUPLICATE_OF) != item
    ]
    where = f" Its JSON is in item {', '.join(json_items)}." if json_items else ""
    if found.kind not in TEXT_KINDS:
        raise InvalidArgumentError(
            f"{label} is {found.mime_type or found.kind}, not JSON: memory_select reads JSON text, "
            f"structuredContent, JSON resources and JSON Lines.{where} Load this item with memory_load."
        )

    if found.kind == "text" and DUPLICATE_OF not in found.meta and BINARY not in found.meta:
        records = records_source(text, record.namespace, item, label)
        if records is not None:
            return records

    def read() -> bytes:
        return text.load(record.namespace, item)

    # A text that is neither JSON nor a table or log is read as its lines, unless the namespace's JSON is
    # elsewhere: then it is the wrong item, and the error says which is right.
    kind = LINES if found.kind == "text" and not json_items else found.kind
    return Source(key=f"{record.namespace}/{item}", kind=kind, label=label, read=read, hint=where)


def records_source(text: TextStorage, namespace: str, item: int, label: str) -> Source | None:
    """A text that is a table or a stream of records is selected over its records (made now if the indexer
    has not made them yet); None for other text."""
    summary = text.records(namespace, item)
    if summary is None:
        return None
    if summary.skipped:
        raise InvalidArgumentError(
            f"{label} has {summary.count:,} {summary.what}, not kept: {summary.skipped}. "
            "Read it with memory_load or memory_grep."
        )

    def read() -> bytes:
        data = text.records_data(namespace, item)
        if data is None:
            raise NotFoundError(f"the records of {label} are gone (it was deleted meanwhile)")
        return data

    return Source(key=f"{namespace}/{item}/records", kind="json", label=f"the records of {label}", read=read)


def records_made(text: TextStorage, records: Sequence[NamespaceRecord]) -> dict[str, list[tuple[int, Summary]]]:
    """The records each namespace's texts have so far, by item (not made here: a listing reads what is)."""
    found: dict[str, list[tuple[int, Summary]]] = {}
    for record in records:
        for item in record.items:
            if item.kind != "text" or DUPLICATE_OF in item.meta or BINARY in item.meta:
                continue
            with contextlib.suppress(NotFoundError):
                summary = text.records(record.namespace, item.item, make=False)
                if summary is not None:
                    found.setdefault(record.namespace, []).append((item.item, summary))
    return found
