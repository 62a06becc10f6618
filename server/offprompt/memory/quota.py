"""A memory's expiry and quota: namespaces past their TTL go, then the oldest while the memory occupies more than
`max_bytes` on disk (payloads, token indexes, the catalog and a share of the search indexes)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from typing import Final

from offprompt.artifacts import TEXT_KINDS
from offprompt.errors import NotFoundError, QuotaError
from offprompt.memory.catalog import BINARY, DUPLICATE_OF, CatalogStore, ItemRecord, NamespaceRecord
from offprompt.memory.storage.base import TextStorage

#: A listing measures the quota (stat calls and a count of free pages in each index's file, most of what a
#: memory_list costs) at most this often; every store measures it, so growth by stores is caught at once and
#: the indexes' growth in the background within this long.
QUOTA_RECHECK_SECONDS: Final = 5.0


class Quota:
    """What a memory drops, and when: its TTL's and its quota's part of the task memory."""

    def __init__(self, catalog: CatalogStore, text: TextStorage, max_bytes: int | None) -> None:
        self.catalog = catalog
        self.text = text
        #: The quota: bytes the memory may occupy on disk (None: no limit).
        self.max_bytes = max_bytes
        self.measured = -math.inf  # monotonic time the quota was last measured

    def due(self) -> bool:
        """Whether a listing measures the quota: not measured in the last QUOTA_RECHECK_SECONDS."""
        return time.monotonic() - self.measured >= QUOTA_RECHECK_SECONDS

    def check_fits(self, tool: str, size: int) -> None:
        """Refuse a result bigger than the whole quota: kept, it would evict every other output and then
        itself, a reference that dies."""
        if self.max_bytes is not None and size > self.max_bytes:
            raise QuotaError(
                f"the result of {tool} is {size:,} bytes, more than this memory's whole quota (max_bytes "
                f"{self.max_bytes:,}), so it was not stored. Raise max_bytes in the offprompt block of the "
                'config file ("max_bytes": N) and call the tool again.'
            )

    def expire(
        self,
        keep: str | None,
        *,
        quota: bool,
        delete: Callable[[str], object],
        delete_payloads: Callable[[str], None],
    ) -> list[str]:
        """Drop namespaces past their TTL, then (with `quota`) the oldest ones while the memory occupies more
        than its quota; `delete` drops a namespace whole, `delete_payloads` its stored items.

        The newest namespace (and `keep`) is never dropped for the quota: its reference was just handed out.
        """
        dropped = [ns for ns in self.catalog.expired(time.time()) if ns != keep]
        for ns in dropped:
            self.catalog.remove(ns)
            delete_payloads(ns)
        if quota:
            self.measured = time.monotonic()
        if quota and self.max_bytes is not None and self.used_bytes() > self.max_bytes:
            self.reclaim()
            # The indexes give back less than their share at once (Chroma keeps deleted slots for reuse), so
            # measure again after each round until the memory fits or only the protected are left.
            while (used := self.used_bytes()) > self.max_bytes:
                records = self.catalog.newest(whole_arguments=False)
                _, charges = self.charges(records)
                protected = {keep, records[0].namespace} if records else {keep}
                evictable = [r for r in reversed(records) if r.namespace not in protected]
                if not evictable:
                    break
                for record in evictable:
                    with contextlib.suppress(NotFoundError):  # a server sharing the memory evicted it first
                        delete(record.namespace)
                    dropped.append(record.namespace)
                    used -= charges[record.namespace]
                    if used <= self.max_bytes:
                        break
                self.reclaim()
        return dropped

    def reclaim(self) -> None:
        self.text.reclaim()
        self.catalog.reclaim()

    def used_bytes(self) -> int:
        """What the memory occupies on disk: payloads, token indexes, the catalog and the search indexes."""
        return self.catalog.stored_bytes(TEXT_KINDS) + self.catalog.used_bytes() + self.text.index_bytes()

    def charges(self, records: Sequence[NamespaceRecord]) -> tuple[int, dict[str, int]]:
        """The bytes the memory occupies, and what dropping each namespace frees: its own files plus a share of
        the search indexes in proportion to its indexed text (what is not indexed is charged none)."""
        own = {r.namespace: sum(own_bytes(i) for i in r.items) for r in records}
        indexed = {r.namespace: sum(i.bytes for i in r.items if in_indexes(i)) for r in records}
        index = self.text.index_bytes()
        all_indexed = sum(indexed.values())
        charges = {ns: own[ns] + (index * indexed[ns] // all_indexed if all_indexed else 0) for ns in own}
        return sum(own.values()) + index + self.catalog.used_bytes(), charges


def in_indexes(item: ItemRecord) -> bool:
    return item.kind in TEXT_KINDS and DUPLICATE_OF not in item.meta and BINARY not in item.meta


def own_bytes(item: ItemRecord) -> int:
    return item.bytes + (4 * (item.tokens + 1) if item.kind in TEXT_KINDS else 0)
