"""10. Passing a stored output on: by reference (`⟦memory:…⟧`) against the model reading it back and sending it.

The bench hello server's `text` answers 1 MB and 10 MB, which offprompt stores; its `digest` takes a text and
answers its size and SHA-256. Two ways to hand the stored text to `digest`, in turn:

- by reference: one call, `digest(text="⟦memory:NS/0⟧")`; offprompt fills it in before the call goes out;
- read back: `memory_load` windows of 20,000 tokens until the end, then `digest(text=<all of it>)`, as a
  model without references must (its context must hold the whole text).

offprompt runs in this process (`mcp.Client` on `build_server`, the SDK path) in front of the hello server as a
subprocess, with its indexer held and glibc's mmap threshold fixed as `offprompt serve` fixes it
(`allocator.py`), so the peak RSS of filling a reference in is offprompt's own and not the embedder's (sampled
every 5 ms; target: the growth at most 3x the item's size). Tokens are o200k_base over what
the model sees (the reference, its own calls' arguments, the answers); seconds from the first call to the
digest's answer; the digest must match the original both ways.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import threading
import time
from typing import Any

import mcp_types as mt
import psutil
from mcp import Client

from bench import peers
from bench.context import Context, HeldIndexing
from bench.corpus import MB
from bench.report import Row, SectionResult, check
from offprompt.allocator import return_big_buffers
from offprompt.config import parse_config
from offprompt.proxy.downstreams import Proxy
from offprompt.serve.app import build_server
from offprompt.tokens import count_tokens

NAME = "pass_on"
TITLE = "10. Passing a stored output on"
WINDOW_TOKENS = 20_000
TARGET_RSS_RATIO = 3.0
_LINE = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.\n"


def _expected_digest(n_bytes: int) -> str:
    data = (_LINE * (n_bytes // len(_LINE) + 1))[:n_bytes].encode()
    return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"


def _text(result: mt.CallToolResult, first: bool = False) -> str:
    texts = [b.text for b in result.content if isinstance(b, mt.TextContent)]
    return texts[0] if first else "\n".join(texts)


def _meta(result: mt.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None, _text(result)
    return dict(result.meta["offprompt"])


def _tokens(value: Any) -> int:
    return count_tokens(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


async def _by_reference(client: Client, token: str) -> tuple[str, int, int]:
    arguments = {"text": token}
    answer = _text(await client.call_tool("hello__digest", arguments))
    return answer, _tokens(arguments) + _tokens(answer), 1


async def _read_back(client: Client, namespace: str) -> tuple[str, int, int]:
    text, offset, tokens, calls = "", 0, 0, 0
    while offset is not None:
        arguments = {"artifact_namespace": namespace, "offset": offset, "max_tokens": WINDOW_TOKENS}
        window = await client.call_tool("memory_load", arguments)
        calls += 1
        chunk = _text(window, first=True)  # the window itself (a second block says where it ends)
        text += chunk
        tokens += _tokens(arguments) + count_tokens(chunk)
        offset = _meta(window)["next_offset"]
    arguments = {"text": text}
    answer = _text(await client.call_tool("hello__digest", arguments))
    return answer, tokens + _tokens(arguments) + _tokens(answer), calls + 1


class _PeakRss:
    """The process's peak RSS while the block runs, sampled every 5 ms by a thread."""

    def __enter__(self) -> _PeakRss:
        self.process = psutil.Process()
        self.before = self.peak = self.process.memory_info().rss / MB
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.process.memory_info().rss / MB)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss / MB)


async def _run(ctx: Context, res: SectionResult) -> None:
    if return_big_buffers():  # as `offprompt serve` does at its start
        res.notes.append("glibc's mmap threshold fixed at 1 MiB, as offprompt serve sets it")
    loaded = parse_config({"mcpServers": {"hello": peers.hello().config()}})
    sizes = {"1 MB": MB, "10 MB": 10 * MB} if not ctx.quick else {"1 MB": MB}
    with ctx.memory("pass_on") as memory:
        held = HeldIndexing(memory)
        try:
            async with Proxy(loaded.servers).running() as proxy, Client(build_server(memory, proxy)) as client:
                for label, n_bytes in sizes.items():
                    await _one_size(res, client, label, n_bytes)
        finally:
            held.release()


async def _one_size(res: SectionResult, client: Client, label: str, n_bytes: int) -> None:
    reference = await client.call_tool("hello__text", {"n_bytes": n_bytes})
    stored = _meta(reference)
    seen = count_tokens(_text(reference))
    gc.collect()
    t0 = time.perf_counter()
    with _PeakRss() as rss:
        answer, tokens, calls = await _by_reference(client, stored["pass_as"])
    by_reference_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    read_answer, read_tokens, read_calls = await _read_back(client, stored["artifact_namespace"])
    read_s = time.perf_counter() - t0
    expected = _expected_digest(n_bytes)
    if answer != expected or read_answer != expected:
        raise RuntimeError(f"{label}: the digest does not match the original ({answer!r}, {read_answer!r})")
    growth = (rss.peak - rss.before) / (n_bytes / MB)
    res.rows += [
        Row(f"{label} by reference: model tokens (reference + call + answer)", seen + tokens, "tokens"),
        Row(f"{label} read back and sent: model tokens", seen + read_tokens, "tokens"),
        Row(f"{label} calls: by reference / read back", f"{calls} / {read_calls}"),
        Row(f"{label} seconds: by reference / read back", f"{by_reference_s:.2f} / {read_s:.2f}", "s"),
        check(
            f"{label} by reference: peak RSS growth over the item's size",
            round(growth, 2),
            "x",
            at_most=TARGET_RSS_RATIO,
            target=f"≤ {TARGET_RSS_RATIO:g}x",
            note=f"{rss.before:.0f} → {rss.peak:.0f} MiB",
        ),
    ]
    res.data[label] = {
        "reference_tokens": seen,
        "by_reference": {"tokens": seen + tokens, "calls": calls, "seconds": by_reference_s},
        "read_back": {"tokens": seen + read_tokens, "calls": read_calls, "seconds": read_s},
        "rss_mib": {"before": rss.before, "peak": rss.peak},
    }


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    asyncio.run(_run(ctx, res))
    return res
