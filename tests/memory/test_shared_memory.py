"""A memory in PostgreSQL that two memories (as two servers would) use at once: what one stores, the other reads,
greps, searches and deletes; TTL, quota and owners hold across them; PostgreSQL down is a clear error that goes
away when it is back."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable

import pytest

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.errors import NotFoundError, StoreUnavailableError
from offprompt.memory.task_memory import TaskMemory

from ..support import noise_png

pytestmark = pytest.mark.postgres

LOG = "\n".join(
    [f"2026-05-20 10:{n % 60:02d}:00 INFO request {n} served in {n % 17} ms" for n in range(400)]
    + ["2026-05-20 11:00:00 ERROR upstream reset: ERR_CONN_RESET while calling TimeoutExpired handler"]
    + [f"2026-05-20 11:{n % 60:02d}:01 INFO request {n} served" for n in range(400, 600)]
)


def test_what_one_server_stores_every_other_reads_greps_searches_and_deletes(
    open_memory: Callable[..., TaskMemory],
) -> None:
    a, b = open_memory(), open_memory()
    png = noise_png(64, 64)
    ref = a.store([TextArtifact(value=LOG), ImageArtifact(value=png, mime_type="image/png")], tool="logs.tail")
    ns = ref.namespace

    assert ns in [r.namespace for r in b.recent()]
    whole = "".join(b.window(ns, 0, o, 500).text for o in range(0, ref.record.items[0].tokens, 500))
    assert whole == LOG  # byte for byte, through the other server
    assert b.load(ns, 1).value == png
    matches, _ = b.grep(r"ERR_CONN_\w+", ns)
    assert [m.line for m in matches] == [401]
    hits, _ = b.query("ERR_CONN_RESET upstream", ns, mode="lexical")
    assert "ERR_CONN_RESET" in hits[0].text
    assert hits[0].line <= 401
    assert b.outline(ns)  # the outline made at store time travels with the text

    b.delete(ns)
    with pytest.raises(NotFoundError):
        a.window(ns, 0, 0, 10)
    assert a.text.sweep_copies(min_age=0) == [ns]  # type: ignore[attr-defined]  # a's copy of b's deleted text
    assert ns not in [r.namespace for r in a.recent()]
    assert a.grep("ERR_CONN_RESET")[0] == []
    assert a.query("ERR_CONN_RESET", mode="lexical")[0] == []


def test_a_log_stored_by_one_server_is_selected_over_its_records_by_another(
    open_memory: Callable[..., TaskMemory],
) -> None:
    a, b = open_memory(), open_memory()
    ns = a.store([TextArtifact(value=LOG)], tool="logs.tail", outline_tokens=400).namespace
    errors = b.select(ns, 'map(select(.level == "ERROR")) | map(.line)')
    assert errors.text == "[401]"  # its records, made by the server that asked
    assert b.outline(ns)[0].title.startswith("Records: 601 events of a log")


def test_a_namespace_of_one_owner_is_hidden_from_another_on_every_server(
    open_memory: Callable[..., TaskMemory],
) -> None:
    a, b = open_memory(), open_memory()
    ns = a.store([TextArtifact(value="alice's vault code is quartzlily")], tool="t.x", owner="alice").namespace
    with pytest.raises(NotFoundError):
        b.window(ns, 0, 0, 10, owner="bob")
    assert b.recent(owner="bob") == []
    assert b.grep("quartzlily", owner="bob")[0] == []
    assert b.text.wait_chunked([ns], 30)
    assert b.query("quartzlily", owner="bob", mode="lexical")[0] == []
    assert b.query("quartzlily", owner="alice", mode="lexical")[0][0].namespace == ns


def test_ttl_and_quota_hold_across_servers(open_memory: Callable[..., TaskMemory]) -> None:
    short, other = open_memory(ttl_seconds=0.5), open_memory()
    gone = short.store([TextArtifact(value="soon expired")], tool="t.x").namespace
    time.sleep(0.6)
    other.expire()
    with pytest.raises(NotFoundError):
        short.window(gone, 0, 0, 10)
    # Over the quota, the oldest goes, whichever server stored it.
    first = short.store([TextArtifact(value=LOG)], tool="t.x")
    size = first.record.bytes + 4 * (first.record.tokens + 1)
    small = open_memory(max_bytes=int(2.5 * size))
    second = small.store([TextArtifact(value=LOG + " ")], tool="t.x").namespace
    third = small.store([TextArtifact(value=LOG + "  ")], tool="t.x").namespace
    kept = {r.namespace for r in short.recent()}
    assert first.namespace not in kept
    assert {second, third} <= kept


def test_the_indexing_queue_is_drained_by_the_servers_together(open_memory: Callable[..., TaskMemory]) -> None:
    a, b = open_memory(), open_memory()
    stored = [a.store([TextArtifact(value=f"{LOG}\nmarker{n}x")], tool="t.x").namespace for n in range(6)]
    assert b.text.wait_indexed(60)
    state = b.text.index_state()
    assert all(state[ns].chunked_items == 1 for ns in stored)
    for n, ns in enumerate(stored):
        assert b.query(f"marker{n}x", None, mode="lexical")[0][0].namespace == ns


def test_a_text_deleted_while_another_server_indexes_it_is_found_by_no_search(
    open_memory: Callable[..., TaskMemory],
) -> None:
    # No indexing threads: this test plays the indexer's steps itself, with the delete in between.
    indexer, other = open_memory(index=False), open_memory(index=False)
    ns = indexer.store([TextArtifact(value="the zebrafinch ledger, soon deleted")], tool="t.x").namespace
    claim = indexer.text._claim("chunk")  # type: ignore[attr-defined]
    assert claim is not None
    assert claim.namespace == ns
    other.delete(ns)  # while the indexer holds the job
    indexer.text._work(claim)  # type: ignore[attr-defined]
    assert ns not in indexer.text._lexical.namespaces()  # type: ignore[attr-defined]
    assert indexer.query("zebrafinch ledger", None, mode="lexical")[0] == []
    assert not (tmp := indexer.text._raw / ns).exists(), tmp  # type: ignore[attr-defined]


class _Gate:
    """A TCP relay to PostgreSQL that can be cut and restored: an outage, as a server sees one."""

    def __init__(self, port: int) -> None:
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._pipes: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self._listener.accept()
            if not self._open.is_set():
                client.close()
                continue
            server = socket.create_connection(("127.0.0.1", self._target))
            self._pipes += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self._open.clear()
        for s in self._pipes:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self._pipes.clear()

    def restore(self) -> None:
        self._open.set()


def test_postgres_down_is_a_clear_error_per_call_and_the_memory_serves_again_when_it_is_back(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str
) -> None:
    from urllib.parse import urlsplit

    target = urlsplit(postgres_dsn)
    gate = _Gate(target.port or 5432)
    dsn = postgres_dsn.replace(f":{target.port}", f":{gate.port}", 1)
    memory = open_memory(postgres=dsn)
    ns = memory.store([TextArtifact(value="before the outage")], tool="t.x").namespace

    gate.cut()
    for call in (lambda: memory.recent(), lambda: memory.store([TextArtifact(value="during")], tool="t.x")):
        with pytest.raises(StoreUnavailableError) as failed:
            call()
        message = str(failed.value)
        assert "PostgreSQL" in message
        assert "can't be reached" in message
        assert "call again" in message

    gate.restore()
    assert [r.namespace for r in memory.recent()] == [ns]
    assert memory.window(ns, 0, 0, 10).text == "before the outage"
    after = memory.store([TextArtifact(value="after the outage")], tool="t.x").namespace
    assert memory.text.wait_chunked([after], 30)
    assert memory.query("outage", None, mode="lexical")[0]


@pytest.mark.anyio
async def test_over_mcp_postgres_down_is_an_error_result_that_says_what_to_do_and_then_it_serves_again(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str
) -> None:
    from urllib.parse import urlsplit

    from mcp import Client

    from offprompt.serve.app import build_server

    target = urlsplit(postgres_dsn)
    gate = _Gate(target.port or 5432)
    memory = open_memory(postgres=postgres_dsn.replace(f":{target.port}", f":{gate.port}", 1))
    ns = memory.store([TextArtifact(value="kept through the outage")], tool="t.x").namespace
    async with Client(build_server(memory)) as client:
        gate.cut()
        for tool, arguments in (("memory_list", {}), ("memory_load", {"artifact_namespace": ns})):
            failed = await client.call_tool(tool, arguments)
            assert failed.is_error
            text = failed.content[0].text  # type: ignore[union-attr]
            assert "PostgreSQL" in text
            assert "call again" in text
            assert "kept through" not in text
        gate.restore()
        loaded = await client.call_tool("memory_load", {"artifact_namespace": ns})
        assert not loaded.is_error
        assert loaded.content[0].text == "kept through the outage"  # type: ignore[union-attr]


def test_with_a_chroma_server_texts_are_embedded_through_the_queue_and_found_by_meaning_through_every_server(
    open_memory: Callable[..., TaskMemory], chroma_url: str
) -> None:
    a, b = open_memory(chroma="http", chroma_url=chroma_url), open_memory(chroma="http", chroma_url=chroma_url)
    cooking = "To caramelise onions, cook them slowly in butter over low heat for forty minutes until brown."
    network = "The TLS handshake failed because the server certificate had expired last Tuesday."
    first = a.store([TextArtifact(value=cooking)], tool="t.x").namespace
    second = b.store([TextArtifact(value=network)], tool="t.x").namespace
    assert a.text.wait_indexed(120)
    for memory in (a, b):
        state = memory.text.index_state()
        assert state[first].embedded_chunks == state[first].chunks > 0
        hits, indexing = memory.query("how do I brown sliced onions in a pan", None, mode="dense")
        assert hits[0].namespace == first
        assert indexing == []
        hits, _ = memory.query("an outdated security certificate broke the connection", None, mode="hybrid")
        assert hits[0].namespace == second
    b.delete(first)
    hits, _ = a.query("how do I brown sliced onions in a pan", None, mode="dense")
    assert first not in {h.namespace for h in hits}


def test_another_server_lists_a_huge_call_cut_and_shows_it_whole(open_memory: Callable[..., TaskMemory]) -> None:
    a, b = open_memory(), open_memory()
    huge = {"content": "x" * 1_000_000, "path": "/srv/out.txt"}
    ns = a.store([TextArtifact(value="stored")], tool="fs.write", arguments=huge).namespace
    [listed] = [r for r in b.recent() if r.namespace == ns]
    assert listed.arguments_cut
    assert len(str(listed.arguments)) < 1_000  # the listing read no megabyte
    assert listed.listed_arguments["content"].endswith("… [cut: 1,000,000 characters]")
    assert b.get(ns).arguments == huge
