"""`TaskMemory.store` and `load` in process: what the reference says of each item, and every item read back whole
as the block it came from."""

from __future__ import annotations

import base64
import json

import mcp_types as mt
import pytest

from offprompt.artifacts import BlobArtifact, from_block, from_result, to_block
from offprompt.errors import InvalidArgumentError, LimitExceededError
from offprompt.memory.select import SelectLimits
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import count_tokens


def test_every_item_loads_back_as_the_block_it_came_from(memory: TaskMemory) -> None:
    listing = json.dumps({"files": [{"name": f"f{i}.txt", "size": i * 10} for i in range(50)]})
    blocks: list[mt.ContentBlock] = [
        mt.TextContent(text=listing, annotations=mt.Annotations(audience=["assistant"], priority=0.5)),
        mt.ResourceLink(type="resource_link", uri="file:///srv/report.pdf", name="report.pdf", mime_type="x/pdf"),
        mt.TextContent(text="a plain line of text"),
    ]
    ns = memory.store(from_result(mt.CallToolResult(content=blocks)), tool="fs.list").namespace
    assert [i.kind for i in memory.get(ns).items] == ["json", "resource_link", "text"]
    for item, block in enumerate(blocks):
        assert to_block(memory.load(ns, item)) == block
    assert memory.load(ns, 1).value == "file:///srv/report.pdf"  # a link's value is where it points


def test_a_structured_copy_counts_once_and_base64_json_counts_none(memory: TaskMemory) -> None:
    text = "rows: " + ", ".join(str(i) for i in range(300))
    copied = mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content={"result": text})
    reference = memory.store(from_result(copied), tool="db.query")
    assert reference.record.tokens == count_tokens(text)
    assert "item 1: json, a copy of item 0" in reference.summary()
    payload = base64.b64encode(bytes(range(256)) * 40).decode("ascii")
    encoded = mt.CallToolResult(content=[mt.TextContent(text="done")], structured_content={"data": payload})
    binary = memory.store(from_result(encoded), tool="img.render")
    assert binary.record.tokens == count_tokens("done")
    assert "item 1: json holding base64 data" in binary.summary()
    assert "a copy of" not in binary.summary()


def test_a_space_separated_table_in_json_is_text_to_search_not_base64(memory: TaskMemory) -> None:
    # A command's table of letters, digits and spaces returned as {"stdout": …} was taken for base64 (its
    # characters were all in base64's class once white space was let in) and never indexed or grepped.
    rows = "".join(f"pod{i:04d} Running 3 12d node{i % 7}\n" for i in range(60))
    table = mt.CallToolResult(content=[mt.TextContent(text=json.dumps({"stdout": rows, "exit_code": 0}))])
    reference = memory.store(from_result(table), tool="shell.run")
    assert "base64" not in reference.summary()
    matches, _ = memory.grep("pod0042 Running", reference.namespace)
    assert len(matches) == 1
    for payload in (base64.b64encode(bytes(range(256)) * 8), base64.encodebytes(bytes(range(256)) * 8)):
        binary = mt.CallToolResult(content=[mt.TextContent(text=json.dumps({"data": payload.decode()}))])
        assert "holding base64 data" in memory.store(from_result(binary), tool="img.render").summary()


def test_structured_content_holding_a_json_text_as_a_string_counts_once(memory: TaskMemory) -> None:
    """server-filesystem's read_text_file on a .json file: the text, and `{"content": text}` beside it."""
    text = json.dumps([{"number": i, "title": f"issue {i}", "labels": ["bug"]} for i in range(200)], indent=2)
    read = mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content={"content": text})
    reference = memory.store(from_result(read), tool="fs.read_text_file")
    assert "item 1: json, a copy of item 0" in reference.summary()
    assert reference.record.tokens == count_tokens(text)
    assert reference.distinct_tokens == count_tokens(text)


def test_the_preview_is_the_first_tokens_or_nothing(memory: TaskMemory) -> None:
    text = "".join(f"line {i}\n" for i in range(500))
    artifacts = from_result(mt.CallToolResult(content=[mt.TextContent(text=text)]))
    assert memory.store(artifacts, tool="t").preview == ""
    preview = memory.store(artifacts, tool="t", preview_tokens=20).preview
    assert text.startswith(preview)
    assert count_tokens(preview) == 20


def test_an_empty_result_is_refused_by_name(memory: TaskMemory) -> None:
    with pytest.raises(InvalidArgumentError, match="nothing to store: the result is empty"):
        memory.store([], tool="t")


def test_structured_content_is_a_copy_only_of_what_it_repeats(memory: TaskMemory) -> None:
    other = mt.CallToolResult(content=[mt.TextContent(text='{"a": 1}')], structured_content={"b": 2})
    reference = memory.store(from_result(other), tool="api.get")
    assert "a copy of" not in reference.summary()  # JSON beside other JSON is not its copy
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 30
    for encode in (base64.b64encode, base64.encodebytes):  # with or without line breaks every 76 characters
        data = encode(png).decode("ascii")
        image = mt.ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png")
        shown = {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}
        both = mt.CallToolResult(content=[image], structured_content=shown)
        assert "item 1: json, a copy of item 0" in memory.store(from_result(both), tool="fs.read_media").summary()


def test_a_memory_built_with_select_limits_applies_them(memory: TaskMemory) -> None:
    blobs = memory.storages[BlobArtifact]
    limited = TaskMemory("limited", memory.catalog, memory.text, blobs, select_limits=SelectLimits(output_bytes=64))
    ns = memory.store([from_block(mt.TextContent(text=json.dumps(list(range(100)))))], tool="api.list").namespace
    assert memory.select(ns, "length").text == "100"
    with pytest.raises(LimitExceededError, match="output"):
        limited.select(ns, ".[]")
    limited.selector.close()
