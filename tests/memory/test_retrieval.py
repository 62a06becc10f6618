"""memory_query finds the answering passage: exact identifiers, paraphrases, all three modes, before and after
the embeddings are done; texts still read back byte for byte; the embedding function is a remembered choice."""

from __future__ import annotations

import _pyio
import json
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from chromadb.api.types import Documents, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function
from mcp import Client

from offprompt.artifacts import TextArtifact, from_block
from offprompt.errors import ConfigError, IncompatibleStoreError
from offprompt.memory.settings import MemorySettings
from offprompt.memory.storage import EmbeddingSpec, text_query
from offprompt.memory.storage import text as text_storage
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

from ..support import DOCS, chunker_held, meta, text_of
from ..word_hash import WordHashEmbedding

pytestmark = pytest.mark.anyio


async def query(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("memory_query", arguments)
    assert not result.is_error, text_of(result)
    return meta(result)


def wait(memory: TaskMemory) -> None:
    assert memory.text.wait_indexed(timeout=300)  # type: ignore[attr-defined]


def access_log(special: dict[int, str], count: int = 400) -> str:
    """A web server's log about connections failing in every way but the one the test looks for."""
    troubles = [
        "upstream connection reset by peer while reading response header",
        "connection refused while connecting to upstream",
        "client closed connection while waiting for request",
        "upstream timed out (110: Connection timed out) while reading upstream",
        "no live upstreams while connecting to upstream",
        "SSL handshake failed: peer closed connection in SSL handshake",
    ]
    lines = [
        f"2026-11-30 12:{i // 60 % 60:02d}:{i % 60:02d} [error] worker {i % 9}: *{1000 + i} {troubles[i % 6]}, "
        f'client: 10.0.{i % 5}.{i % 200}, request: "GET /api/items/{i} HTTP/1.1"'
        for i in range(count)
    ]
    for at, line in special.items():
        lines[at] = line
    return "\n".join(lines) + "\n"


async def test_a_query_naming_an_identifier_finds_its_chunk_first_in_hybrid_mode(
    memory: TaskMemory, client: Client
) -> None:
    log = access_log(
        {
            97: "2026-11-30 12:01:37 [crit] worker 3: proxy failed with ERR_CONN_RESET after 3 retries",
            251: "2026-11-30 12:04:11 [emerg] cannot load certificate key /etc/nginx/ssl/api.example.key",
        }
    )
    logs = memory.store([from_block(mt.TextContent(text=log))], tool="ssh.tail")
    code = (DOCS / "code_subprocess.py").read_text()
    memory.store([from_block(mt.TextContent(text=code))], tool="fs.read_file")
    wait(memory)

    for question, identifier in [
        ("why did the connection to the backend break with ERR_CONN_RESET?", "ERR_CONN_RESET"),
        ("which key file could not be read: /etc/nginx/ssl/api.example.key", "/etc/nginx/ssl/api.example.key"),
        ("what does communicate() raise as TimeoutExpired when the child takes too long?", "TimeoutExpired"),
    ]:
        found = await query(client, query=question, mode="hybrid")
        best = found["results"][0]
        assert identifier in best["text"], (question, best["text"][:200])
    # The identifier alone, scoped to the log, as one would grep for it.
    found = await query(client, query="ERR_CONN_RESET", artifact_namespace=logs.namespace)
    assert "ERR_CONN_RESET" in found["results"][0]["text"]


STORIES = {
    "Kitchen": "Whisk the eggs with sugar until pale, fold in the flour, and bake the sponge for twenty minutes. "
    "Let it cool on a wire rack before you cut it, or the crumb turns gummy. A pinch of salt lifts the flavour.",
    "Garden": "Prune the roses in late winter, just above an outward-facing bud, to shape the bush. "
    "Cut out dead and crossing stems first. Feed them with compost in spring and water at the base in summer.",
    "Garage": "Change the engine oil every five thousand miles so the motor keeps running smoothly. "
    "Swap the filter at the same time, check the level on the dipstick, and top it up with the grade in the manual.",
    "Sky": "Saturn's rings are made mostly of ice particles, with a smaller amount of rocky debris. "
    "They are wide but astonishingly thin, and a small telescope shows them from Earth on a clear night.",
    "Money": "A bond pays a fixed coupon twice a year until it matures and the principal is repaid. "
    "When interest rates rise, the price of existing bonds falls, since new ones pay more.",
    "Music": "The violin is tuned in fifths: G, D, A and E, from the lowest string to the highest. "
    "Players tune the A first, against a tuning fork or the oboe, then the others from it.",
    "Health": "Adults need seven to nine hours of sleep each night for memory and mood. "
    "Keep the bedroom dark and cool, and put screens away an hour before bed.",
    "Travel": "Pack a universal plug adapter; sockets differ between countries and continents. "
    "Check the voltage too: a hair dryer made for one country may burn out in another.",
}


def stories_text() -> str:
    return "".join(f"## {title}\n\n{body}\n\n" for title, body in STORIES.items())


async def test_a_paraphrase_with_no_word_of_the_passage_finds_it_in_the_top_five(
    memory: TaskMemory, client: Client
) -> None:
    ref = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
    wait(memory)
    question = "How often should a vehicle's lubricant be replaced?"
    passage = STORIES["Garage"]
    words = set(re.findall(r"\w+", passage.lower())) | {"garage"}
    assert not {"often", "vehicle", "vehicles", "lubricant", "replaced", "replace"} & words  # no word in common

    lexical = await query(client, query=question, mode="lexical", artifact_namespace=ref.namespace)
    assert all(passage not in r["text"] for r in lexical["results"])  # so words alone can't find it
    for mode in ("hybrid", "dense"):
        found = await query(client, query=question, mode=mode, artifact_namespace=ref.namespace)
        top = [r["text"] for r in found["results"][:5]]
        assert any(passage in t for t in top), (mode, top)


async def test_words_are_searchable_before_the_embeddings_are_done(memory: TaskMemory, client: Client) -> None:
    log = access_log({4321: "2026-11-30 13:12:01 [alert] disk quota exceeded on volume VOL_7F3A_DATA"}, count=6000)
    ref = memory.store([from_block(mt.TextContent(text=log))], tool="ssh.tail")  # about a minute of embedding
    for mode in ("lexical", "hybrid"):  # naming the namespace waits the second it takes to reach the word index
        found = await query(
            client, query="what happened to VOL_7F3A_DATA?", mode=mode, artifact_namespace=ref.namespace
        )
        assert "VOL_7F3A_DATA" in found["results"][0]["text"]
        assert found["indexing"] == [ref.namespace] or mode == "lexical"
    # Chunked by now on an idle machine; under load the query's wait for the chunker can run out first, and the
    # answer then says it ranked the text as stored (also right, and not what this line checks).
    assert memory.text.wait_chunked([ref.namespace], 120)
    hybrid = await client.call_tool("memory_query", {"query": "disk quota", "artifact_namespace": ref.namespace})
    assert "Its passages that match by meaning may be missing" in text_of(hybrid)  # its words are all in
    lexical = await query(client, query="VOL_7F3A_DATA", mode="lexical")
    assert lexical["indexing"] == []  # all its words are in already
    dense = await client.call_tool("memory_query", {"query": "disk quota", "mode": "dense"})
    assert "Still indexing" in text_of(dense)


def test_the_embedder_waits_while_a_text_stored_meanwhile_is_chunked(
    memory: TaskMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A query waits for the chunker; the model's threads, embedding an earlier text, would take the cores it needs.
    entered, release = threading.Event(), threading.Event()
    real_chunk = text_storage.chunking.chunk

    def chunk_held(data: bytes, *args: Any, **kwargs: Any) -> Any:
        if data.startswith(b"HELD"):
            entered.set()
            release.wait(120)
        return real_chunk(data, *args, **kwargs)

    monkeypatch.setattr(text_storage.chunking, "chunk", chunk_held)
    dense = memory.text._dense  # type: ignore[attr-defined]
    batches: list[int] = []
    real_embed = dense.embed
    monkeypatch.setattr(dense, "embed", lambda texts: batches.append(len(texts)) or real_embed(texts))
    memory.store([from_block(mt.TextContent(text=access_log({}, count=6000)))], tool="ssh.tail")
    deadline = time.monotonic() + 120
    while not batches and time.monotonic() < deadline:
        time.sleep(0.05)
    assert batches, "the embedder never started"
    held = memory.store([TextArtifact(value="HELD while the log embeds")], tool="notes.read").namespace
    try:
        assert entered.wait(60)
        before = len(batches)
        watch = time.monotonic() + 5  # long enough for several batches of 32, were the embedder going on
        while len(batches) < before + 3 and time.monotonic() < watch:
            time.sleep(0.05)
        during = len(batches) - before
    finally:
        release.set()
    assert memory.text.wait_chunked([held], 60)  # type: ignore[attr-defined]
    assert during <= 1, f"{during} batches were embedded while a stored text waited for the chunker"
    deadline = time.monotonic() + 120
    while len(batches) == before + during and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(batches) > before + during, "the embedder did not go on once the text was chunked"


async def test_a_query_over_the_whole_memory_answers_without_waiting_for_others_writes(
    memory: TaskMemory, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_query, "CHUNKING_WAIT_SECONDS", 3600.0)  # were it to wait, it would wait for good
    earlier = memory.store([TextArtifact(value="Saturn's rings are ice and rock.")], tool="space.facts").namespace
    assert memory.text.wait_chunked(None, 60)  # type: ignore[attr-defined]
    with chunker_held(memory):
        other = memory.store([TextArtifact(value="Saturn has 146 known moons.")], tool="space.facts").namespace
        with anyio.fail_after(60):  # a guard against hanging, not a measure: the answer comes at once or never
            result = await client.call_tool("memory_query", {"query": "Saturn", "mode": "lexical"})
            phrasings = {"query": "Saturn", "queries": ["rings"], "mode": "lexical"}
            fused = await client.call_tool("memory_query", phrasings)  # several phrasings don't wait either
    found = meta(result)
    # Both answer: the indexed text from the index, the other ranked on the spot (it is not indexed yet).
    assert sorted(r["artifact_namespace"] for r in found["results"]) == sorted([earlier, other])
    assert found["indexing"] == [other]
    assert f"Still indexing: {other}. Its passages here were ranked by their words" in text_of(result)
    assert sorted(r["artifact_namespace"] for r in meta(fused)["results"]) == sorted([earlier, other])
    assert meta(fused)["indexing"] == [other]
    named = await query(client, query="Saturn", mode="lexical", artifact_namespace=other)  # waits for its own
    assert [r["artifact_namespace"] for r in named["results"]] == [other]


async def test_each_mode_answers_with_the_documented_fields(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
    wait(memory)
    for mode in ("hybrid", "dense", "lexical"):
        found = await query(client, query="tuning a string instrument", mode=mode, top_k=3)
        assert set(found) == {"results", "more", "indexing"}
        assert 1 <= len(found["results"]) <= 3
        for r in found["results"]:
            assert set(r) == {"artifact_namespace", "item", "line", "offset", "score", "text", "pass_as"}
            assert r["artifact_namespace"] == ref.namespace
        assert "violin" in found["results"][0]["text"]
    bad = await client.call_tool("memory_query", {"query": "x", "mode": "fuzzy"})
    assert bad.is_error
    assert "mode" in text_of(bad)


async def test_a_deleted_namespace_is_gone_from_both_indexes(memory: TaskMemory, client: Client) -> None:
    ref = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
    wait(memory)
    assert (await query(client, query="Saturn rings ice"))["results"]
    await client.call_tool("memory_delete", {"artifact_namespace": ref.namespace})
    for mode in ("hybrid", "dense", "lexical"):
        assert (await query(client, query="Saturn rings ice", mode=mode))["results"] == []


async def read_back(client: Client, namespace: str, window: int = 1500) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = await client.call_tool(
            "memory_load", {"artifact_namespace": namespace, "offset": offset, "max_tokens": window}
        )
        assert not result.is_error, text_of(result)
        parts.append(text_of(result))
        offset = meta(result)["next_offset"]
    return "".join(parts)


@pytest.mark.parametrize(
    "name",
    ["code_commander_command.js", "prose_pytest_deprecations.rst", "logs_cpython_regrtest.log", "json_mime_db.json"],
)
async def test_code_prose_log_and_json_still_read_back_byte_for_byte(
    memory: TaskMemory, client: Client, name: str
) -> None:
    text = (DOCS / name).read_bytes().decode("utf-8")
    artifact = from_block(mt.TextContent(text=text))
    assert artifact.kind == ("json" if name.endswith(".json") else "text")
    ref = memory.store([artifact], tool="fs.read_file")
    assert await read_back(client, ref.namespace) == text
    # A query's hit points into the same text: its offset leads memory_load to the chunk's first token.
    memory.text.wait_chunked(None, 60)  # type: ignore[attr-defined]
    hits, _ = memory.query("version", ref.namespace, top_k=3, mode="lexical")
    for hit in hits:
        window = await client.call_tool(
            "memory_load", {"artifact_namespace": ref.namespace, "offset": hit.offset, "max_tokens": 400}
        )
        assert hit.text[:40].strip()[:20] in text_of(window)


# -- the embedding function is a choice a memory remembers ----------------------------------------------------------


def test_a_memory_remembers_its_embedding_function_and_refuses_another(settings: MemorySettings) -> None:
    hashed = replace(settings, embedding=EmbeddingSpec("offprompt-test-word-hash", {"dims": 512}))
    memory = TaskMemory.open(hashed)
    try:
        ref = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
        wait(memory)
        hits, indexing = memory.query("violin tuned in fifths", mode="dense")
        assert indexing == []
        assert hits[0].namespace == ref.namespace
        assert "violin" in hits[0].text
    finally:
        memory.close()

    for other in (settings, replace(settings, embedding=EmbeddingSpec("offprompt-test-word-hash", {"dims": 256}))):
        reopened = TaskMemory.open(other)
        try:
            with pytest.raises(IncompatibleStoreError, match=r"word-hash-512.*another memory_name"):
                reopened.query("violin", mode="dense")
            # Words are not vectors: lexical search still works on the memory.
            hits, _ = reopened.query("violin", mode="lexical")
            assert "violin" in hits[0].text
        finally:
            reopened.close()

    again = TaskMemory.open(hashed)
    try:
        assert "violin" in again.query("violin tuned in fifths", mode="dense")[0][0].text
    finally:
        again.close()


def test_an_unknown_embedding_function_is_a_config_error_naming_the_choices(settings: MemorySettings) -> None:
    memory = TaskMemory.open(replace(settings, embedding=EmbeddingSpec("no-such-model")))
    try:
        with pytest.raises(ConfigError, match=r"no-such-model.*offprompt-minilm-int8"):
            memory.query("anything", mode="dense")
    finally:
        memory.close()


async def test_dense_mode_ranks_by_meaning_alone(memory: TaskMemory, client: Client) -> None:
    # An identifier from the query sits in an unrelated passage: words (and hybrid) put it first, meaning doesn't.
    stories = {**STORIES, "Sky": STORIES["Sky"] + " Catalogue entry SKY_RING_0042."}
    text = "".join(f"## {title}\n\n{body}\n\n" for title, body in stories.items())
    memory.store([from_block(mt.TextContent(text=text))], tool="notes.read")
    wait(memory)
    question = "how are the strings of a violin tuned, see SKY_RING_0042"
    hybrid = await query(client, query=question, mode="hybrid")
    assert "SKY_RING_0042" in hybrid["results"][0]["text"]
    dense = await query(client, query=question, mode="dense")
    assert "violin" in dense["results"][0]["text"]
    scores = [r["score"] for r in dense["results"]]
    assert scores == sorted(scores, reverse=True)  # cosine similarity, nothing ranked by words


def runbook() -> str:
    """Sections that each answer one phrasing best; only one section answers both."""
    filler = "Nothing else in this section applies to the rest of the runbook. " * 3
    sections = {
        "Retries": "Every retry of a failed upload waits with exponential backoff; the retry backoff doubles "
        "after each retry and retry backoff never exceeds a minute. " + filler,
        "Clock drift": "Hosts whose clocks drift get a randomised jitter added to their timers, so jitter "
        "spreads the jitter of drifting clocks. " + filler,
        "Uploads": "A failed upload is tried again after a backoff with jitter, so that clients do not "
        "all come back at once. " + filler,
        "Archives": "Archives are compressed nightly and kept for ninety days. " + filler,
    }
    return "# Runbook\n\n" + "".join(f"## {title}\n\n{body}\n\n" for title, body in sections.items())


async def test_queries_fuses_phrasings_so_the_passage_both_describe_comes_first(
    memory: TaskMemory, client: Client
) -> None:
    memory.store([from_block(mt.TextContent(text=runbook()))], tool="docs.read")
    assert memory.text.wait_chunked(None, 60)  # type: ignore[attr-defined]  # a query over all waits for nothing
    first = await query(client, query="retry backoff", mode="lexical", top_k=3)
    second = await query(client, query="jitter", mode="lexical", top_k=3)
    assert "## Uploads" not in first["results"][0]["text"]  # each phrasing alone prefers another section
    assert "## Uploads" not in second["results"][0]["text"]
    fused = await query(client, query="retry backoff", queries=["jitter"], mode="lexical", top_k=3)
    assert "backoff with jitter" in fused["results"][0]["text"]
    assert 0 < fused["results"][0]["score"] <= 1
    same = await query(client, query="retry backoff", queries=["retry backoff", " "], mode="lexical", top_k=3)
    assert same["results"] == first["results"]  # repeated or blank phrasings change nothing


async def test_a_small_result_stored_after_a_huge_one_is_searchable_by_meaning_before_it(
    memory: TaskMemory, client: Client
) -> None:
    huge = memory.store([from_block(mt.TextContent(text=access_log({}, count=2000)))], tool="ssh.tail")  # 4 slices
    small = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
    text = memory.text
    with text._state:  # type: ignore[attr-defined]
        # A generous bound: the order is what is asserted, and indexing threads are niced on a busy machine.
        assert text._state.wait_for(lambda: small.namespace not in text.pending(), timeout=1800)  # type: ignore[attr-defined]
    assert huge.namespace in text.pending()  # the huge one waits for its turn, not the small one
    found = await query(client, query="tuning a string instrument", mode="dense", artifact_namespace=small.namespace)
    assert found["indexing"] == []
    assert "violin" in found["results"][0]["text"]


def uploader_module() -> str:
    """A small function whose docstring answers the question, beside a big one that repeats its words."""
    big_body = "".join(
        f"    if failed_upload_{n}:\n"
        f"        # retry the failed upload {n}: wait, then retry the upload again before the next retry\n"
        f"        wait_for_retry(upload_{n}, next_retry=True)\n"
        for n in range(40)
    )
    return (
        "import time\n\n\n"
        "def upload_all(uploads):\n"
        '    """Upload everything, retrying each failed upload."""\n'
        f"{big_body}\n\n"
        "def backoff_delay(attempt):\n"
        '    """Seconds to wait before the next retry of a failed upload: doubles each time, at most 60."""\n'
        "    return min(2**attempt, 60)\n\n\n"
        "def archive(paths):\n"
        '    """Compress the given paths into one tarball."""\n'
        "    return tarball(paths)\n"
    )


async def test_a_small_functions_docstring_words_bring_it_back_first_not_its_big_neighbour(
    memory: TaskMemory, client: Client
) -> None:
    memory.store([from_block(mt.TextContent(text=uploader_module()))], tool="fs.read")
    wait(memory)
    # Dense alone ranks a chunk of the neighbour first (MiniLM reads its repeated words as the same meaning); the
    # docstring's words weigh as a title in lexical, and hybrid keeps that order.
    for mode in ("lexical", "hybrid"):
        found = await query(
            client, query="how many seconds to wait before the next retry of a failed upload", mode=mode
        )
        assert "def backoff_delay" in found["results"][0]["text"], mode


def pyio_start() -> str:
    """The start of the standard library's pure-Python io: `open`'s docstring and body name DEFAULT_BUFFER_SIZE
    in words and in code, a line near the top defines it."""
    source = Path(_pyio.__file__).read_text(encoding="utf-8")
    return source[: source.index("class RawIOBase")]


async def test_a_constant_asked_for_in_plain_words_is_found_at_its_defining_line(
    memory: TaskMemory, client: Client
) -> None:
    memory.store([from_block(mt.TextContent(text=pyio_start()))], tool="fs.read")
    wait(memory)
    found = await query(client, query="what is default buffer size")
    assert "DEFAULT_BUFFER_SIZE = 8 * 1024" in found["results"][0]["text"]


def pip_inspect(packages: list[tuple[str, str, str]]) -> str:
    """`pip inspect`'s shape (pip's JSON report of a venv), written by hand: per distribution its metadata with a
    long README as the description, then classifiers and `requires_python` far below its name and summary."""
    installed = []
    for name, summary, python in packages:
        readme = (
            f"{name}\n{'=' * len(name)}\n\n{summary}.\n\nInstallation\n------------\n\n    pip install {name}\n\n"
            + "".join(
                f"{part}\n{'-' * len(part)}\n\nSee the {part.lower()} section of the project's documentation for "
                f"{name}; issues and pull requests are welcome on the tracker.\n\n"
                for part in ("Usage", "Configuration", "Development", "Testing", "Changelog", "Support", "License")
            )
        )
        classifiers = [
            "Development Status :: 5 - Production/Stable",
            "Intended Audience :: Developers",
            "Operating System :: OS Independent",
            *(f"Programming Language :: Python :: 3.{minor}" for minor in range(8, 14)),
        ]
        metadata = {
            "metadata_version": "2.1",
            "name": name,
            "version": "2.0.1",
            "summary": summary,
            "description": readme,
            "description_content_type": "text/x-rst",
            "license": "MIT",
            "classifier": classifiers,
            "requires_python": python,
        }
        installed.append({"metadata": metadata, "installer": "pip", "requested": False})
    return json.dumps({"version": "1", "pip_version": "24.0", "installed": installed}, indent=2)


async def test_a_field_of_a_big_json_record_is_among_the_passages_for_what_the_record_is(
    memory: TaskMemory, client: Client
) -> None:
    packages = [
        ("tzdata", "Provider of IANA time zone data", ">=2"),
        ("idna", "Internationalized Domain Names in Applications (IDNA)", ">=3.6"),
        ("urllib3", "HTTP library with thread-safe connection pooling, file post, and more", ">=3.8"),
        ("six", "Python 2 and 3 compatibility utilities", ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*"),
        ("colorama", "Cross-platform colored terminal text", ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*, !=3.4.*"),
        ("packaging", "Core utilities for Python packages", ">=3.7"),
        ("platformdirs", "A small Python package for determining appropriate platform-specific dirs", ">=3.8.1"),
        ("wcwidth", "Measures the displayed width of unicode strings in a terminal", ">=3.6.2"),
    ]
    memory.store([from_block(mt.TextContent(text=pip_inspect(packages)))], tool="shell.pip_inspect")
    wait(memory)
    found = await query(client, query="what is the oldest Python the time zone data package supports?")
    # The field's chunk holds neither "tzdata" nor its summary: only the record's name in its context brings it in.
    assert any('"requires_python": ">=2"' in passage["text"] for passage in found["results"])


#: While set, the embedding service below is down (as an Ollama or OpenAI endpoint can be).
EMBEDDING_DOWN = threading.Event()


class FlakyWordHashEmbedding(WordHashEmbedding):
    """A remote embedding service that can be down: the outage is what is under test, not the model."""

    def __call__(self, input: Documents) -> Embeddings:
        if EMBEDDING_DOWN.is_set():
            raise ConnectionError("the embedding service refused the connection")
        return super().__call__(input)

    @staticmethod
    def name() -> str:
        return "offprompt-test-flaky-word-hash"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> FlakyWordHashEmbedding:
        return FlakyWordHashEmbedding(int(config.get("dims", 512)))


register_embedding_function(FlakyWordHashEmbedding)  # type: ignore[no-untyped-call]


async def test_with_the_embedding_down_queries_answer_by_words_and_texts_are_embedded_when_it_is_back(
    settings: MemorySettings,
) -> None:
    flaky = replace(settings, embedding=EmbeddingSpec("offprompt-test-flaky-word-hash", {"dims": 512}))
    memory = TaskMemory.open(flaky)
    try:
        async with Client(build_server(memory)) as client:
            EMBEDDING_DOWN.set()
            try:
                ref = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
                found = await query(
                    client, query="violin tuned in fifths", mode="hybrid", artifact_namespace=ref.namespace
                )
                assert "ConnectionError" in found["by_words"]
                assert "violin" in found["results"][0]["text"]  # by its words
                assert found["indexing"] == [ref.namespace]  # not yet searchable by meaning, and not said to be
            finally:
                EMBEDDING_DOWN.clear()
            wait(memory)  # embedded once the service is back, with no restart
            found = await query(client, query="violin tuned in fifths", mode="dense")
            assert "by_words" not in found
            assert found["indexing"] == []
            assert "violin" in found["results"][0]["text"]
    finally:
        memory.close()


def test_a_dense_query_about_one_namespace_answers_from_that_namespace_only(settings: MemorySettings) -> None:
    """Two texts alike in meaning: scoped to one, a dense query may not rank the other's chunks (a bug that
    dropped the scope in dense search passed every other test)."""
    hashed = replace(settings, embedding=EmbeddingSpec("offprompt-test-word-hash", {"dims": 512}))
    memory = TaskMemory.open(hashed)
    try:
        first = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
        second = memory.store([from_block(mt.TextContent(text=stories_text()))], tool="notes.read")
        wait(memory)
        for namespace in (first.namespace, second.namespace):
            hits, _ = memory.query("violin tuned in fifths", namespace, top_k=10, mode="dense")
            assert hits
            assert {hit.namespace for hit in hits} == {namespace}
    finally:
        memory.close()


def test_chunks_whose_similarity_could_not_be_read_rank_as_the_least_similar_not_a_middling_one(
    settings: MemorySettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk with no vector yet takes the middle similarity of the candidates (ranking.py); one that has a
    vector but whose similarity failed to be read (the vector index gone a moment after the search) was not
    among the chunks nearest the query, so it is no more similar than the least of those."""
    hashed = replace(settings, embedding=EmbeddingSpec("offprompt-test-word-hash", {"dims": 512}))
    memory = TaskMemory.open(hashed)
    try:
        ref = memory.store([TextArtifact(value=access_log({}, 3000))], tool="web.log")
        wait(memory)
        search = memory.text._search  # type: ignore[attr-defined]

        def gone(vector: Any, records: Any) -> dict[str, float]:
            raise ConnectionError("the vector index went away")

        monkeypatch.setattr(search._dense, "similarities", gone)
        ranked: list[Any] = []
        fuse = text_query.ranking.fuse
        monkeypatch.setattr(
            text_query.ranking, "fuse", lambda q, found, *rest: (ranked.extend(found), fuse(q, found, *rest))
        )
        memory.query("client closed connection while waiting for request", ref.namespace, 5)
        scored = [c for c in ranked if "dense" in c.scores]
        assert len(scored) == len(ranked) > 50  # every candidate scored, the words' own beyond the nearest 50
        least = min(c.scores["dense"] for c in ranked)
        assert sum(c.scores["dense"] == least for c in ranked) > 1
    finally:
        memory.close()
