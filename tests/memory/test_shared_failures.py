"""A shared memory when what it stands on fails: PostgreSQL restarting under it, credentials it refuses, an
indexer stalled or stopped past its lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.errors import ConfigError
from offprompt.memory.storage.pg import schema_name
from offprompt.memory.task_memory import TaskMemory

from ..chroma_server import ChromaServer, TokenGuard

pytestmark = pytest.mark.postgres


def _end_every_other_connection(dsn: str) -> int:
    """What a PostgreSQL restart does to the connections a server holds: ends each of them, as an administrator."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'"
        ).fetchall()
    return len(rows)


def test_after_postgres_ends_every_connection_the_next_call_of_each_server_succeeds(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str
) -> None:
    a, b = open_memory(), open_memory()
    ns = a.store([TextArtifact(value="stored before the restart")], tool="t.x").namespace
    assert b.window(ns, 0, 0, 10).text == "stored before the restart"  # each server now holds pooled connections

    assert _end_every_other_connection(postgres_dsn) >= 2

    # No call fails: the pool finds its connections dead before handing them out and connects again.
    assert ns in [r.namespace for r in b.recent()]
    after = b.store([TextArtifact(value="stored after the restart")], tool="t.x").namespace
    assert a.window(after, 0, 0, 10).text == "stored after the restart"
    assert ns in [r.namespace for r in a.recent()]


def test_a_login_postgres_refuses_says_to_fix_the_dsn_and_not_that_it_reconnects(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str
) -> None:
    parts = urlsplit(postgres_dsn)
    wrong = urlunsplit(parts._replace(netloc=f"nosuchrole:wrong-password@{parts.hostname}:{parts.port}"))
    with pytest.raises(ConfigError) as refused:
        open_memory(postgres=wrong)
    message = str(refused.value)
    assert 'role "nosuchrole" does not exist' in message
    assert 'Fix the user, password or database name in "postgres"' in message
    assert "by itself" not in message
    assert "wrong-password" not in message  # the DSN is shown with its password hidden


def _job(dsn: str, schema: str, namespace: str) -> tuple[str | None, int, int] | None:
    """The indexing job of a namespace as PostgreSQL has it: owner, times taken, chunks done."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT owner, taken, done FROM "{schema}".jobs WHERE namespace = %s',
            (namespace,),
        ).fetchone()
    return None if row is None else (row[0], int(row[1]), int(row[2]))


def _until(condition: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


#: A text of some 80 chunks: three embedding batches (32 chunks), within one slice (256).
MANY_CHUNKS = "\n\n".join(
    f"Section {n}. The quarterly report of depot {n} lists {n * 7} crates of copper fittings, {n % 13} late "
    f"deliveries and a note that the loading bay {n % 5} was closed for repairs on day {n % 28}."
    for n in range(270)
)


@pytest.fixture
def held_writes(chroma_server: ChromaServer) -> Iterator[TokenGuard]:
    """The Chroma server behind a relay that can hold its vector writes."""
    with TokenGuard(chroma_server.port, None).running() as relay:
        yield relay


@pytest.fixture
def short_lease(monkeypatch: pytest.MonkeyPatch) -> float:
    from offprompt.memory.storage import pg_text

    monkeypatch.setattr(pg_text, "LEASE_SECONDS", 1.0)
    return 1.0


def test_a_job_stays_its_holders_while_a_batch_outlasts_the_lease_and_chunking_goes_on_meanwhile(
    open_memory: Callable[..., TaskMemory], postgres_dsn: str, held_writes: TokenGuard, short_lease: float
) -> None:
    holder = open_memory(chroma="http", chroma_url=held_writes.url)
    schema = holder.text._db.schema  # type: ignore[attr-defined]
    held_writes.writes_held.set()  # the holder's first batch stays inside its write to Chroma
    held_writes.hold_only = b"copper fittings"  # only this text's: the other server's text embeds freely
    ns = holder.store([TextArtifact(value=MANY_CHUNKS)], tool="t.x").namespace
    _until(lambda: (job := _job(postgres_dsn, schema, ns)) and job[0] and job[1] >= 2, 120, "never embedding")
    taken = _job(postgres_dsn, schema, ns)  # the holder's, claimed for its embedding
    assert taken is not None
    time.sleep(3 * short_lease)  # a lease renewed only between batches would have run out by now
    other = open_memory(chroma="http", chroma_url=held_writes.url)

    # Many leases long inside one batch: the heartbeat keeps the job the holder's, the other server waits.
    late = other.store([TextArtifact(value="the zebrafinch ledger, stored while embedding stalls")], tool="t.x")
    assert other.text.wait_chunked([late.namespace], 30)  # type: ignore[attr-defined]  # words never wait
    assert other.query("zebrafinch ledger", late.namespace, mode="lexical")[0]
    time.sleep(5 * short_lease)
    now = _job(postgres_dsn, schema, ns)
    assert now is not None
    assert (now[0], now[1]) == (taken[0], taken[1]), "the job changed hands while its holder worked on it"

    held_writes.release_writes()
    assert holder.text.wait_indexed(120)  # type: ignore[attr-defined]
    state = other.text.index_state()  # type: ignore[attr-defined]
    assert state[ns].embedded_chunks == state[ns].chunks > 2 * 32


HOLDER = """
import sys, time
from pathlib import Path
from offprompt.artifacts import TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
name, data_dir, dsn, chroma_url, text_file = sys.argv[1:]
settings = MemorySettings(name=name, data_dir=Path(data_dir), postgres=dsn, chroma="http", chroma_url=chroma_url)
memory = TaskMemory.open(settings)
ref = memory.store([TextArtifact(value=open(text_file).read())], tool="t.x")
print(ref.namespace, flush=True)
time.sleep(3600)
"""


def test_a_holder_stopped_past_its_lease_is_taken_over_from_its_last_batch_and_writes_nothing_after(
    tmp_path: Path,
    open_memory: Callable[..., TaskMemory],
    postgres_dsn: str,
    memory_name: str,
    held_writes: TokenGuard,
) -> None:
    text_file = tmp_path / "text.txt"
    text_file.write_text(MANY_CHUNKS)
    env = {**os.environ, "OFFPROMPT_JOB_LEASE_SECONDS": "2"}
    command = [sys.executable, "-c", HOLDER, memory_name, str(tmp_path / "holder"), postgres_dsn, held_writes.url]
    held_writes.hold_after_writes = 1  # the holder's first batch goes in; its second waits at the relay
    holder = subprocess.Popen([*command, str(text_file)], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert holder.stdout is not None
        ns = holder.stdout.readline().strip()
        assert ns, "the holder did not store its text"
        schema = schema_name(memory_name)
        _until(held_writes.write_waiting.is_set, 180, "the holder never wrote a second batch")
        _until(lambda: (job := _job(postgres_dsn, schema, ns)) is not None and job[2] > 0, 10, "no batch recorded")
        holder.send_signal(signal.SIGSTOP)  # inside its second batch, its first one recorded
        recorded = _job(postgres_dsn, schema, ns)
        assert recorded is not None
        held_writes.release_writes()  # its pending write reaches Chroma while it sleeps: the same vectors

        # Its lease runs out; another server takes the job and goes on from the batch recorded.
        taker = open_memory(chroma="http", chroma_url=held_writes.url)
        _until(lambda: (job := _job(postgres_dsn, schema, ns)) is None or job[0] != recorded[0], 60, "not taken")
        taken = _job(postgres_dsn, schema, ns)
        assert taken is None or taken[2] >= recorded[2]  # resumed, not started over
        assert taker.text.wait_indexed(180)  # type: ignore[attr-defined]
        state = taker.text.index_state()  # type: ignore[attr-defined]
        assert state[ns].embedded_chunks == state[ns].chunks

        holder.send_signal(signal.SIGCONT)  # the old holder wakes inside its batch, its lease long gone
        time.sleep(3)
        assert _job(postgres_dsn, schema, ns) is None, "the old holder wrote its job back"
        hits, _ = taker.query("loading bay closed for repairs", ns, mode="dense")
        assert hits
    finally:
        holder.kill()
        holder.wait()


def _copies_bytes(memory: TaskMemory) -> int:
    raw = memory.text._raw  # type: ignore[attr-defined]
    return sum(f.stat().st_size for f in raw.rglob("*") if f.is_file())


def test_a_servers_local_copies_stay_within_cache_bytes_and_what_went_out_is_read_back_whole(
    open_memory: Callable[..., TaskMemory],
) -> None:
    writer = open_memory(index=False)
    texts = [f"text {n}\n" + "\n".join(f"line {i} of text {n}: {'x' * 40}" for i in range(400)) for n in range(6)]
    stored = [writer.store([TextArtifact(value=t)], tool="t.x").namespace for t in texts]
    limit = 3 * len(texts[0].encode()) * 2  # room for about three texts with their indexes
    reader = open_memory(index=False, cache_bytes=limit)
    for ns, text in zip(stored, texts, strict=True):
        assert reader.load(ns, 0).value == text
        assert _copies_bytes(reader) <= limit
    assert reader.load(stored[0], 0).value == texts[0]  # long gone from the copies: fetched again, whole
    assert reader.grep("line 399 of text 1", stored[1])[0]  # and every read fetches again what it needs


def test_a_copy_being_read_is_not_evicted_by_reads_that_fill_the_cache_meanwhile(
    open_memory: Callable[..., TaskMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_memory(index=False)
    texts = [f"text {n}\n" + "\n".join(f"line {i} of text {n}: {'x' * 40}" for i in range(400)) for n in range(4)]
    stored = [writer.store([TextArtifact(value=t)], tool="t.x").namespace for t in texts]
    reader = open_memory(index=False, cache_bytes=2 * len(texts[0].encode()))  # room for about one text
    grep = reader.text._texts._grep  # type: ignore[attr-defined]
    real = grep.grep

    def others_read_meanwhile(*args: object, **kwargs: object) -> object:
        for ns in stored[1:]:  # another caller's reads, while this grep's worker starts: they fill the cache
            reader.load(ns, 0)
        return real(*args, **kwargs)

    monkeypatch.setattr(grep, "grep", others_read_meanwhile)
    matches, _ = reader.grep("line 399 of text 0", stored[0])
    assert [m.line for m in matches] == [401]  # the copy the grep held stayed; it was not silently skipped


INDEX_CONFIG = """{{"offprompt": {{"memory_name": "{name}", "data_dir": "{data}", "postgres": "{dsn}",
  "chroma": {{"mode": "http", "url": "{url}"}}}}, "mcpServers": {{}}}}"""


def test_a_replica_that_does_not_index_never_loads_the_model_while_offprompt_index_embeds_its_texts(
    tmp_path: Path,
    open_memory: Callable[..., TaskMemory],
    postgres_dsn: str,
    memory_name: str,
    chroma_server: ChromaServer,
) -> None:
    replica = open_memory(chroma="http", chroma_url=chroma_server.url, indexer=False)
    config = tmp_path / "indexer.json"
    config.write_text(
        INDEX_CONFIG.format(name=memory_name, data=tmp_path / "indexer", dsn=postgres_dsn, url=chroma_server.url)
    )
    indexer = subprocess.Popen(
        [str(Path(sys.executable).with_name("offprompt")), "index", "--config", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ns = replica.store([TextArtifact(value=MANY_CHUNKS[:2000])], tool="t.x").namespace
        assert replica.query("loading bay closed for repairs", ns, mode="lexical")[0]  # chunked by the replica
        assert replica.text.wait_indexed(240)  # type: ignore[attr-defined]
        state = replica.text.index_state()  # type: ignore[attr-defined]
        assert state[ns].embedded_chunks == state[ns].chunks  # by the indexer
        assert replica.text._dense._function is None  # type: ignore[attr-defined]  # the replica built no model
        hits, _ = replica.query("which depot had its loading bay shut for repair work", ns, mode="dense")
        assert hits  # a question by meaning loads it, to embed the question
    finally:
        indexer.send_signal(signal.SIGTERM)
        _, errors = indexer.communicate(timeout=60)
    assert indexer.returncode == 0, errors
    assert "indexing the shared memory" in errors


def test_offprompt_index_on_a_memory_of_files_says_it_needs_postgres(tmp_path: Path) -> None:
    config = tmp_path / "files.json"
    config.write_text('{"offprompt": {"data_dir": "%s"}, "mcpServers": {}}' % (tmp_path / "data"))
    done = subprocess.run(
        [str(Path(sys.executable).with_name("offprompt")), "index", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert 'set "postgres" in the offprompt block' in done.stderr


def test_closing_a_shared_memory_that_indexes_does_not_wait_out_its_lease_heartbeat(
    open_memory: Callable[..., TaskMemory],
) -> None:
    memory = open_memory()
    memory.store([TextArtifact(value="a text to index")], tool="t.x")
    assert memory.text.wait_indexed(60)  # type: ignore[attr-defined]
    memory.close()  # (closed again by the fixture: a second close is harmless)
    alive = [t.name for t in memory.text._threads if t.is_alive()]  # type: ignore[attr-defined]
    assert alive == [], "indexing threads outlived close: the stop waited for them, and they still run"
