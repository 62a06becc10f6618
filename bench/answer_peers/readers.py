"""One scripted reader per system: the same steps, each done with that system's own tools as its docs say.

Every reader (1) gets the output through the system, (2) searches with the question, (3) reads at the lines
the search points to, (4) if still unanswered, searches for the question's rarest word (answer_cost's
`grep_word`) and (5) reads at those lines; it stops as soon as every evidence string has been shown. At most
three reads per search, a read skipped when its line was read already; a read is about 600 tokens.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import mcp_types as mt

from bench.answer_peers.outputs import Question, answered
from bench.answer_peers.systems import Served
from bench.retrieval.answer_cost import grep_word, words
from offprompt.tokens import count_tokens

MAX_READS = 3
READ_TOKENS = 600
READ_CHARS = 2400  # a read by code or by shell: about READ_TOKENS
Spot = tuple[int, int]  # (item, line): where a search points


def shown(result: mt.CallToolResult) -> str:
    """The text a model is given: text blocks, and a resource link as its name and address."""
    parts = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        elif isinstance(block, mt.ResourceLink):
            parts.append(f"{block.name} {block.uri} {block.description or ''}".strip())
    return "\n".join(parts)


@dataclass
class Reader:
    served: Served
    q: Question
    calls: int = 0
    tokens: int = 0
    seen: str = ""
    read: list[tuple[int, int, int]] = field(default_factory=list)  # (item, first line, last line)
    steps: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return answered(self.q.evidence, self.seen)

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[mt.CallToolResult, str]:
        result = await self.served.session.call_tool(tool, args)
        text = shown(result)
        self.calls, self.tokens, self.seen = self.calls + 1, self.tokens + count_tokens(text), self.seen + "\n" + text
        self.steps.append(f"{tool} {count_tokens(text)}")
        return result, text

    def path(self) -> str:
        return str(self.served.docs / self.q.doc)

    async def read_at(self, spots: list[Spot]) -> None:
        reads = 0
        for item, line in spots:
            if self.done or reads >= MAX_READS:
                return
            if any(i == item and a <= line <= b for i, a, b in self.read):
                continue
            reads += 1
            await self.load(item, line)

    async def output(self) -> None:
        raise NotImplementedError

    async def search(self) -> list[Spot]:
        raise NotImplementedError

    async def grep(self, word: str) -> list[Spot]:
        raise NotImplementedError

    async def load(self, item: int, line: int) -> None:
        raise NotImplementedError


class Offprompt(Reader):
    """The proxied call's reference; `memory_query`; `memory_load` at the candidates, then the passages;
    `memory_grep`."""

    namespace: str | None = None

    async def output(self) -> None:
        _, text = await self.call("fs__read_text_file", {"path": self.path()})
        if 'artifact_namespace "' in text:
            self.namespace = text.split('artifact_namespace "', 1)[1].split('"', 1)[0]

    async def search(self) -> list[Spot]:
        if self.namespace is None:  # the output came inline
            return []
        args = {"query": self.q.question, "artifact_namespace": self.namespace, "top_k": 5, "more": 10}
        result, _ = await self.call("memory_query", args)
        meta = (result.meta or {}).get("offprompt", {})
        return [(h["item"], h["line"]) for h in [*meta.get("more", []), *meta.get("results", [])] if h.get("line")]

    async def grep(self, word: str) -> list[Spot]:
        if self.namespace is None:
            return []
        args = {"pattern": "(?i)" + re.escape(word), "artifact_namespace": self.namespace}
        result, _ = await self.call("memory_grep", args)
        return [(m["item"], m["line"]) for m in (result.meta or {}).get("offprompt", {}).get("matches", [])]

    async def load(self, item: int, line: int) -> None:
        args = {"artifact_namespace": self.namespace, "item": item, "line": max(line, 1), "max_tokens": READ_TOKENS}
        result, _ = await self.call("memory_load", args)
        if result.meta and not result.is_error:
            meta = result.meta["offprompt"]
            self.read.append((item, meta["line"], meta["end_line"]))


#: Code a model sends to sift-gateway's `artifact(action="query", query_kind="code")`: the output's lines (a JSON
#: tree flattened to `path: value` lines, as sift stores a JSON text parsed), then a search, a grep or a read.
SIFT_LINES = """
def lines_of(data):
    content = data[0]["content"]
    if isinstance(content, str):
        return content.splitlines()
    out = []
    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + "." + key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + "[" + str(index) + "]")
        else:
            out.append(path + ": " + str(value))
    walk(content, "$")
    return out

def window(line, word):
    at = max(line.lower().find(word), 0)
    return line[max(at - 150, 0):at + 150]
"""
SIFT_SEARCH = (
    SIFT_LINES
    + """
def run(data, schema, params):
    asked = params["words"]
    scored = []
    for number, line in enumerate(lines_of(data), 1):
        low = line.lower()
        hits = [w for w in asked if w in low]
        if hits:
            scored.append((-len(hits), number, window(line, hits[0])))
    return [{"line": n, "text": t} for _, n, t in sorted(scored)[:8]]
"""
)
SIFT_GREP = (
    SIFT_LINES
    + """
def run(data, schema, params):
    word = params["word"]
    found = [(n, l) for n, l in enumerate(lines_of(data), 1) if word in l.lower()]
    return {"matches": len(found), "lines": [{"line": n, "text": window(l, word)} for n, l in found[:10]]}
"""
)
SIFT_READ = (
    SIFT_LINES
    + """
def run(data, schema, params):
    lines = lines_of(data)
    first = max(params["line"] - 2, 1)
    out, last = "", first - 1
    for number in range(first, len(lines) + 1):
        if len(out) >= params["chars"]:
            break
        out += lines[number - 1] + "\\n"
        last = number
    return {"first": first, "last": last, "text": out[: params["chars"]]}
"""
)


def _sift_payload(text: str) -> Any:
    """What the code returned, from sift's response (`items` of a query, `payload` of a full response)."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body.get("items", body.get("payload"))


def _lines_in(found: Any) -> list[Spot]:
    """The lines a search's code returned: a list of rows, or one object whose `lines` are rows (sift wraps a
    returned object in a list)."""
    if isinstance(found, list) and len(found) == 1 and isinstance(found[0], dict) and "lines" in found[0]:
        found = found[0]
    rows = found.get("lines", []) if isinstance(found, dict) else found
    return [(0, int(r["line"])) for r in rows or [] if isinstance(r, dict) and "line" in r]


class Sift(Reader):
    """The mirrored call's `schema_ref`; then `artifact(action="query", query_kind="code")` with a search, a
    grep and reads written as code, as its docs have a model do."""

    artifact: str | None = None
    context: ClassVar[dict[str, str]] = {"session_id": "answer-peers"}

    async def output(self) -> None:
        _, text = await self.call("fs_read_text_file", {"path": self.path(), "_gateway_context": self.context})
        body = json.loads(text) if text.startswith("{") else {}
        if body.get("response_mode") == "schema_ref":
            self.artifact = body["artifact_id"]

    async def code(self, code: str, params: dict[str, Any]) -> Any:
        args = {"action": "query", "query_kind": "code", "artifact_id": self.artifact, "root_path": "$", "code": code}
        _, text = await self.call("artifact", {**args, "params": params, "_gateway_context": self.context})
        return _sift_payload(text)

    async def search(self) -> list[Spot]:
        if self.artifact is None:  # the output came inline (`full`)
            return []
        return _lines_in(await self.code(SIFT_SEARCH, {"words": sorted(words(self.q.question))}))

    async def grep(self, word: str) -> list[Spot]:
        if self.artifact is None:
            return []
        return _lines_in(await self.code(SIFT_GREP, {"word": word.lower()}))

    async def load(self, item: int, line: int) -> None:
        found = await self.code(SIFT_READ, {"line": line, "chars": READ_CHARS})
        found = found[0] if isinstance(found, list) and found else found
        if isinstance(found, dict) and "first" in found:
            self.read.append((0, found["first"], found["last"]))


GREP_LINE = re.compile(r"^(\d+):", re.M)


class ContextMode(Reader):
    """`ctx_batch_execute` runs the command and searches its indexed output with the question in one call (its
    routing rules' first tool); a shell grep and reads by `sed` through `ctx_execute` (its rules for Grep and
    Read), which only print what they select."""

    async def output(self) -> None:
        command = {"label": self.q.doc, "command": f"cat {shlex.quote(self.path())}"}
        await self.call("ctx_batch_execute", {"commands": [command], "queries": [self.q.question]})

    async def search(self) -> list[Spot]:
        return []  # the batch call searched already, and its snippets name no lines

    async def shell(self, code: str) -> str:
        _, text = await self.call("ctx_execute", {"language": "shell", "code": code})
        return text

    async def grep(self, word: str) -> list[Spot]:
        path = shlex.quote(self.path())
        text = await self.shell(f"grep -n -i -F -m 10 -- {shlex.quote(word)} {path} | cut -c1-300")
        return [(0, int(n)) for n in GREP_LINE.findall(text)]

    async def load(self, item: int, line: int) -> None:
        first = max(line - 2, 1)
        text = await self.shell(f"sed -n '{first},{first + 60}p' {shlex.quote(self.path())} | head -c {READ_CHARS}")
        self.read.append((0, first, first + text.count("\n")))


READERS: dict[str, type[Reader]] = {"offprompt": Offprompt, "sift-gateway": Sift, "context-mode": ContextMode}


async def answer(reader: Reader, pause_s: float) -> dict[str, Any]:
    """The reader's steps on its question until answered, and what they cost."""
    await reader.output()
    await anyio.sleep(pause_s)
    if not reader.done:
        await reader.read_at(await reader.search())
    word = grep_word(reader.q.question)
    if not reader.done and word:
        await reader.read_at(await reader.grep(word))
    return {
        "id": reader.q.id,
        "answered": reader.done,
        "calls": reader.calls,
        "tokens": reader.tokens,
        "steps": reader.steps,
    }
