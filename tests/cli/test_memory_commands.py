"""`offprompt memory …` and `offprompt memories` on a memory filled through the proxy."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offprompt.artifacts import TextArtifact
from offprompt.memory.catalog import Catalog, NamespaceRecord, Origin
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

from ..support import REPO
from .fill import LINES, Session
from .run import run, run_json

pytestmark = pytest.mark.anyio


def counter_lines(count: int) -> str:
    """What tests/servers/counter.py's `lines` tool returns."""
    return "".join(f"2026-11-30T00:00:{i % 60:02d} INFO worker-{i % 7} handled request {i}\n" for i in range(count))


def flags(settings: MemorySettings) -> list[str]:
    return ["--data-dir", str(settings.data_dir), "--memory-name", settings.name]


async def test_reading_commands_show_what_the_proxy_stored(
    session: Session, memory_settings: MemorySettings, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = flags(memory_settings)
    ns = session.namespace

    code, out, _ = run(capfd, "memory", "ls", *f)
    assert code == 0
    assert out.splitlines()[0].split() == ["NAMESPACE", "TOOL", "KINDS", "TOKENS", "SIZE", "CREATED", "INDEXED"]
    assert ns in out
    assert "counter.lines" in out
    listed = run_json(capfd, "memory", "ls", *f)["namespaces"]
    assert [r["artifact_namespace"] for r in listed] == [ns]
    assert listed[0]["arguments"] == {"count": LINES}
    assert listed[0]["indexing"]["chunks"] > 0  # the chunker ran while the session was on

    code, out, _ = run(capfd, "memory", "show", ns, *f)
    assert code == 0
    assert "tool       counter.lines" in out
    assert f'arguments  {{"count": {LINES}}}' in out
    assert "ITEM  KIND" in out
    assert "from       counter\n" in out  # whose output it is: who may receive it as ⟦memory:…⟧
    shown = run_json(capfd, "memory", "show", ns, *f)
    assert [i["kind"] for i in shown["items"]] == ["text", "json"]
    assert shown["origin"] == {"server": "counter", "sensitive": False}

    expected = counter_lines(LINES)
    code, out, _ = run(capfd, "memory", "cat", ns, *f)
    assert out == expected
    code, out, _ = run(capfd, "memory", "cat", ns, "--line", str(LINES), *f)
    assert out == f"2026-11-30T00:00:{(LINES - 1) % 60:02d} INFO worker-{(LINES - 1) % 7} handled request {LINES - 1}\n"
    # --offset starts where memory_load's offset does: the grep answer named the token offset of request 599.
    grep = run_json(capfd, "memory", "grep", f"request {LINES - 1}$", *f)["matches"]
    assert [(m["artifact_namespace"], m["line"]) for m in grep] == [(ns, LINES)]
    assert f"offset {grep[0]['offset']}" in session.read_texts[1]
    code, out, _ = run(capfd, "memory", "cat", ns, "--offset", str(grep[0]["offset"]), *f)
    assert expected.endswith(out)
    assert out.rstrip().endswith(f"request {LINES - 1}")
    target = tmp_path / "out.txt"
    code, _, err = run(capfd, "memory", "cat", ns, "-o", str(target), *f)
    assert target.read_text() == expected
    assert f"wrote {len(expected.encode()):,} bytes" in err

    code, out, _ = run(capfd, "memory", "grep", "worker-3 handled request 10$", *f)
    assert out == f"{ns}:0:11: 2026-11-30T00:00:10 INFO worker-3 handled request 10\n"
    assert run(capfd, "memory", "grep", "no such line", *f)[0] == 1

    code, out, err = run(capfd, "memory", "query", "request 123", "--top-k", "1", *f, "--json")
    answer = json.loads(out)
    assert answer["mode"] == "hybrid"
    assert answer["note"] is None
    assert "handled request 123\n" in answer["results"][0]["text"]

    memories = run_json(capfd, "memories", "--data-dir", str(memory_settings.data_dir))["memories"]
    assert [(m["memory_name"], m["namespaces"], m["holder_pid"]) for m in memories] == [("cli", 1, None)]
    assert memories[0]["bytes"] > len(expected)


async def test_rm_and_memories_rm_free_the_space(
    session: Session, memory_settings: MemorySettings, capfd: pytest.CaptureFixture[str]
) -> None:
    f = flags(memory_settings)
    code, out, _ = run(capfd, "memory", "rm", session.namespace, *f)
    assert code == 0
    assert out.startswith(f"deleted {session.namespace} (counter.lines: 2 items")
    assert run_json(capfd, "memory", "ls", *f)["namespaces"] == []
    assert not list((memory_settings.directory / "text" / "raw").iterdir())
    code, _, err = run(capfd, "memory", "show", session.namespace, *f)
    assert code == 2
    assert f'no artifact_namespace "{session.namespace}"' in err

    code, out, _ = run(capfd, "memories", "rm", "cli", "--data-dir", str(memory_settings.data_dir))
    assert code == 0
    assert out.startswith('deleted memory "cli"')
    assert not memory_settings.directory.exists()
    code, _, err = run(capfd, "memory", "ls", *f)
    assert code == 2
    assert 'there is no memory "cli"' in err


def test_gc_drops_expired_orphans_and_leftovers_with_progress(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = MemorySettings(name="gc", data_dir=tmp_path / "data")
    memory = TaskMemory.open(settings)
    stored = [memory.store([TextArtifact(value=f"result {i}")], tool="t.x").namespace for i in range(31)]
    memory.close()
    db = sqlite3.connect(settings.directory / "catalog.sqlite3")
    with db:  # 30 of them are past their time to live
        db.executemany("UPDATE namespaces SET expires = 1 WHERE namespace = ?", [(ns,) for ns in stored[1:]])
    db.close()
    raw = settings.directory / "text" / "raw"
    (raw / "orphan00000000").mkdir()
    (raw / "orphan00000000" / "0.txt").write_text("a crash mid-store left this")
    leftover = raw / stored[0] / ".0.txt.999999.1.tmp"
    leftover.write_text("half written")

    code, out, err = run(capfd, "memory", "gc", *flags(settings))
    assert code == 0
    assert out.strip().startswith("dropped 30 expired namespaces, 1 orphaned payloads")
    assert "expired: 25/30" in err
    assert "expired: 30/30" in err
    assert not (raw / "orphan00000000").exists()
    assert not leftover.exists()
    assert [r["artifact_namespace"] for r in run_json(capfd, "memory", "ls", *flags(settings))["namespaces"]] == [
        stored[0]
    ]


def test_reindex_rebuilds_both_indexes_with_progress(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    settings = MemorySettings(name="re", data_dir=tmp_path / "data")
    memory = TaskMemory.open(settings)
    for i in range(3):
        memory.store(
            [TextArtifact(value=f"# Part {i}\n\nThe deploy of service {i} failed on a timeout.\n")], tool="t.x"
        )
    memory.close()  # before the embedder is done: reindex finishes it
    code, out, err = run(capfd, "memory", "reindex", *flags(settings))
    assert code == 0, err
    assert re.search(r"reindex: 3/3 items chunked, (\d+)/\1 chunks embedded\n$", err), err
    listed = run_json(capfd, "memory", "ls", *flags(settings))["namespaces"]
    assert all(r["indexing"]["embedded_chunks"] == r["indexing"]["chunks"] > 0 for r in listed)
    assert out.startswith("reindexed 3 items")


def test_reindex_counts_a_long_texts_chunks_as_they_are_embedded(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """One text of ~140 chunks: the progress lines count its chunks batch by batch (before, `0/1 embedded` until
    its last chunk was in), and `memory ls` counts what is in the dense index."""
    settings = MemorySettings(name="long", data_dir=tmp_path / "data")
    memory = TaskMemory.open(settings)
    memory.store([TextArtifact(value=counter_lines(700))], tool="t.log")
    memory.close()
    config = tmp_path / "offprompt.json"
    block = {"data_dir": str(settings.data_dir), "memory_name": "long", "embedder_niceness": 0}
    config.write_text(json.dumps({"mcpServers": {}, "offprompt": block}))
    code, _, err = run(capfd, "memory", "reindex", "--config", str(config))
    assert code == 0, err
    line = r"reindex: 1/1 items chunked, (\d+)/(\d+) chunks embedded"
    counts = [(int(a), int(b)) for a, b in re.findall(line, err)]
    total = counts[-1][1]
    assert total > 100
    assert counts[-1] == (total, total)
    assert any(0 < done < total for done, _ in counts), err  # seen part way, as the embedder went
    listed = run_json(capfd, "memory", "ls", *flags(settings))["namespaces"]
    assert listed[0]["indexing"]["embedded_chunks"] == listed[0]["indexing"]["chunks"] == total


def test_a_text_part_embedded_counts_its_embedded_chunks(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Stopped after its first slice of chunks (the memory closed meanwhile), a long text counts those as embedded
    in `memory ls`, not 0 until its last one is in."""
    settings = MemorySettings(name="part", data_dir=tmp_path / "data", embedder_niceness=0)
    memory = TaskMemory.open(settings)
    namespace = memory.store([TextArtifact(value=counter_lines(2500))], tool="t.log").namespace
    progress = settings.directory / "text" / "raw" / namespace / "0.embedding"
    while not progress.exists():  # the first batch is in the dense index
        memory.text.wait_indexed(0.05)
    memory.close(wait=60)  # after the batch it is on
    listed = run_json(capfd, "memory", "ls", *flags(settings))["namespaces"]
    indexing = listed[0]["indexing"]
    assert 0 < indexing["embedded_chunks"] < indexing["chunks"], indexing


def test_the_embedder_runs_at_the_niceness_set_in_the_config(tmp_path: Path) -> None:
    """`embedder_niceness` is applied as the embedder starts: its thread, and the model's threads it starts, run
    that far below the process (a fresh process: niceness is kept per thread, and lowered once)."""
    if not sys.platform.startswith("linux") or os.getpriority(os.PRIO_PROCESS, 0) > 19 - 3:
        return
    probe = textwrap.dedent(
        f"""
        import json, os, threading
        from pathlib import Path
        from offprompt.artifacts import TextArtifact
        from offprompt.memory.settings import MemorySettings
        from offprompt.memory.task_memory import TaskMemory

        memory = TaskMemory.open(MemorySettings(name="n", data_dir=Path({str(tmp_path)!r}), embedder_niceness=3))
        memory.store([TextArtifact(value="the deploy failed on a timeout\\n" * 40)], tool="t.x")
        assert memory.text.wait_indexed(600)
        found = {{}}
        for thread in threading.enumerate():
            stat = open(f"/proc/self/task/{{thread.native_id}}/stat").read()
            found[thread.name] = int(stat[stat.rindex(")") + 2 :].split()[16])
        memory.close()
        print(json.dumps({{"main": os.getpriority(os.PRIO_PROCESS, 0), "threads": found}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO / "server")},
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["threads"]["offprompt-embedder"] == found["main"] + 3, found
    assert found["threads"]["offprompt-chunker"] == found["main"], found  # a query waits for the chunker


def test_an_old_catalog_gains_the_usage_table_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE namespaces (namespace TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, "
        "owner TEXT NOT NULL DEFAULT '', created REAL NOT NULL, expires REAL);"
        "CREATE TABLE items (namespace TEXT NOT NULL, item INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,"
        " mime_type TEXT, tokens INTEGER NOT NULL, bytes INTEGER NOT NULL, meta TEXT NOT NULL,"
        " PRIMARY KEY (namespace, item));"
        "INSERT INTO namespaces VALUES ('old1', 'fs.read', '{}', '', 1.0, NULL);"
        "INSERT INTO items VALUES ('old1', 0, 'text', 'n', NULL, 7, 20, '{}');"
    )
    db.commit()
    db.close()
    readonly = Catalog(path, readonly=True)
    assert readonly.usage() == []  # read-only, the old file is read as it is
    readonly.close()
    assert [r.namespace for r in readonly_listing(path)] == ["old1"]  # no `shown` column: the arguments are read
    catalog = Catalog(path)
    catalog.add_usage({(100, "fs", "read", "stored"): (1, 20, 7, 3)})
    assert [r.namespace for r in catalog.newest()] == ["old1"]
    assert [(u.server, u.tool, u.tokens) for u in catalog.usage()] == [("fs", "read", 7)]
    catalog.add(NamespaceRecord("new1", "fs.write", {"content": "y" * 5_000}, "", 2.0, None, ()))
    new, old = catalog.newest(whole_arguments=False)
    assert (new.namespace, new.arguments_cut, old.namespace, old.arguments_cut) == ("new1", True, "old1", False)
    assert new.listed_arguments["content"].endswith("… [cut: 5,000 characters]")
    assert catalog.get("new1").arguments == {"content": "y" * 5_000}  # type: ignore[union-attr]
    catalog.close()


def readonly_listing(path: Path) -> list[NamespaceRecord]:
    catalog = Catalog(path, readonly=True)
    try:
        return catalog.newest(whole_arguments=False)
    finally:
        catalog.close()


def test_grep_and_query_read_sensitive_outputs_too_marked(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # The model's searches across the memory leave an `always` output out; the user's command line reads it, marked.
    settings = MemorySettings(name="sens", data_dir=tmp_path / "data")
    memory = TaskMemory.open(settings)
    secret = memory.store(
        [TextArtifact(value="the vault's rotation canary is due\n")], tool="vault.read", origin=Origin("vault", True)
    ).namespace
    plain = memory.store([TextArtifact(value="the release canary ships\n")], tool="notes.read").namespace
    memory.close()
    code, out, _ = run(capfd, "memory", "grep", "canary", *flags(settings))
    assert code == 0
    assert f"{secret} (sensitive):0:1: the vault's rotation canary is due" in out
    assert f"{plain}:0:1: the release canary ships" in out
    matches = run_json(capfd, "memory", "grep", "canary", *flags(settings))["matches"]
    assert {m["artifact_namespace"]: m.get("sensitive", False) for m in matches} == {secret: True, plain: False}
    results = run_json(capfd, "memory", "query", "rotation canary", *flags(settings))["results"]
    assert {r["artifact_namespace"]: r.get("sensitive", False) for r in results} == {secret: True, plain: False}
