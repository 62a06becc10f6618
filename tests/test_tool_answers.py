"""What each memory tool's answer says, word for word where the model reads it, and in `_meta` where a client
script does."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp_types as mt
import pytest
from mcp import Client

from offprompt.artifacts import TextArtifact, from_block, from_result
from offprompt.memory.shown import ANSWER_TOKENS
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens
from offprompt.tool_args import _lean

from .support import chunker_held, meta, text_of

pytestmark = pytest.mark.anyio


async def test_an_empty_memory_has_no_passages_without_a_yet(client: Client) -> None:
    found = await client.call_tool("memory_query", {"query": "anything at all", "mode": "lexical"})
    assert text_of(found) == "No passages found."  # "yet" would send the model back to wait for nothing


async def test_grep_delete_and_list_name_the_namespace_and_the_memory(memory: TaskMemory, client: Client) -> None:
    ns = memory.store([TextArtifact(value="alpha\nbeta\n")], tool="notes.read").namespace
    grep = meta(await client.call_tool("memory_grep", {"pattern": "beta"}))
    assert grep["matches"] == [{"artifact_namespace": ns, "item": 0, "line": 2, "offset": 2, "text": "beta"}]
    listed = meta(await client.call_tool("memory_list", {}))
    assert [(r["artifact_namespace"], r["memory_name"]) for r in listed["namespaces"]] == [(ns, memory.name)]
    deleted = await client.call_tool("memory_delete", {"artifact_namespace": ns})
    assert meta(deleted)["deleted"]["memory_name"] == memory.name
    assert text_of(deleted).startswith(f"Deleted artifact_namespace {ns} (output of notes.read: 1 item, ")


async def test_a_selection_says_how_many_outputs_and_where_it_ends(memory: TaskMemory, client: Client) -> None:
    ns = memory.store([from_block(mt.TextContent(text='[{"a": 1}, {"a": 2}]'))], tool="api.list").namespace
    one = await client.call_tool("memory_select", {"artifact_namespace": ns, "expression": "length"})
    assert text_of(one, 1) == "Characters 0-1 of 1 (1 output, one per line). This is the end."
    none = await client.call_tool("memory_select", {"artifact_namespace": ns, "expression": "empty"})
    assert text_of(none, 1) == "The expression produced no output."


async def test_load_says_where_a_window_ends_and_what_a_link_points_to(memory: TaskMemory, client: Client) -> None:
    ns = memory.store([TextArtifact(value="".join(f"line {i}\n" for i in range(40)))], tool="t").namespace
    last = await client.call_tool("memory_load", {"artifact_namespace": ns, "offset": 10, "max_tokens": 5000})
    total = meta(last)["total_tokens"]
    assert text_of(last, 1).startswith(f"Tokens 10-{total} of {total}, lines ")
    assert text_of(last, 1).endswith(" This is the end of the item.")
    link = mt.ResourceLink(type="resource_link", uri="file:///srv/report.pdf", name="report.pdf")
    linked = memory.store(from_result(mt.CallToolResult(content=[link])), tool="t").namespace
    assert meta(await client.call_tool("memory_load", {"artifact_namespace": linked}))["uri"] == str(link.uri)


async def test_bad_arguments_quote_what_was_given_but_not_what_is_missing(client: Client) -> None:
    missing = await client.call_tool("memory_load", {})
    assert missing.is_error
    assert "artifact_namespace: Field required" in text_of(missing)
    assert "(got" not in text_of(missing)  # the input of a missing field is all the arguments: nothing to quote
    wrong = await client.call_tool("memory_load", {"artifact_namespace": "x", "item": "first"})
    assert "item: Input should be a valid integer" in text_of(wrong)
    assert "(got 'first')" in text_of(wrong)


async def test_a_tool_that_fails_unexpectedly_answers_and_logs_which_one(
    memory: TaskMemory, client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("catalog gone")

    monkeypatch.setattr(memory, "recent", broken)
    failed = await client.call_tool("memory_list", {})
    assert failed.is_error
    assert "memory_list failed unexpectedly (RuntimeError: catalog gone)" in text_of(failed)
    assert "memory_list failed" in caplog.text


async def test_a_query_right_after_a_store_ranks_the_unindexed_text_on_the_spot(
    memory: TaskMemory, client: Client
) -> None:
    filler = "".join(f"Line {n}: the probe logged nominal telemetry.\n" for n in range(3000))
    text = filler + "Saturn has 146 known moons.\n" + filler
    with chunker_held(memory):  # the text is not in the lexical index: a reference was just handed out
        ns = memory.store([TextArtifact(value=text)], tool="space.facts").namespace
        for mode in ("hybrid", "lexical"):
            found = await client.call_tool("memory_query", {"query": "how many moons has Saturn", "mode": mode})
            results = meta(found)["results"]
            assert results, mode
            assert results[0]["artifact_namespace"] == ns
            assert "Saturn has 146 known moons." in results[0]["text"]
            assert results[0]["line"] <= 3001 <= results[0]["line"] + results[0]["text"].count("\n")
            assert f"Still indexing: {ns}. Its passages here were ranked by their words" in text_of(found)


async def test_a_text_indexed_between_the_search_and_its_check_is_still_answered(
    memory: TaskMemory, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race a loaded machine hit: the lexical search ran before the text was chunked, and by the time the
    # query asked what is still pending, it no longer was; the answer said "No passages found yet".
    text = "".join(f"Line {n}: the probe logged nominal telemetry.\n" for n in range(300)) + "Saturn has 146 moons.\n"
    searched = False
    real_query, real_pending = memory.text.query, memory.text.pending

    def query(*args: Any, **kwargs: Any) -> Any:
        nonlocal searched
        found = real_query(*args, **kwargs)
        searched = True  # and right now the chunker finishes
        return found

    def pending(mode: Any = "hybrid") -> set[str]:
        return set() if searched else real_pending(mode)

    with chunker_held(memory):
        ns = memory.store([TextArtifact(value=text)], tool="space.facts").namespace
        monkeypatch.setattr(memory.text, "query", query)
        monkeypatch.setattr(memory.text, "pending", pending)
        found = await client.call_tool("memory_query", {"query": "how many moons has Saturn", "mode": "lexical"})
    results = meta(found)["results"]
    assert results, text_of(found)
    assert results[0]["artifact_namespace"] == ns
    assert "Saturn has 146 moons." in results[0]["text"]


def test_tool_schemas_drop_titles_and_null_branches_and_keep_real_unions() -> None:
    """What `tools/list` shows of each argument: `Optional[int]` as an integer, a real union kept whole."""
    assert _lean({"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Line"}) == {"type": "integer"}
    optional = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "Line"}
    assert _lean(optional) == {"type": "integer"}
    union = {"anyOf": [{"type": "integer"}, {"type": "string"}], "title": "Key"}
    assert _lean(union) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


async def test_a_query_answers_its_top_passages_whole_and_more_candidates_one_line_each(
    memory: TaskMemory, client: Client
) -> None:
    text = "".join(f"def handler_{n}(request):\n    return respond(request, code={n})\n\n" for n in range(400))
    ns = memory.store([TextArtifact(value=text)], tool="fs.read").namespace
    assert memory.text.wait_chunked(None, 60)  # type: ignore[attr-defined]
    found = await client.call_tool("memory_query", {"query": "respond request code", "top_k": 2, "more": 4})
    answer = meta(found)
    assert len(answer["results"]) == 2
    assert len(answer["more"]) == 4
    whole = {(r["artifact_namespace"], r["line"]) for r in answer["results"]}
    for candidate in answer["more"]:
        assert set(candidate) == {"artifact_namespace", "item", "line", "end_line", "title", "text"}
        assert candidate["artifact_namespace"] == ns
        assert (ns, candidate["line"]) not in whole  # further passages, not the same again
        assert candidate["line"] <= candidate["end_line"]
        assert "respond(request" in candidate["text"] or "handler_" in candidate["text"]
        row = text.splitlines()[candidate["line"] - 1 : candidate["end_line"]]
        assert any(candidate["text"] in r for r in row)  # its line is one of the lines it names
        assert f"L{candidate['line']}-{candidate['end_line']}" in text_of(found)
    none = meta(await client.call_tool("memory_query", {"query": "respond request code", "more": 0}))
    assert none["more"] == []


async def test_a_query_within_one_output_names_places_by_item_and_line_and_says_a_repeated_line_once(
    memory: TaskMemory, client: Client
) -> None:
    # Before: each passage's header repeated the namespace the model had just named, and its offset (~30 tokens
    # a passage); generated code's candidates repeated one line ten times (`# set the HTTP header Accept`).
    blocks = [
        f"def call_{n}(self):\n    # set the HTTP header `Accept`\n    headers = accept(self.api_client)\n"
        f"    return self.get('/apis/{n}', headers)\n\n"
        for n in range(40)
    ]
    ns = memory.store([TextArtifact(value="".join(blocks))], tool="gen.read").namespace
    assert memory.text.wait_chunked([ns], 60)
    args = {"query": "set the HTTP header Accept", "artifact_namespace": ns, "mode": "lexical", "top_k": 2}
    found = await client.call_tool("memory_query", args)
    answer = text_of(found)
    first = meta(found)["results"][0]
    assert answer.startswith(f"[1] item 0 line {first['line']} (score ")
    assert ns not in answer
    candidates = answer.split("More candidates", 1)[1].splitlines()[1:]
    assert [row for row in candidates if "set the HTTP header" in row] == []  # shown in the passages already
    assert candidates[-1].endswith("more whose best line is one already shown")
    assert len(meta(found)["more"]) == 10  # a client script still gets every candidate
    across = text_of(await client.call_tool("memory_query", {**args, "artifact_namespace": None}))
    assert across.startswith(f"[1] artifact_namespace {ns} item 0 line ")


def _listing(rows: int) -> str:
    """`ls -l` of a folder of manual pages, in the shape of a real one (lines of the same shape written here)."""
    months = ("Jan", "Mar", "May", "Oct")
    return "".join(
        f"-rw-r--r-- 1 root root {1000 + 37 * n:5d} {months[n % 4]} {1 + n % 28:2d}  2023 "
        f"Pkg::{'Compression' if n % 9 == 0 else 'Control'}::Part{n}.3perl.gz\n"
        for n in range(600)
    )


async def test_a_query_shows_no_line_twice(memory: TaskMemory, client: Client) -> None:
    # Before: neighbouring chunks share lines and the words' first window overlaps a chunk, so two of the five
    # passages of a listing were the same lines (a fifth of the answer said twice).
    ns = memory.store([TextArtifact(value=_listing(600))], tool="fs.ls").namespace
    assert memory.text.wait_chunked([ns], 60)
    found = await client.call_tool("memory_query", {"query": "compression manual page", "artifact_namespace": ns})
    results = meta(found)["results"]
    assert len(results) == 5
    shown = [r["line"] + k for r in results for k in range(r["text"].count("\n"))]
    assert len(shown) == len(set(shown)), "a line is shown in two passages"
    assert all(f"item 0 line {r['line']} " in text_of(found) for r in results)


async def test_the_default_answer_stays_within_its_budget_and_keeps_the_best_rows(
    memory: TaskMemory, client: Client
) -> None:
    # A table of certificates: every row holds two long fingerprints, so five whole chunks and ten candidates
    # came to 2,600 tokens; the default answer is held to ANSWER_TOKENS by cutting the last passages to the
    # lines around their best line.
    rows = ["#\tname\tcountry\tkey\tsha1\tsha256"]
    for n in range(400):
        digest = hashlib.sha256(str(n).encode()).hexdigest()
        rows.append(
            f"{n}\tRoot CA {n} of Authority {n % 37}\t{('DE', 'TR', 'US')[n % 3]}\tRSA\t{digest[:40]}\t{digest}"
        )
    rows[233] = rows[233].replace("\tTR\t", "\tTR Ankara Gebze\t")
    ns = memory.store([TextArtifact(value="\n".join(rows) + "\n")], tool="db.export").namespace
    assert memory.text.wait_chunked([ns], 60)
    found = await client.call_tool(
        "memory_query", {"query": "root authority in Ankara Gebze", "artifact_namespace": ns}
    )
    answer = text_of(found)
    assert count_tokens(answer) <= ANSWER_TOKENS
    assert rows[233] in answer  # the row the question names is kept whole
    assert len(meta(found)["results"]) == 5
    wide = await client.call_tool(
        "memory_query", {"query": "root authority in Ankara Gebze", "artifact_namespace": ns, "top_k": 10}
    )
    assert ANSWER_TOKENS < count_tokens(text_of(wide)) <= ANSWER_TOKENS * 20 / 15  # more asked for, more allowed


def _pytest_run(tests: int) -> str:
    """A `pytest -v` run of many passing tests, in the shape of a real one (lines of the same shape written here)."""
    head = (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0 -- /usr/bin/python3\n"
        f"collecting ... collected {tests} items\n\n"
    )
    rows = "".join(
        f"tests/test_{('cache', 'dates', 'urls', 'iters')[n % 4]}.py::test_case_{n} PASSED"
        f"{' ' * 20}[{100 * (n + 1) // tests:3d}%]\n"
        for n in range(tests)
    )
    return head + rows + f"\n============================= {tests} passed in 4.12s ==============================\n"


async def test_a_query_over_a_test_run_shows_the_runs_own_summary_line(memory: TaskMemory, client: Client) -> None:
    # "What was the final tally?" shares no word with `=== 600 passed in 4.12s ===`, and among hundreds of alike
    # PASSED lines no ranking puts it first: three outside writers' sets asked it and the answer did not hold it.
    # The run's own summary is what every question about a run is read against, so it heads the answer.
    text = _pytest_run(600)
    ns = memory.store([TextArtifact(value=text)], tool="sh.run").namespace
    assert memory.text.wait_chunked([ns], 60)
    assert memory.text.records(ns, 0) is not None  # made now, as the indexer makes them after the reference
    args = {"query": "test_case_7 of the cache tests", "artifact_namespace": ns, "mode": "lexical"}
    found = text_of(await client.call_tool("memory_query", args))
    summary = text.rstrip("\n").rsplit("\n", 1)[1]
    assert found.startswith(f"The pytest run's own summary, item 0 line {text.count(chr(10))}: {summary}\n\n[1] ")
    assert count_tokens(found) <= ANSWER_TOKENS
    shown = await client.call_tool("memory_query", {**args, "query": "600 passed in 4.12s"})
    assert text_of(shown).count("600 passed in 4.12s") == 1  # a passage that shows it already is not repeated


async def test_a_first_passage_joined_from_many_hits_is_cut_to_the_budget_too(
    memory: TaskMemory, client: Client
) -> None:
    # A log's windows overlap by half, and hits of one text that share bytes are joined into one passage: when
    # the question's words fill one stretch of a log, the first passage grew past the whole budget (1,723 tokens
    # seen), and only the passages after it were ever cut.
    rows = [f"2026-11-02 10:{n // 60:02d}:{n % 60:02d} INFO worker {n % 7} idle, queue empty\n" for n in range(900)]
    for n in range(400, 460):
        rows[n] = (
            f"2026-11-02 10:{n // 60:02d}:{n % 60:02d} ERROR replica sync failed for shard {n}: checksum mismatch "
            f"on page {n * 13} of segment {n * 7}, retrying with backoff {n % 9} s\n"
        )
    ns = memory.store([TextArtifact(value="".join(rows))], tool="svc.logs").namespace
    assert memory.text.wait_chunked([ns], 60)
    args = {"query": "replica sync failed checksum mismatch shard segment", "artifact_namespace": ns, "mode": "lexical"}
    found = text_of(await client.call_tool("memory_query", args))
    assert count_tokens(found) <= ANSWER_TOKENS
    assert "ERROR replica sync failed for shard" in found


def _described(n: int, dense: bool) -> str:
    """A package's description as `pip inspect` writes it: one JSON string of kilobytes."""
    filler = " ".join(f"chapter {k} of package {n} lists minor edits." for k in range(60))
    if dense:
        said = " ".join(
            f"timezone fallback {k}: when no zone is configured the system reads localtime." for k in range(40)
        )
        return filler + said + filler
    return filler + f" It mentions the timezone once, and a fallback for config {n}. " + filler


async def test_a_passage_inside_one_long_line_is_cut_to_the_budget_too(memory: TaskMemory, client: Client) -> None:
    # `pip inspect` writes a package's description as one JSON string of kilobytes: passages that are windows
    # inside such a line could not be cut "to the lines around their best line", and an answer came to 2,073.
    packages = [{"metadata": {"name": f"pkg{n}", "description": _described(n, n == 17)}} for n in range(30)]
    text = json.dumps({"installed": packages}, indent=2) + "\n"
    ns = memory.store([TextArtifact(value=text)], tool="pip.inspect").namespace
    assert memory.text.wait_chunked([ns], 60)
    args = {"query": "timezone fallback when no zone configured", "artifact_namespace": ns, "mode": "lexical"}
    found = text_of(await client.call_tool("memory_query", args))
    assert count_tokens(found) <= ANSWER_TOKENS
    assert "when no zone is configured the system reads localtime" in found


async def test_a_table_row_longer_than_a_chunk_is_shown_whole(memory: TaskMemory, client: Client) -> None:
    # An indicator table writes 54 years a row: 400 characters of numbers are more wordpieces than a chunk reads,
    # so a chunk ends inside the row and the year asked for was cut off the passage.
    years = list(range(1960, 2014))
    header = "Country Name,Country Code," + ",".join(map(str, years))
    rows = [
        f"Land {n:03d},L{n:02d}," + ",".join(f"{6.1 - 0.037 * k + 0.0011 * n:.4f}" for k in range(len(years)))
        for n in range(60)
    ]
    ns = memory.store([TextArtifact(value="\n".join([header, *rows]) + "\n")], tool="data.fetch").namespace
    assert memory.text.wait_chunked([ns], 60)
    args = {"query": "Land 042 fertility in 2011", "artifact_namespace": ns, "mode": "lexical"}
    answer = await client.call_tool("memory_query", args)
    assert rows[42] in text_of(answer).splitlines()
    shown = next(r for r in meta(answer)["results"] if rows[42] in r["text"].splitlines())
    # its place is still where it starts: memory_load from its offset begins with its first line
    load = await client.call_tool("memory_load", {"artifact_namespace": ns, "offset": shown["offset"]})
    assert text_of(load, 0).startswith(shown["text"][:40])


@pytest.mark.parametrize(
    ("header", "row"),
    [
        ("name,class,age,sex,survived", '"{name}",3rd,{n},male,0'),
        (
            "| name | class | age | sex | survived |\n| --- | --- | ---: | --- | ---: |",
            "| {name} | 3rd | {n} | male | 0 |",
        ),
        ("NAME              CLASS   AGE  SEX     SURVIVED", "{name:<17} 3rd     {n:<4} male    0"),
    ],
    ids=["csv", "markdown", "columns"],
)
async def test_a_tables_rows_are_shown_under_its_header(
    memory: TaskMemory, client: Client, header: str, row: str
) -> None:
    # A row far down a table is a line of values (`"Dean, Miss Elizabeth",3rd,0.17,female,1`): which is the age and
    # which the class, and "what columns does the file have", only its header says, and no passage holds it.
    rows = [row.format(name=f"Passenger{n:04d}", n=n % 80) for n in range(1500)]
    ns = memory.store([TextArtifact(value="\n".join([header, *rows]) + "\n")], tool="data.read").namespace
    assert memory.text.wait_chunked([ns], 60)
    assert memory.text.records(ns, 0) is not None  # made now, as the indexer makes them after the reference
    args = {"query": "Passenger1234", "artifact_namespace": ns, "mode": "lexical"}
    found = text_of(await client.call_tool("memory_query", args))
    first = header.split("\n", 1)[0]
    assert found.startswith(f"The table's header, item 0 line 1: {first}\n\n[1] ")
    assert rows[1234] in found
    top = await client.call_tool("memory_query", {**args, "query": "Passenger0001"})
    assert text_of(top).count(first) == 1  # a passage that shows it already is not repeated
