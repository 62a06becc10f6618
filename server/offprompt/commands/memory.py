"""`offprompt memory …` and `offprompt memories`: look into the store and clean it from a terminal.

Reading commands open the memory read-only (SQLite `mode=ro`, no lock, no Chroma), so they work while a server
holds it; `query` then answers by words and says so. Writing commands take the memory's lock: they refuse
while a server holds it (naming its pid), or wait for it with `--wait`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from offprompt.artifacts import TEXT_KINDS, BlobArtifact
from offprompt.commands.common import memory_settings, settings_from
from offprompt.commands.table import iso, size, table, when
from offprompt.errors import InvalidArgumentError, MemoryLockedError, NotFoundError
from offprompt.memory.catalog import Catalog, NamespaceRecord
from offprompt.memory.dirlock import DirectoryLock, holder
from offprompt.memory.outline import view as outline_view
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage.base import IndexState, SearchMode
from offprompt.memory.task_memory import TaskMemory

#: `gc` and `reindex` print a progress line every this many items.
PROGRESS_EVERY = 25
_WAIT_POLL_SECONDS = 0.5
#: How often `reindex` reads how far indexing got: a read of every item's files and of the lexical index, which
#: takes the embedder's CPU on a memory of many items.
_REINDEX_POLL_SECONDS = 1.0
#: After this long without a batch, `reindex` says why it may be slow.
_REINDEX_QUIET_SECONDS = 60.0
_T = TypeVar("_T")


def run(args: argparse.Namespace) -> int:
    settings = memory_settings(settings_from(args))
    verb: str = args.verb
    return int(_VERBS[verb](args, settings))


def run_memories(args: argparse.Namespace) -> int:
    settings = memory_settings(settings_from(args))
    if getattr(args, "verb", None) == "rm":
        return _memories_rm(args, settings)
    return _memories_ls(args, settings)


# -- opening -------------------------------------------------------------------


@contextmanager
def _reading(settings: MemorySettings) -> Iterator[TaskMemory]:
    memory = TaskMemory.open_readonly(settings)
    try:
        yield memory
    finally:
        memory.close()


def _take(settings: MemorySettings, wait: bool, take: Callable[[], _T]) -> _T:
    """`take()` (which takes the memory's lock) once no server holds the memory (`--wait`), else
    MemoryLockedError naming the holder's pid."""
    if settings.postgres is None and not (settings.directory / "catalog.sqlite3").exists():
        raise NotFoundError(
            f'there is no memory "{settings.name}" in {settings.data_dir}: `offprompt memories` lists them'
        )
    told = False
    while True:
        try:
            return take()
        except MemoryLockedError as exc:
            if not wait:
                raise MemoryLockedError(f"{exc} Or pass --wait to wait for it.") from None
            if not told:
                pid = holder(settings.directory) or "unknown"
                print(f"waiting for offprompt pid {pid} to release memory {settings.name!r}…", file=sys.stderr)
                told = True
            time.sleep(_WAIT_POLL_SECONDS)


@contextmanager
def _writing(settings: MemorySettings, wait: bool, *, index: bool = False) -> Iterator[TaskMemory]:
    """The memory, opened with its lock; indexing what is left unindexed only when asked (`reindex`): a
    process that ends while the embedder runs would abort."""
    memory = _take(settings, wait, lambda: TaskMemory.open(settings, tidy=False, resume_indexing=index))
    try:
        yield memory
    finally:
        memory.close()


@contextmanager
def _locked(settings: MemorySettings, wait: bool) -> Iterator[None]:
    """The memory's lock alone, for work on its files while nothing has them open."""
    lock = DirectoryLock(settings.directory)
    _take(settings, wait, lock.acquire)
    try:
        yield
    finally:
        lock.release()


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _progress(step: str, done: int, total: int) -> None:
    if done % PROGRESS_EVERY == 0 or done == total:
        print(f"{step}: {done}/{total}", file=sys.stderr, flush=True)


# -- reading -------------------------------------------------------------------


def _indexing(state: IndexState | None) -> str:
    if state is None or state.items == 0:
        return "-"
    text = f"{state.embedded_chunks}/{state.chunks} chunks embedded"
    if state.chunked_items < state.items:
        text += f", {state.items - state.chunked_items} items to chunk"
    return text


def _indexed(state: IndexState, mode: SearchMode) -> bool:
    chunked = state.chunked_items == state.items
    return chunked if mode == "lexical" else chunked and state.embedded_chunks == state.chunks


def _state_json(state: IndexState | None) -> dict[str, int] | None:
    if state is None:
        return None
    return {
        "items": state.items,
        "chunked_items": state.chunked_items,
        "chunks": state.chunks,
        "embedded_chunks": state.embedded_chunks,
    }


def _describe(record: NamespaceRecord, memory_name: str, state: IndexState | None) -> dict[str, Any]:
    return {
        "artifact_namespace": record.namespace,
        "memory_name": memory_name,
        "tool": record.tool,
        "arguments": record.arguments,
        "kinds": record.kinds,
        "items": len(record.items),
        "tokens": record.tokens,
        "bytes": record.bytes,
        "created": iso(record.created),
        "expires": iso(record.expires),
        "indexing": _state_json(state),
    }


def _ls(args: argparse.Namespace, settings: MemorySettings) -> int:
    with _reading(settings) as memory:
        records = memory.catalog.newest()
        states = memory.text.index_state()
    if args.json:
        _print_json(
            {
                "memory_name": settings.name,
                "namespaces": [_describe(r, settings.name, states.get(r.namespace)) for r in records],
            }
        )
        return 0
    if not records:
        print(f'Memory "{settings.name}" holds nothing.')
        return 0
    rows = [
        (
            r.namespace,
            r.tool,
            "+".join(r.kinds),
            f"{r.tokens:,}",
            size(r.bytes),
            when(r.created),
            _indexing(states.get(r.namespace)),
        )
        for r in records
    ]
    print(table(("NAMESPACE", "TOOL", "KINDS", "TOKENS", "SIZE", "CREATED", "INDEXED"), rows, right=(3, 4)))
    return 0


def outline(memory: TaskMemory, record: NamespaceRecord) -> list[str]:
    """The outline of a stored result's first text item (its sections, keys or symbols), one line each."""
    item = record.first_text
    return [] if item is None else outline_view.lines(memory.outline(record.namespace, item))


def _show(args: argparse.Namespace, settings: MemorySettings) -> int:
    with _reading(settings) as memory:
        record = memory.get(args.namespace)
        state = memory.text.index_state().get(record.namespace)
        lines = outline(memory, record)
        origin = memory.origin(record.namespace)
        flows = memory.flows([record.namespace]).get(record.namespace, [])
    passed = [{"tool": f.tool, "part": f.part, "at": when(f.at)} for f in flows]
    items = [
        {
            "item": i.item,
            "kind": i.kind,
            "name": i.name,
            "mime_type": i.mime_type,
            "tokens": i.tokens,
            "bytes": i.bytes,
        }
        for i in record.items
    ]
    if args.json:
        origin_json = None if origin is None else {"server": origin.server, "sensitive": origin.sensitive}
        described = _describe(record, settings.name, state)
        _print_json({**described, "origin": origin_json, "passed_to": passed, "items": items, "outline": lines})
        return 0
    print(f"namespace  {record.namespace}")
    print(f"memory     {settings.name} ({settings.directory})")
    print(f"tool       {record.tool}")
    print(f"arguments  {json.dumps(record.arguments, ensure_ascii=False)}")
    if record.owner:
        print(f"owner      {record.owner}")
    print(f"created    {when(record.created)}")
    print(f"expires    {when(record.expires)}")
    print(f"indexed    {_indexing(state)}")
    if origin is not None:
        sensitive = " (sensitive: goes to its own server and its share_with only)" if origin.sensitive else ""
        print(f"from       {origin.server}{sensitive}")
    for flow in passed:
        print(f"passed to  {flow['tool']} ({flow['part']}) at {flow['at']}")
    print()
    rows = [(i.item, i.kind, i.name, i.mime_type or "", f"{i.tokens:,}", size(i.bytes)) for i in record.items]
    print(table(("ITEM", "KIND", "NAME", "MIME TYPE", "TOKENS", "SIZE"), rows, right=(0, 4, 5)))
    if lines:
        print("\nOutline:")
        print("\n".join(lines))
    return 0


def _cat(args: argparse.Namespace, settings: MemorySettings) -> int:
    with _reading(settings) as memory:
        found = memory.item(args.namespace, args.item)
        if found.kind in TEXT_KINDS:
            data = memory.text.load(args.namespace, args.item)
            if args.offset is not None:
                index = memory.text.token_index(args.namespace, args.item)
                if not 0 <= args.offset <= index.tokens:
                    raise InvalidArgumentError(
                        f"--offset {args.offset} is past the end: the item has {index.tokens} tokens"
                    )
                data = data[int(index.offsets[args.offset]) :] if args.offset < index.tokens else b""
            elif args.line is not None:
                if args.line < 1:
                    raise InvalidArgumentError("--line counts from 1")
                data = b"".join(data.splitlines(keepends=True)[args.line - 1 :])
        else:
            if args.offset is not None or args.line is not None:
                raise InvalidArgumentError(f"item {args.item} is {found.kind}, not text: --line and --offset need text")
            data = memory.storages[BlobArtifact].load(args.namespace, args.item)
    if args.output is not None:
        args.output.write_bytes(data)
        print(f"wrote {len(data):,} bytes to {args.output}", file=sys.stderr)
        return 0
    if found.kind not in TEXT_KINDS and sys.stdout.isatty():
        raise InvalidArgumentError(f"item {args.item} is {found.kind} ({found.mime_type}): write it with -o FILE")
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


#: How `memory grep` and `memory query` mark a sensitive output's lines (an `always` tool's, which the model's
#: searches across the memory leave out).
SENSITIVE_MARK = " (sensitive)"


def _grep(args: argparse.Namespace, settings: MemorySettings) -> int:
    with _reading(settings) as memory:
        # The command line reads every output, sensitive ones too (the model's memory_grep names them to read them).
        matches, truncated = memory.grep(args.pattern, args.namespace, args.max_matches, include_sensitive=True)
        sensitive = memory.catalog.sensitive()
    if args.json:
        found = [
            {"artifact_namespace": m.namespace, "item": m.item, "line": m.line, "offset": m.offset, "text": m.text}
            | ({"sensitive": True} if m.namespace in sensitive else {})
            for m in matches
        ]
        _print_json({"matches": found, "truncated": truncated})
        return 0 if matches else 1
    for m in matches:
        print(f"{m.namespace}{SENSITIVE_MARK if m.namespace in sensitive else ''}:{m.item}:{m.line}: {m.text}")
    if truncated:
        print(f"(stopped at {args.max_matches} matches: raise --max)", file=sys.stderr)
    return 0 if matches else 1


def _query(args: argparse.Namespace, settings: MemorySettings) -> int:
    held_by = holder(settings.directory)
    note = ""
    if held_by is None:
        try:
            # No background indexing: a query answers from the indexes as they are, and says what is missing.
            memory = TaskMemory.open(settings, tidy=False, resume_indexing=False)
        except MemoryLockedError:
            held_by = holder(settings.directory) or "unknown"
    if held_by is not None:
        note = (
            f"answered by words only: offprompt pid {held_by} holds this memory's vectors "
            "(stop it, or ask through its memory_query, to search by meaning too)"
        )
        memory = TaskMemory.open_readonly(settings)
    try:
        mode: SearchMode = "lexical" if held_by is not None else "hybrid"
        hits, _ = memory.query(args.text, args.namespace, args.top_k, None, mode, include_sensitive=True)
        sensitive = memory.catalog.sensitive()
        states = memory.text.index_state()
        scope = [args.namespace] if args.namespace else list(states)
        indexing = sorted(ns for ns in scope if ns in states and not _indexed(states[ns], mode))
    finally:
        memory.close()
    if args.json:
        results = [
            {"artifact_namespace": h.namespace, "item": h.item, "offset": h.offset, "score": h.score, "text": h.text}
            | ({"sensitive": True} if h.namespace in sensitive else {})
            for h in hits
        ]
        _print_json({"results": results, "mode": mode, "note": note or None, "indexing": indexing})
        return 0 if hits else 1
    if note:
        print(note, file=sys.stderr)
    for rank, h in enumerate(hits, start=1):
        mark = SENSITIVE_MARK if h.namespace in sensitive else ""
        print(f"[{rank}] {h.namespace}{mark} item {h.item} offset {h.offset} (score {h.score:.2f})\n{h.text}\n")
    if indexing:
        print(f"not fully indexed yet (its passages may be missing): {', '.join(indexing)}", file=sys.stderr)
    if not hits:
        print("no passages found", file=sys.stderr)
    return 0 if hits else 1


# -- writing -------------------------------------------------------------------


def _rm(args: argparse.Namespace, settings: MemorySettings) -> int:
    with _writing(settings, args.wait) as memory:
        deleted = [memory.delete(ns) for ns in args.namespace]
    if args.json:
        _print_json({"deleted": [_describe(r, settings.name, None) for r in deleted]})
        return 0
    for r in deleted:
        print(f"deleted {r.namespace} ({r.tool}: {len(r.items)} items, {r.tokens:,} tokens, {size(r.bytes)})")
    return 0


def _gc(args: argparse.Namespace, settings: MemorySettings) -> int:
    before = _disk_size(settings.directory)
    with _writing(settings, args.wait) as memory:
        dropped = memory.gc(_progress)
    freed = before - _disk_size(settings.directory)
    if args.json:
        _print_json({**dropped, "freed_bytes": freed})
        return 0
    print(
        f"dropped {len(dropped['expired'])} expired namespaces, {len(dropped['orphans'])} orphaned payloads, "
        f"{len(dropped['leftovers'])} leftover files; {size(max(freed, 0))} freed"
    )
    return 0


def _reindex(args: argparse.Namespace, settings: MemorySettings) -> int:
    """Drop the word and vector indexes and the records, and build them again from the raw texts, with progress."""
    directory = settings.directory
    with _locked(settings, args.wait):
        text = directory / "text"
        derived = [*text.glob("raw/*/*.embedded"), *text.glob("raw/*/*.embedding"), *text.glob("raw/*/*.records*")]
        for path in [*text.glob("lexical.sqlite3*"), *derived, text / "deleted.txt"]:
            path.unlink(missing_ok=True)
        for chroma in (directory / "chroma", text / "chroma"):
            shutil.rmtree(chroma, ignore_errors=True)
        if "chromadb" in sys.modules:  # a client this process opened before keeps the deleted store open
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
    # Opened again, the memory finds every item unindexed and queues it.
    with _writing(settings, args.wait, index=True) as memory:
        states = _reindexed(memory)
    total = sum(s.items for s in states.values())
    chunks = sum(s.chunks for s in states.values())
    embedded = sum(s.embedded_chunks for s in states.values())
    if args.json:
        _print_json({"items": total, "chunks": chunks, "embedded_chunks": embedded})
        return 0
    print(f"reindexed {total} items: {embedded}/{chunks} chunks embedded")
    return 0


def _reindexed(memory: TaskMemory) -> dict[str, IndexState]:
    """Wait for the indexers, saying how far they got whenever it changed: items chunked, then chunks embedded,
    counted from disk batch by batch (a long text's chunks count as they go, not when its last one is in)."""
    last: tuple[int, int, int] | None = None
    changed = time.monotonic()
    while True:
        _, to_embed = memory.text.backlog()
        states = memory.text.index_state()
        total = sum(s.items for s in states.values())
        now = (
            sum(s.chunked_items for s in states.values()),
            sum(s.embedded_chunks for s in states.values()),
            sum(s.chunks for s in states.values()),
        )
        if now != last:
            print(
                f"reindex: {now[0]}/{total} items chunked, {now[1]:,}/{now[2]:,} chunks embedded",
                file=sys.stderr,
                flush=True,
            )
            last, changed = now, time.monotonic()
        elif time.monotonic() - changed >= _REINDEX_QUIET_SECONDS:
            _say_why_quiet()
            changed = time.monotonic()
        if to_embed == 0:
            return states
        time.sleep(_REINDEX_POLL_SECONDS)


def _say_why_quiet() -> None:
    """No batch in a while: on a busy machine the niced embedder gets little CPU; say so, and what to set."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    print(
        f"reindex: no batch embedded in the last {_REINDEX_QUIET_SECONDS:g} s (load {load:.1f} on {cores} cores): "
        "the embedder runs below other work; `embedder_niceness: 0` in the config's offprompt block gives it an "
        "equal share",
        file=sys.stderr,
        flush=True,
    )


# -- every memory ----------------------------------------------------------------

_SIBLING = re.compile(r"^(?P<base>.+)-(?P<n>\d+)$")


def _disk_size(directory: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            with suppress(OSError):  # removed meanwhile
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _memory_row(directory: Path, names: set[str]) -> dict[str, Any]:
    catalog = Catalog(directory / "catalog.sqlite3", readonly=True)
    try:
        records = catalog.newest()
    finally:
        catalog.close()
    match = _SIBLING.match(directory.name)
    return {
        "memory_name": directory.name,
        "path": str(directory),
        "sibling_of": match["base"] if match and match["base"] in names else None,
        "bytes": _disk_size(directory),
        "namespaces": len(records),
        "newest": iso(records[0].created) if records else None,
        "oldest": iso(records[-1].created) if records else None,
        "newest_ts": records[0].created if records else None,
        "oldest_ts": records[-1].created if records else None,
        "holder_pid": holder(directory),
    }


def _memories_ls(args: argparse.Namespace, settings: MemorySettings) -> int:
    data_dir = settings.data_dir.expanduser()
    found = sorted(p for p in data_dir.glob("*/catalog.sqlite3")) if data_dir.is_dir() else []
    names = {p.parent.name for p in found}
    rows = [_memory_row(p.parent, names) for p in found]
    if args.json:
        shown = [{k: v for k, v in r.items() if not k.endswith("_ts")} for r in rows]
        _print_json({"data_dir": str(data_dir), "memories": shown})
        return 0
    if not rows:
        print(f"no memories in {data_dir}")
        return 0
    print(
        table(
            ("MEMORY", "SIZE", "NAMESPACES", "NEWEST", "OLDEST", "HELD BY", "SIBLING OF"),
            [
                (
                    r["memory_name"],
                    size(r["bytes"]),
                    r["namespaces"],
                    when(r["newest_ts"]),
                    when(r["oldest_ts"]),
                    f"pid {r['holder_pid']}" if r["holder_pid"] else "-",
                    r["sibling_of"] or "",
                )
                for r in rows
            ],
            right=(1, 2),
        )
    )
    count = f"{len(rows)} memor{'y' if len(rows) == 1 else 'ies'}"
    print(f"\n{count}, {size(sum(r['bytes'] for r in rows))} in {data_dir}")
    return 0


def _memories_rm(args: argparse.Namespace, settings: MemorySettings) -> int:
    target = replace(settings, name=args.name)
    with _locked(target, args.wait):
        freed = _disk_size(target.directory)
        shutil.rmtree(target.directory)
    if getattr(args, "json", False):
        _print_json({"deleted": args.name, "freed_bytes": freed})
    else:
        print(f'deleted memory "{args.name}" ({size(freed)})')
    return 0


_VERBS = {
    "ls": _ls,
    "show": _show,
    "cat": _cat,
    "grep": _grep,
    "query": _query,
    "rm": _rm,
    "gc": _gc,
    "reindex": _reindex,
}
