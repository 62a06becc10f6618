"""The lists the stdio prelude answers at the next start (`serve.prelude`): `tools/list` and `prompts/list` of the
memory tools and the proxied servers, shaped as the server answers each protocol version, kept per start key.

`serve` keeps them as soon as every server has had its first start, and again whenever a list changes, whatever
the client does (a client that gives up early still leaves them); `check` and `init` keep them after starting
every server, so the first start after set-up lists every tool at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from offprompt.config import LoadedConfig, StdioServer, load_config
from offprompt.errors import ConfigError
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.list_cache import ListCache
from offprompt.secrets import Redactor
from offprompt.serve.opening import variants
from offprompt.serve.prelude import FrontCache
from offprompt.tools import TOOLS

__all__ = ["Kept", "composed_lists", "keep_front_lists", "keep_lists_now", "prime_front_lists", "serving_proxy"]

logger = logging.getLogger(__name__)


async def composed_lists(proxy: Proxy | None) -> dict[str, Any]:
    """`tools/list` and `prompts/list` as the server answers them now, by protocol version."""
    tools = [tool.definition() for tool in TOOLS.values()]
    prompts: list[mt.Prompt] = []
    if proxy is not None:
        tools += await proxy.list_tools()
        prompts = await proxy.list_prompts()
    results = {
        "tools/list": mt.ListToolsResult(tools=tools),
        "prompts/list": mt.ListPromptsResult(prompts=prompts),
    }
    composed: dict[str, Any] = {}
    for method, result in results.items():
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        by_version = {
            version: methods.serialize_server_result(method, version, dict(dumped))
            for version in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
        }
        composed[method] = variants(by_version)
    return composed


@dataclass
class Kept:
    """Whether the lists the server answers now are kept for the next start (a list changing makes them stale)."""

    now: bool = False


async def keep_front_lists(front: FrontCache, proxy: Proxy, kept: Kept) -> None:
    """Keep the lists for `front` once every server has had its first start, then each time one changes (run it
    in a task: it returns only when cancelled)."""
    changed = anyio.Event()

    async def note(listings: Any) -> None:
        kept.now = False
        changed.set()

    proxy.listeners.append(note)
    await proxy.ready()
    while True:
        changed = anyio.Event()
        saved = await keep_lists_now(front, proxy)
        kept.now = saved and not changed.is_set()
        await changed.wait()


async def keep_lists_now(front: FrontCache, proxy: Proxy) -> bool:
    """Keep the lists the server answers now for `front`'s next start; whether they were."""
    try:
        lists = await composed_lists(proxy)
    except Exception as exc:  # the next start lists from the real server: slower, never wrong
        logger.info("could not keep the lists for the next start: %s", exc)
        return False
    await anyio.to_thread.run_sync(front.save, lists)
    return True


def serving_proxy(config: LoadedConfig, default_timeout: float | None = None) -> Proxy:
    """The proxy `serve` runs for `config` (`check` and `init` list through the same one, so their lists are the
    ones `serve` answers)."""
    places = {
        name: config.place(name, "command" if isinstance(server, StdioServer) else "url")
        for name, server in config.servers.items()
    }
    tool_places = {
        name: {entry: config.place(name, "tools", entry) for entry in server.tools}
        for name, server in config.servers.items()
    }
    return Proxy(
        config.servers,
        default_timeout=default_timeout if default_timeout is not None else config.settings.call_timeout_seconds,
        places=places,
        intent=config.settings.intent,
        tool_places=tool_places,
        cache=ListCache.default(),
    )


def prime_front_lists(config_path: Path) -> bool:
    """Start every server of the config once and keep the lists `serve --config CONFIG_PATH` answers, so a
    client's first start after set-up lists every tool at once; whether they were kept."""
    front = FrontCache.for_config(config_path)
    if front is None:
        return False
    try:
        config = load_config(config_path)
    except ConfigError:
        return False  # `check` says what is wrong with it

    async def prime() -> None:
        proxy = serving_proxy(config)
        proxy.redact_lists_with(Redactor(None, proxy.sharing()))  # the lists it keeps hold handles, never secrets
        async with proxy.running():
            await proxy.ready()
            front.save(await composed_lists(proxy))

    anyio.run(prime)
    return True
