"""The jq worker: a process of its own that runs expressions and can be killed.

libjq holds the GIL while it runs and cannot be interrupted, so an expression
that loops or explodes must run where the server can stop it by killing the
process. This file runs as a script (`python -I _worker.py READ_FD WRITE_FD
MEMORY_BYTES`) and imports nothing of offprompt, so it starts fast and small.

Requests and answers are pickled tuples over two pipes:

    ("run", expression, keys, kinds, max_output)   → ("need", [keys]) | answer
    ("data", {key: bytes})                          (after "need")   → answer
    answer = ("ok", result_bytes, outputs) | ("error", reason, message)

`reason` is "syntax" (jq's compile message), "runtime" (jq's error), "not_json"
(an input that is not JSON; the message names the key) or "output" (the
output limit). Inputs stay cached here by key (bounded), as normalized JSON text.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
from collections import OrderedDict
from multiprocessing.connection import Connection
from typing import Any

import jq
import orjson

#: The kind of a text read as its lines when it is not JSON (`selector.LINES`).
LINES = "lines"
#: Bytes of input text kept warm between calls.
CACHE_BYTES = 256 * 1024 * 1024

# jq's module directives (which read files from jq's search path) may only open a program.
_DIRECTIVE = re.compile(r"\A(?:\s|#[^\n]*\n)*(?:import|include)\b")


class _Inputs:
    """Normalized JSON text per key, least recently used dropped first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.texts: OrderedDict[str, str] = OrderedDict()
        self.size = 0

    def get(self, key: str) -> str | None:
        text = self.texts.get(key)
        if text is not None:
            self.texts.move_to_end(key)
        return text

    def put(self, key: str, text: str) -> None:
        self.texts[key] = text
        self.size += len(text)
        while self.size > self.limit and len(self.texts) > 1:
            _, dropped = self.texts.popitem(last=False)
            self.size -= len(dropped)


def dumps(value: Any) -> bytes:
    """Compact JSON; json's own writer where orjson refuses (integers past 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()  # ASCII: a lone surrogate stays escaped


def normalize(key: str, kind: str, data: bytes) -> str:
    """The input as one JSON text. A JSON item is that already; a text item is JSON if it parses as one value,
    or the array of all its values when it holds several (JSON Lines, as `jq -s` reads them); else, of kind
    `lines` (a text whose namespace holds no JSON to point to), the array of its lines as `jq -R` reads a text,
    each with its number for memory_load: `{"line": 12, "text": "…"}` (blank lines left out)."""
    text = data.decode("utf-8")
    if kind == "json":
        return text
    try:
        values = jq.compile(".").input_text(text, slurp=True).first()
    except ValueError as exc:
        if kind != LINES:
            raise _NotJson(key, str(exc)) from None
        return dumps(lines(text)).decode()
    if not values:
        raise _NotJson(key, "it holds no JSON value")
    return dumps(values[0] if len(values) == 1 else values).decode()


def lines(text: str) -> list[dict[str, Any]]:
    """A text's non-blank lines as records."""
    return [{"line": n, "text": line} for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


class _NotJson(Exception):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message


def program(expression: str, variables: list[str]) -> str:
    """The expression in parentheses (so jq's module directives are a syntax error), with the joined inputs bound:
    the input is then `[main, *others]`."""
    body = f"(\n{expression}\n)"
    if not variables:
        return body
    binds = "".join(f".[{i + 1}] as ${name} | " for i, name in enumerate(variables))
    return f".[1:] as $ns | {binds}.[0] | {body}"


def compile_expression(expression: str, variables: list[str]) -> Any:
    if _DIRECTIVE.match(expression):
        raise ValueError("jq: error: import and include are not available: memory_select runs one expression")
    try:
        return jq.compile(program(expression, variables))
    except ValueError:
        pass
    # jq's own message, with lines and columns of the expression as written (variables declared, not bound).
    declared = dict.fromkeys(["ns", *variables])
    jq.compile(expression, args=declared)
    raise ValueError("jq: error: the expression does not compile on its own line; write it as one jq program")


def run(request: tuple[Any, ...], inputs: _Inputs, conn_in: Connection, conn_out: Connection) -> tuple[Any, ...]:
    _, expression, keys, kinds, variables, max_output = request
    try:
        compiled = compile_expression(expression, variables)
    except ValueError as exc:
        return ("error", "syntax", str(exc))
    missing = [k for k in keys if inputs.get(k) is None]
    if missing:
        conn_out.send(("need", missing))
        message = conn_in.recv()
        for key, data in message[1].items():
            try:
                inputs.put(key, normalize(key, kinds[keys.index(key)], data))
            except _NotJson as exc:
                return ("error", "not_json", f"{exc.key}\n{exc.message}")
    texts = [inputs.get(k) or "" for k in keys]
    text = texts[0] if len(texts) == 1 else "[" + ",".join(texts) + "]"
    parts: list[bytes] = []
    size = 0
    try:
        for value in compiled.input_text(text):
            part = dumps(value)
            size += len(part) + 1
            if size > max_output:
                return ("error", "output", str(size))
            parts.append(part)
    except ValueError as exc:
        return ("error", "runtime", str(exc))
    return ("ok", b"\n".join(parts), len(parts))


def main(read_fd: int, write_fd: int, memory_bytes: int) -> None:
    os.environ.clear()  # jq's `env` and `$ENV` would show the server's environment, secrets included
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    conn_in, conn_out = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    inputs = _Inputs(CACHE_BYTES)
    while True:
        try:
            request = conn_in.recv()
        except EOFError:  # the server closed the pipe: it is done with this worker
            return
        if request[0] == "run":
            conn_out.send(run(request, inputs, conn_in, conn_out))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
