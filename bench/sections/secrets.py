"""7. Secrets: what detection costs, on the tiny call and on a 1 MB result.

The tiny call goes to the bench hello server three ways, in turn: directly, and through one `offprompt serve`
under two names, one with `"secrets": "redact"` (the default) and one with `"secrets": "pass"`, so the ratio
of the two is what detection adds to the fast lane in the same run. The 1 MB figures are detection alone, in
process, next to counting the same text's tokens (which every result over the threshold pays anyway).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from bench import peers
from bench.context import REPO, Context
from bench.report import Row, SectionResult, check
from bench.stdio import StdioPeer
from bench.timing import ainterleaved, interleaved

sys.path.insert(0, str(REPO))  # the test corpus: realistic secrets made from a seeded generator

NAME = "secrets"
TITLE = "7. Secrets"

_LINE = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.\n"


def _texts() -> dict[str, str]:
    from tests.secrets.corpus import LOOKALIKES, SECRETS

    rng = random.Random(7)
    plain = (_LINE * (1_000_000 // len(_LINE) + 1))[:1_000_000]
    records = [
        {"id": i, "key": f"k{i}", "token_count": i, "url": f"https://api.example.dev/items/{i}", "note": "ok"}
        for i in range(12_000)
    ]
    json_text = json.dumps(records)[:1_000_000]
    log: list[str] = []
    size = 0
    cases = [*SECRETS, *LOOKALIKES]
    while size < 1_000_000:  # a log with a secret or a look-alike every ~10 KB
        chunk = "\n".join(f"2026-11-30T12:00:00Z INFO req={rng.getrandbits(64):016x} ok" for _ in range(180))
        chunk += "\n" + rng.choice(cases).text + "\n"
        log.append(chunk)
        size += len(chunk)
    people = [  # a table dump: every record holds a password, the case with the most findings per byte
        {
            "id": i,
            "user": f"user{i}",
            "password": "".join(rng.choice("abcdefghkmnpqrstuvwxyz23456789") for _ in range(12)),
        }
        for i in range(2_000)
    ]
    return {
        "1 MB prose, no candidate": plain,
        "1 MB JSON records, candidates, no secret": json_text,
        "1 MB log, a secret or look-alike per ~10 KB": "".join(log)[:1_000_000],
        "100 KB JSON records, a password in each": json.dumps(people, indent=1)[:100_000],
    }


def _detection(ctx: Context, res: SectionResult) -> None:
    from offprompt.jsonrpc import dumps
    from offprompt.secrets import Redactor, find_secrets, may_hold_secret
    from offprompt.tokens import count_tokens

    redactor = Redactor(ctx.workdir / "secrets-vault")
    data: dict[str, Any] = {}
    for label, text in _texts().items():
        ctx.log(f"secrets: {label}")
        body = text.encode()
        stats = interleaved(
            {
                "prefilter": lambda body=body: may_hold_secret(body),
                "detect": lambda text=text: find_secrets(text),
                "redact": lambda text=text: redactor.redact_text(text, "", "bench"),
                "count tokens": lambda text=text: count_tokens(text),
            },
            repeat=ctx.pick(7, 3),
        )
        found = len(find_secrets(text))
        tokens = stats["count tokens"].p50
        for name in ("prefilter", "redact"):
            s = stats[name]
            res.rows.append(
                Row(
                    f"{label}: {name}, p50",
                    s.p50 * 1000,
                    "ms",
                    note=f"{s.p50 / tokens:.2f}x counting its tokens ({tokens * 1000:.0f} ms); {found} secrets",
                )
            )
        data[label] = {name: s.to_json() for name, s in stats.items()} | {"secrets": found}

    tiny = {"content": [{"type": "text", "text": "hi"}], "isError": False}
    tiny_body = dumps(tiny)
    stats = interleaved(
        {"prefilter": lambda: may_hold_secret(tiny_body), "serialize": lambda: dumps(tiny)},
        repeat=ctx.pick(3000, 500),
    )
    res.rows.append(
        Row(
            "tiny result: prefilter, p50",
            stats["prefilter"].p50 * 1e6,
            "µs",
            note=f"{stats['prefilter'].p50 / stats['serialize'].p50:.2f}x serializing it",
        )
    )
    data["tiny"] = {name: s.to_json() for name, s in stats.items()}
    res.data["detection"] = data
    redactor.close()


async def _tiny_calls(ctx: Context, res: SectionResult) -> None:
    from tests.secrets.corpus import GHP

    scratch = ctx.workdir / "secrets"
    scratch.mkdir(parents=True, exist_ok=True)
    hello = peers.hello()
    config = peers.write_config(
        scratch / "offprompt.json",
        {"guarded": hello.config(), "plain": {**hello.config(), "secrets": "pass"}},
        {"memory_name": "secrets", "data_dir": str(scratch / "data")},
    )
    direct = await StdioPeer.spawn(hello.command, env=hello.env, stderr=scratch / "direct.log")
    proxied = await StdioPeer.spawn(
        peers.offprompt_command("serve", "--config", str(config)), stderr=scratch / "offprompt.log"
    )
    try:
        for peer in (direct, proxied):
            await peer.initialize()
            await peer.list_tools()

        def call(peer: StdioPeer, name: str, text: str) -> Any:
            async def once() -> None:
                result = await peer.call_tool(name, {"text": text})
                if result.get("isError"):
                    raise RuntimeError(f"{name}: {result}")

            return once

        repeat = ctx.pick(600, 100)
        ctx.log("secrets: tiny calls")
        stats = await ainterleaved(
            {
                "direct": call(direct, "echo", "hi"),
                "redact": call(proxied, "guarded__echo", "hi"),
                "pass": call(proxied, "plain__echo", "hi"),
            },
            repeat=repeat,
            warmup=20,
        )
        base = stats["direct"].p50
        for name, s in stats.items():
            res.rows.append(Row(f"tiny call: {name}, p50", s.p50 * 1000, "ms", note=f"p95 {s.p95 * 1000:.2f} ms"))
        res.rows.append(
            check(
                "tiny call: offprompt with detection / direct, p50",
                stats["redact"].p50 / base,
                "x",
                at_most=1.3,
                target="<= 1.3",
            )
        )
        res.rows.append(
            Row("tiny call: detection on / off, p50", stats["redact"].p50 / stats["pass"].p50, "x", target="≈ 1")
        )
        env_line = f"GITHUB_TOKEN={GHP}"
        with_secret = await ainterleaved(
            {
                "redact": call(proxied, "guarded__echo", env_line),
                "pass": call(proxied, "plain__echo", env_line),
            },
            repeat=repeat,
            warmup=20,
        )
        res.rows.append(
            Row(
                "tiny call holding a token: redacted / passed, p50",
                with_secret["redact"].p50 / with_secret["pass"].p50,
                "x",
                note=f"{with_secret['redact'].p50 * 1000:.2f} ms vs {with_secret['pass'].p50 * 1000:.2f} ms",
            )
        )
        res.data["tiny_calls"] = {name: s.to_json() for name, s in stats.items()}
        res.data["tiny_calls_with_secret"] = {name: s.to_json() for name, s in with_secret.items()}
    finally:
        await direct.close()
        await proxied.close()


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    _detection(ctx, res)
    asyncio.run(_tiny_calls(ctx, res))
    return res
