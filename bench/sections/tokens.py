"""4. Tokens saved: what reaches the client without offprompt, and with it, for large real results.

Each item is one call to a real MCP server, made twice in the same run:
directly (what the client gets without offprompt) and through `offprompt serve
--config` in front of the same server with default settings. When offprompt
stores the result, the model gets the reference and then makes the calls
needed to answer one question: `memory_query` (top 3 in that namespace), then
`memory_load` of 600 tokens around the best hit (an image: `memory_load` of
the image item). Tokens are o200k_base over the JSON of what the client
receives (`content`; not `_meta`, and not `structuredContent`, which repeats
`content` as JSON and of which a client shows the model one or the other),
plus the JSON of the model's own follow-up calls. An image block counts as the model would be
billed for it, not as base64: Anthropic's wxh/750 after fitting the image
within 1568 px and 1.15 megapixels.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import http.server
import io
import json
import math
import pydoc
import ssl
import struct
import sysconfig
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import peers
from bench.context import REPO, Context
from bench.corpus import MB, noise_png
from bench.report import Row, SectionResult
from bench.stdio import StdioPeer
from offprompt.tokens import count_tokens

NAME = "tokens"
TITLE = "4. Tokens saved"
#: The follow-up calls a model makes at most (a query, then reading around its hits) before it gives up.
MAX_CALLS = 6
ROOT_COMMIT = "46d5011"  # offprompt's first commit: a real `git show -p` of 1.6 MB that never changes
SITE = Path(sysconfig.get_paths()["purelib"])


@dataclass(frozen=True)
class Item:
    label: str
    server: str
    tool: str
    arguments: dict[str, Any]
    question: str
    expect: str  # a string the answer must contain: checks that the calls did find it
    image: bool = False


def image_size(raw: bytes) -> tuple[int, int]:
    """Width and height; a PNG's from its header (PIL rejects the everything server's logo, CRC and all)."""
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR":
        w, h = struct.unpack(">II", raw[16:24])
        return int(w), int(h)
    from PIL import Image

    size: tuple[int, int] = Image.open(io.BytesIO(raw)).size
    return size


def vision_tokens(data_b64: str) -> int:
    w, h = image_size(base64.b64decode(data_b64))
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)))
    return math.ceil(round(w * scale) * round(h * scale) / 750)


def client_tokens(result: dict[str, Any]) -> dict[str, int]:
    """Tokens of what the client passes to the model: text as JSON, images as vision tokens."""
    images = 0
    blocks = []
    for block in result.get("content", []):
        if block.get("type") == "image":
            images += vision_tokens(block["data"])
            blocks.append({k: v for k, v in block.items() if k != "data"})
        else:
            blocks.append(block)
    payload: dict[str, Any] = {"content": blocks}
    if result.get("isError"):
        payload["isError"] = True
    return {"text": count_tokens(json.dumps(payload, ensure_ascii=False, sort_keys=True)), "image": images}


def call_tokens(name: str, arguments: dict[str, Any]) -> int:
    return count_tokens(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False))


def texts_of(result: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")


@contextmanager
def http_page(directory: Path, html: str) -> Iterator[str]:
    """Serve one HTML page on 127.0.0.1 for the fetch server; yields its URL."""
    (directory / "ssl.html").write_text(html, encoding="utf-8")
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ssl.html"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _items(scratch: Path, url: str) -> list[Item]:
    big_file = SITE / "kubernetes" / "client" / "api" / "storage_v1_api.py"
    return [
        Item(
            "1.2 MB source file (server-filesystem read_text_file)",
            "fs",
            "read_text_file",
            {"path": str(big_file)},
            "Which HTTP path does the API call that lists CSIDriver objects use?",
            "/apis/storage.k8s.io/v1/csidrivers",
        ),
        Item(
            "git show -p of a 1.6 MB commit (mcp-server-git git_show)",
            "git",
            "git_show",
            {"repo_path": str(REPO), "revision": ROOT_COMMIT},
            "How many random bits are in an artifact namespace name?",
            "67 random bits",
        ),
        Item(
            "JSON array: directory tree of a package (server-filesystem directory_tree)",
            "fs",
            "directory_tree",
            {"path": str(SITE / "kubernetes" / "client")},
            "Which file holds the model for a CSI driver spec in the v1 API?",
            "v1_csi_driver_spec.py",
        ),
        Item(
            "long HTML page: pydoc of ssl (mcp-server-fetch, raw)",
            "fetch",
            "fetch",
            {"url": url, "raw": True, "max_length": 999_999},
            "Which function returns a new SSLContext with secure default settings?",
            "create_default_context",
        ),
        Item(
            "tiny image (server-everything get-tiny-image)",
            "everything",
            "get-tiny-image",
            {},
            "What does the image show?",
            "",
            image=True,
        ),
        Item(
            "5 MB screenshot-size PNG (server-filesystem read_media_file)",
            "fs",
            "read_media_file",
            {"path": str(scratch / "screenshot.png")},
            "What does the image show?",
            "",
            image=True,
        ),
    ]


async def _wait_indexed(op: StdioPeer, namespace: str, limit: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        answer = await op.call_tool("memory_query", {"query": "x", "artifact_namespace": namespace, "top_k": 1})
        if not answer.get("_meta", {}).get("offprompt", {}).get("indexing"):
            return time.perf_counter() - start
        await asyncio.sleep(1.0)
    return -1.0


async def _follow_up(op: StdioPeer, item: Item, ref: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The calls the model makes to answer the item's question from the reference; their tokens and texts."""
    meta = ref["_meta"]["offprompt"]
    namespace = meta["artifact_namespace"]
    calls: list[tuple[str, dict[str, Any]]] = []
    found = ""
    steps: list[dict[str, Any]] = []
    if item.image:
        kinds = meta.get("kinds", [])
        image_item = kinds.index("image") if "image" in kinds else 0
        calls.append(("memory_load", {"artifact_namespace": namespace, "item": image_item}))
    else:
        calls.append(("memory_query", {"query": item.question, "artifact_namespace": namespace, "top_k": 5}))
    for name, arguments in calls:
        result = await op.call_tool(name, arguments)
        steps.append(
            {
                "call": name,
                "arguments": arguments,
                "call_tokens": call_tokens(name, arguments),
                "result_tokens": client_tokens(result),
            }
        )
        found += texts_of(result)
        if name != "memory_query":
            continue
        # Read around the hits in turn, as a model would, until the answer is in what it read (or it gives up).
        for hit in result.get("_meta", {}).get("offprompt", {}).get("results", []):
            if (item.expect and item.expect in found) or len(steps) >= MAX_CALLS:
                break
            load_args = {
                "artifact_namespace": namespace,
                "item": hit["item"],
                "offset": max(hit["offset"] - 100, 0),
                "max_tokens": 600,
            }
            loaded = await op.call_tool("memory_load", load_args)
            steps.append(
                {
                    "call": "memory_load",
                    "arguments": load_args,
                    "call_tokens": call_tokens("memory_load", load_args),
                    "result_tokens": client_tokens(loaded),
                }
            )
            found += texts_of(loaded)
            if not item.expect:
                break
    return steps, found


def _total(tokens: dict[str, int]) -> int:
    return tokens["text"] + tokens["image"]


async def _run(ctx: Context, res: SectionResult) -> None:
    scratch = ctx.workdir / "tokens"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "screenshot.png").write_bytes(noise_png(5 * MB))
    html = pydoc.HTMLDoc().page("ssl", pydoc.HTMLDoc().docmodule(ssl))
    servers = {
        "fs": peers.filesystem(scratch, SITE),
        "git": peers.git(),
        "fetch": peers.fetch(),
        "everything": peers.everything(),
    }
    missing = [p.name for p in servers.values() if not p.available()]
    if missing:
        res.notes.append(f"skipped servers not installed: {', '.join(missing)} (npm ci --prefix tests/peers)")
    if not peers.offprompt_supports_config():
        raise RuntimeError("this offprompt has no `serve --config`: the tokens section needs the proxy")
    config = peers.write_config(
        scratch / "offprompt.json",
        {name: p.config() for name, p in servers.items() if p.available()},
        {"memory_name": "tokens", "data_dir": str(ctx.workdir / "memories")},
    )
    wait_limit = ctx.pick(600.0, 20.0)
    rows: list[dict[str, Any]] = []
    with http_page(scratch, html) as url:
        items = [i for i in _items(scratch, url) if i.server not in missing]
        direct: dict[str, StdioPeer] = {}
        try:
            for name in {i.server for i in items}:
                direct[name] = await StdioPeer.spawn(
                    servers[name].command, env=servers[name].env, stderr=scratch / f"{name}.log"
                )
                await direct[name].initialize()
            async with await StdioPeer.spawn(
                peers.offprompt_command("serve", "--config", str(config)), stderr=scratch / "offprompt.log"
            ) as op:
                await op.initialize()
                await op.list_tools()
                refs = []
                for item in items:
                    ctx.log(f"tokens: {item.label}")
                    plain = await direct[item.server].call_tool(item.tool, item.arguments)
                    via = await op.call_tool(peers.public_name(item.server, item.tool), item.arguments)
                    refs.append((item, plain, via))
                for item, plain, via in refs:
                    without = client_tokens(plain)
                    with_ref = client_tokens(via)
                    stored = "artifact_namespace" in via.get("_meta", {}).get("offprompt", {})
                    row: dict[str, Any] = {
                        "item": item.label,
                        "question": item.question,
                        "stored": stored,
                        "bytes": len(json.dumps(plain.get("content", []))),
                        "without": without,
                        "reference": with_ref,
                        "steps": [],
                    }
                    total_with = _total(with_ref)
                    if not stored:
                        row["identical_inline"] = plain.get("content") == via.get("content")
                    if stored:
                        namespace = via["_meta"]["offprompt"]["artifact_namespace"]
                        if not item.image:
                            ctx.log(f"tokens: waiting for {item.label} to be indexed")
                            row["index_wait_s"] = await _wait_indexed(op, namespace, wait_limit)
                        steps, found = await _follow_up(op, item, via)
                        row["steps"] = steps
                        total_with += sum(s["call_tokens"] + _total(s["result_tokens"]) for s in steps)
                        if item.image:
                            # An image saves tokens only if the model can see it again: a memory_load that
                            # came back without an image block (over an answer cap) is no answer.
                            row["answer_found"] = any(s["result_tokens"]["image"] > 0 for s in steps)
                        else:
                            row["answer_found"] = (item.expect in found) if item.expect else None
                    row["with"] = total_with
                    row["saved_pct"] = 100 * (1 - total_with / _total(without))
                    rows.append(row)
        finally:
            for peer in direct.values():
                await peer.close()

    # A saving counts only where the answer was found (or the result passed inline): tokens saved by not
    # answering the question are not saved.
    counted = [r for r in rows if r.get("answer_found") is not False]
    for r in rows:
        calls = len(r["steps"])
        how = "stored" if r["stored"] else "passed inline (under the threshold)"
        if r["stored"] and r.get("answer_found") is not None:
            how += f", answer found in {calls} calls" if r["answer_found"] else f", answer NOT found in {calls} calls"
        if r.get("index_wait_s", 0) < 0:
            how += ", indexing unfinished"
        value = r["saved_pct"] if r.get("answer_found") is not False else None
        label = f"{r['item']}: {_total(r['without']):,} → {r['with']:,} tokens"
        res.rows.append(Row(label, value, "% saved", note=how if value is not None else how + "; no saving claimed"))
    if counted:
        total_without = sum(_total(r["without"]) for r in counted)
        total_with = sum(r["with"] for r in counted)
        extra = sum(len(r["steps"]) for r in counted)
        res.rows.append(
            Row(
                f"overall, items answered: {total_without:,} → {total_with:,} tokens",
                100 * (1 - total_with / total_without),
                "% saved",
                note=f"{len(counted)} of {len(rows)} items, {extra} follow-up calls",
            )
        )
    text_rows = [r for r in counted if not r["without"]["image"]]
    if text_rows:
        tw = sum(_total(r["without"]) for r in text_rows)
        tv = sum(r["with"] for r in text_rows)
        res.rows.append(Row(f"text items answered: {tw:,} → {tv:,} tokens", 100 * (1 - tv / tw), "% saved"))
    res.data["items"] = rows
    res.notes.append(
        "Tokens: o200k_base over the JSON of the content blocks the client gets, plus the follow-up "
        "calls' own JSON; images at Anthropic's wxh/750 (fitted to 1568 px, 1.15 MP), not as base64 text. "
        "A question about an image needs the image back, so those items cannot save tokens; offprompt's default "
        "blob threshold (256 KB) also passes the tiny image inline."
    )


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    asyncio.run(_run(ctx, res))
    return res
