"""The one result boundary: a downstream's answer to a tool call becomes what the client gets.

Every path that relays a tool result goes through `ResultBoundary`: the SDK
path (`serve/app.py`), the stdio fast lane (`serve/fastlane.py`) and
`offprompt.wrap` (`middleware.py`). It owns, once:

- the arguments that go out (what the model sent, minus what is for offprompt, with
  `⟦secret:…⟧` handles and `⟦memory:…⟧` references filled in by `arguments.py`);
- the call's failures: offprompt's own errors and a downstream's malformed or
  crashed answer become an `isError` result that says what to do, redacted like
  a result, and nothing of a sensitive (`always`) result is quoted in it or in
  the log; a sensitive tool's own `isError` result and its protocol errors are
  stored like its results and answered with its reference, still as an error;
- the decision (`policy.py`) and, when the result goes off the prompt, storing
  it and answering with its reference;
- secrets (`secrets/`): handles in the arguments become their values on the
  way out, for a server allowed to receive them (and a stored output passed on
  goes only where its origin allows); known-format secrets anywhere
  in the result become handles on the way back, before anything is stored,
  unless the tool's `"secrets"` is `"pass"`;
- `_meta` keys offprompt owns (`offprompt`, `progressToken`), never taken from a
  downstream's result (`notifications.result_without_owned_meta`): a forged
  `_meta["offprompt"]` would read as one of offprompt's own references.

A downstream's protocol error (`MCPError`) of an `auto` tool goes back to the
client as the JSON-RPC error it was, its secrets replaced by handles.
A proxied resource's text and a proxied prompt's messages reach the model too:
`resource` and `prompt` redact them with the same table.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as mt
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from offprompt import deadline
from offprompt.arguments import Filled, Receiver, fill, holds_reference, holds_token
from offprompt.artifacts import from_result
from offprompt.config import OffPrompt, OffpromptSettings, SecretsMode
from offprompt.errors import OffpromptError, ResultTimeoutError
from offprompt.jsonrpc import MAX_DEPTH, MODEL_MAX_DEPTH, depth, dumps
from offprompt.memory.catalog import Origin
from offprompt.memory.reference import Reference
from offprompt.memory.task_memory import TaskMemory
from offprompt.notifications import result_without_owned_meta
from offprompt.policy import Decision, Thresholds, decide, passes_by_size, result_text_size
from offprompt.proxy.intent import INTENT
from offprompt.proxy.list_secrets import OWNED_META
from offprompt.secrets import Redactor, json_may_hold_secret, may_hold_secret, may_hold_secret_in
from offprompt.tokens import count_tokens

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The walks over arguments and results (handles, redaction) recurse once or twice per level: JSON as deep as
# offprompt reads must not meet Python's default limit of 1,000 frames. Set once, when the boundary is imported.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 6 * MAX_DEPTH))

#: Gives the memory to store into; `offprompt.wrap` opens it on first use, in a worker thread.
MemorySource = Callable[[], TaskMemory]
#: Sends the call downstream with the arguments to forward; answers the result as JSON or as a model.
Fetch = Callable[[dict[str, Any] | None], Awaitable[Mapping[str, Any] | mt.CallToolResult]]


@dataclass(frozen=True, slots=True)
class CallSite:
    """One tool call being answered: which tool, under which policy, for whom."""

    server: str
    tool: str
    mode: OffPrompt
    arguments: dict[str, Any] | None = None
    owner: str = ""
    #: The tool's `intent` argument is offprompt's (added to its schema when listed): never forwarded.
    intent: bool = False
    secrets: SecretsMode = "redact"
    #: Kinds of secret the config lets through for this tool (`secrets_allow`).
    secrets_allow: frozenset[str] = frozenset()
    #: The tool's input schema as its server lists it: what type a `⟦memory:…⟧` argument takes.
    schema: Mapping[str, Any] | None = None
    #: The server's `max_argument_bytes`: the largest arguments once `⟦memory:…⟧` references are filled in.
    max_argument_bytes: int | None = None
    #: The call's `timeout_seconds`: how long its result may take to look at and store once it has come.
    timeout: float | None = None

    @property
    def source(self) -> str:
        """`server.tool`, as references and errors name it."""
        return f"{self.server}.{self.tool}"


@dataclass(frozen=True, slots=True)
class ResultSettings:
    """What the boundary needs of the settings: when to store, and how much of a stored text to show."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    preview_tokens: int = 0
    outline_tokens: int = 400
    intent: bool = True

    @classmethod
    def of(cls, settings: OffpromptSettings) -> ResultSettings:
        thresholds = Thresholds(tokens=settings.threshold_tokens, blob_bytes=settings.blob_threshold_bytes)
        return cls(
            thresholds=thresholds,
            preview_tokens=settings.preview_tokens,
            outline_tokens=settings.outline_tokens,
            intent=settings.intent,
        )


#: Text beyond which a result is looked at (its secrets, its tokens) in a worker thread rather than on the event loop.
WEIGHTY_CHARS = 64 * 1024


def _weighty(result: mt.CallToolResult) -> bool:
    """Whether looking at the result could hold the event loop: much text, or structured content of any size
    (its size is known only once serialised)."""
    if result.structured_content is not None:
        return True
    chars = 0
    for block in result.content:
        if isinstance(block, mt.TextContent):
            chars += len(block.text)
        elif isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.TextResourceContents):
            chars += len(block.resource.text)
    return chars > WEIGHTY_CHARS


def error_result(message: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=message)], is_error=True)


def _stored_error(site: CallSite, reference: mt.CallToolResult) -> mt.CallToolResult:
    """A sensitive tool's error, stored: still an error to the client, and the model reads it only if it must."""
    said = mt.TextContent(
        text=f'{site.source} reported an error. Its tool is marked sensitive ("off_prompt": "always"), so the '
        "error was stored like its results and nothing of it is shown here."
    )
    return reference.model_copy(update={"content": [said, *reference.content], "is_error": True})


#: Each content block type, and the fields it must have: the fast lane's check before relaying bytes unread.
_BLOCK_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "image": (("data", str), ("mimeType", str)),
    "audio": (("data", str), ("mimeType", str)),
    "resource": (("resource", dict),),
    "resource_link": (("uri", str), ("name", str)),
}


def _blocks_well_formed(content: Any) -> bool:
    """Whether every content block has an MCP type and its fields (a client could not read it otherwise)."""
    if not isinstance(content, list):
        return False
    for block in content:
        fields = _BLOCK_FIELDS.get(str(block.get("type"))) if isinstance(block, dict) else None
        if fields is None or not all(isinstance(block.get(name), kind) for name, kind in fields):
            return False
    return True


def _has_owned_meta(raw: dict[str, Any]) -> bool:
    """Whether a result as JSON has a `_meta` key offprompt owns, in itself or a content block (checked here: the
    tiny call makes no call out of this module for it)."""
    content = raw.get("content")
    metas = (
        [raw.get("_meta"), *(b.get("_meta") for b in content if isinstance(b, dict))]
        if isinstance(content, list)
        else [raw.get("_meta")]
    )
    return any(isinstance(meta, dict) and not OWNED_META.isdisjoint(meta) for meta in metas)


def _model_has_owned_meta(result: mt.CallToolResult) -> bool:
    return any(
        isinstance(meta, dict) and not OWNED_META.isdisjoint(meta)
        for meta in (result.meta, *(getattr(block, "meta", None) for block in result.content))
    )


def _error_as_result(exc: MCPError) -> mt.CallToolResult:
    """A downstream's protocol error as an `isError` result, to be stored like a sensitive tool's results."""
    text = f"JSON-RPC error {exc.code}: {exc.message}"
    if exc.error.data is not None:
        text += f"\ndata: {dumps(exc.error.data).decode()}"
    return error_result(text)


def _noted(result: mt.CallToolResult, filled: Filled, site: CallSite) -> mt.CallToolResult:
    """The answer, saying so when handles in a stored output passed on were left as handles."""
    if not filled.handles_left:
        return result
    note = mt.TextContent(
        text=f"offprompt: {filled.handles_left} secret handle(s) in the stored output passed to {site.source} were "
        f'sent as handles, not values: "{site.server}" may not receive them (the producing server\'s "share_with" '
        "names who may)."
    )
    return result.model_copy(update={"content": [*result.content, note]})


def model_text(result: mt.CallToolResult) -> str:
    """The text of a result's content blocks: what a client puts in the prompt."""
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


def result_json(result: mt.CallToolResult) -> dict[str, Any]:
    """A result as JSON for a 2025-era client (the fast lane serves those only)."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.pop("resultType", None)  # a 2026-era field
    return dumped


class ResultBoundary:
    """Turns downstream answers into client answers; built once per server from the settings."""

    def __init__(
        self,
        memory: TaskMemory | MemorySource,
        settings: ResultSettings | None = None,
        redactor: Redactor | None = None,
        sharing: Mapping[str, Collection[str]] | None = None,
        flows_to: Mapping[str, Collection[str] | None] | None = None,
    ) -> None:
        """`sharing`: each server's `share_with`, the other servers its secrets' values and sensitive outputs may
        go to; `flows_to`: each server's `flows_to`, the servers its other outputs may go to (absent: any)."""
        self._memory: MemorySource = (lambda: memory) if isinstance(memory, TaskMemory) else memory
        self._opened = memory if isinstance(memory, TaskMemory) else None
        self.settings = settings or ResultSettings()
        self.sharing: Mapping[str, Collection[str]] = sharing or {}
        self.flows_to: Mapping[str, Collection[str] | None] = flows_to or {}
        # The secrets table sits in the memory's directory; it opens with the first secret or handle.
        self.redactor = redactor or Redactor(lambda: self._memory().secret_store(), sharing)

    # -- the call --------------------------------------------------------------------------------------------

    async def forward(self, site: CallSite) -> Filled:
        """The arguments the downstream gets: without offprompt's `intent`, secret handles replaced by their values
        and `⟦memory:…⟧` references by the stored outputs they name (for this call only: the catalog keeps the
        arguments as the model wrote them). Raises `UnknownSecretError`, `SecretNotSharedError` or
        `ReferenceRefusedError` when something may not go to this server, so nothing is sent."""
        arguments = self._tool_arguments(site)
        if arguments is None or not holds_token(arguments):
            return Filled(arguments)
        return await anyio.to_thread.run_sync(self._fill, site, arguments)

    def _fill(self, site: CallSite, arguments: dict[str, Any]) -> Filled:
        memory = self._memory() if holds_reference(arguments) else None
        receiver = Receiver(
            site.server,
            site.tool,
            site.owner,
            site.schema,
            site.max_argument_bytes,
            self.sharing,
            self.flows_to,
        )
        filled = fill(arguments, receiver, self.redactor, memory)
        if memory is not None:
            memory.record_flows(filled.flows(site.source, time.time()))
        return filled

    @staticmethod
    def _tool_arguments(site: CallSite) -> dict[str, Any] | None:
        """The arguments meant for the tool itself: without offprompt's `intent`."""
        if site.intent and site.arguments and INTENT in site.arguments:
            return {key: value for key, value in site.arguments.items() if key != INTENT}
        return site.arguments

    def intent_of(self, site: CallSite) -> str | None:
        """What the model said it wants from the result, when the reference may show passages for it."""
        if not (site.intent and self.settings.intent and site.mode != "always"):
            return None  # a sensitive result shows nothing of itself
        value = (site.arguments or {}).get(INTENT)
        return value if isinstance(value, str) and value.strip() else None

    async def answer(self, site: CallSite, fetch: Fetch) -> mt.CallToolResult:
        """The client's answer as a model (the SDK path and `offprompt.wrap`)."""
        try:
            filled = await self.forward(site)
            got = await fetch(filled.arguments)
            result = got if isinstance(got, mt.CallToolResult) else mt.CallToolResult.model_validate(got)
            return _noted(await self.settle(site, result), filled, site)
        except MCPError as exc:
            if site.mode == "always":
                return await self._stored_protocol_error(site, exc)
            raise await self.error(exc, site.owner, site.secrets, site.server, site.secrets_allow) from None
        except Exception as exc:  # the one boundary of a proxied call: the server must not go down
            return await self._failed(site, exc)

    async def relay(self, site: CallSite, fetch: Fetch) -> bytes | dict[str, Any]:
        """The client's answer as JSON (the fast lane): the downstream's own bytes whenever it passes through."""
        try:
            return await self._relay(site, fetch)
        except MCPError as exc:
            if site.mode == "always":
                return result_json(await self._stored_protocol_error(site, exc))
            raise await self.error(exc, site.owner, site.secrets, site.server, site.secrets_allow) from None
        except Exception as exc:  # the one boundary of a fast-lane call: the server must not go down
            return result_json(await self._failed(site, exc))

    async def _relay(self, site: CallSite, fetch: Fetch) -> bytes | dict[str, Any]:
        filled = await self.forward(site)
        answer = await self._relayed(site, await fetch(filled.arguments))
        if not filled.handles_left:
            return answer
        result = mt.CallToolResult.model_validate(json.loads(answer) if isinstance(answer, bytes) else answer)
        return result_json(_noted(result, filled, site))

    async def _relayed(self, site: CallSite, raw: Mapping[str, Any] | mt.CallToolResult) -> bytes | dict[str, Any]:
        if isinstance(raw, mt.CallToolResult):
            return result_json(await self.settle(site, raw))
        if not isinstance(raw, dict):
            return result_json(error_result(f"{site.source} answered with a result that is not an object."))
        if not _blocks_well_formed(raw.get("content")):
            mt.CallToolResult.model_validate(raw)  # raises what is wrong, as the SDK path says it
        if _has_owned_meta(raw):  # a forged `_meta["offprompt"]` would read as offprompt's own
            raw = result_without_owned_meta(raw)
        body = dumps(raw)
        if passes_by_size(site.mode, raw.get("isError") is True, len(body), self.settings.thresholds):
            if site.secrets == "pass" or not may_hold_secret(body):
                self._count_inline(site, len(body))  # its bytes as relayed: nothing parsed or tokenized here
                return body  # the common case: the downstream's bytes, unread
            redacted = await anyio.to_thread.run_sync(
                self.redactor.redact_wire, raw, site.owner, site.server, site.secrets_allow
            )
            self._count_inline(site, len(body))
            return body if redacted is raw else redacted
        result = mt.CallToolResult.model_validate(raw)
        answer = await self.settle(site, result)
        return body if answer is result else result_json(answer)

    # -- what the client gets ----------------------------------------------------------------------------------

    async def settle(self, site: CallSite, result: mt.CallToolResult) -> mt.CallToolResult:
        """The result itself, or, when the policy says so, the reference to where it was stored; its secrets
        replaced by handles either way (a stored result is redacted before it is stored)."""
        if _model_has_owned_meta(result):  # a forged `_meta["offprompt"]` would read as offprompt's own
            result = mt.CallToolResult.model_validate(result_without_owned_meta(result_json(result)))
        nested = depth(result.structured_content, MODEL_MAX_DEPTH)
        if nested > MODEL_MAX_DEPTH:
            return error_result(
                f"{site.source} answered with structured content nested more than {MODEL_MAX_DEPTH} levels deep, "
                f"deeper than offprompt can check and answer here (the SDK's models stop near 255 levels). Over "
                f"stdio, a 2025-11-25 client's calls take the fast lane, which relays up to {MAX_DEPTH} levels."
            )
        with deadline.due_within(site.timeout):
            try:
                return await self._settled(site, result)
            except ResultTimeoutError as exc:
                logger.warning("the result of %s was stopped past the call's timeout (%s s)", site.source, site.timeout)
                return error_result(f"The result of {site.source} {exc}")

    async def _settled(self, site: CallSite, result: mt.CallToolResult) -> mt.CallToolResult:
        if _weighty(result):  # looked at in a worker thread: the event loop answers other calls meanwhile
            result, decision = await anyio.to_thread.run_sync(self._screened, site, result)
        else:
            if site.secrets == "redact" and may_hold_secret_in(result):
                result = await anyio.to_thread.run_sync(
                    self.redactor.redact_result, result, site.owner, site.server, site.secrets_allow
                )
            decision = decide(site.mode, result, self.settings.thresholds)
        if not decision.store:
            self._count_inline(site, result_text_size(result)[0])
            return result
        arguments = self._tool_arguments(site)
        if site.secrets == "redact" and arguments is not None and json_may_hold_secret(arguments):
            # memory_list shows the arguments: a secret typed into them is kept out of that answer too
            arguments = await anyio.to_thread.run_sync(
                self.redactor.redact_json, arguments, site.owner, site.server, site.secrets_allow
            )
        try:
            memory = await anyio.to_thread.run_sync(self._memory)
            reference = await anyio.to_thread.run_sync(self._store, memory, site, result, arguments)
        except ResultTimeoutError:
            raise
        except OffpromptError as exc:
            return error_result(f"The result of {site.source} could not be stored off the prompt: {exc}")
        logger.info("stored %s as %s: %s", site.source, reference.record.namespace, decision.reason)
        answer = reference.to_result()
        if result.is_error:
            answer = _stored_error(site, answer)
        # Counted for `offprompt stats`: what the result held (a repeated structuredContent once), and what the
        # model got instead.
        memory.usage.stored(
            site.server, site.tool, reference.record.bytes, reference.distinct_tokens, count_tokens(model_text(answer))
        )
        self._opened = memory
        return answer

    def _screened(self, site: CallSite, result: mt.CallToolResult) -> tuple[mt.CallToolResult, Decision]:
        """The result with its secrets as handles (unless they pass), and whether the policy stores it."""
        if site.secrets == "redact" and may_hold_secret_in(result):
            result = self.redactor.redact_result(result, site.owner, site.server, site.secrets_allow)
        deadline.check()
        return result, decide(site.mode, result, self.settings.thresholds)

    def _store(
        self, memory: TaskMemory, site: CallSite, result: mt.CallToolResult, arguments: dict[str, Any] | None
    ) -> Reference:
        shown = site.mode != "always"  # a sensitive result shows nothing of itself, not even titles
        return memory.store(
            from_result(result),
            tool=site.source,
            arguments=arguments,
            owner=site.owner,
            preview_tokens=self.settings.preview_tokens if shown else 0,
            outline_tokens=self.settings.outline_tokens if shown else 0,
            intent=self.intent_of(site),
            origin=Origin(site.server, sensitive=site.mode == "always"),
        )

    # -- what else of a downstream reaches the model -----------------------------------------------------------

    async def resource(
        self, result: mt.ReadResourceResult, owner: str, secrets: SecretsMode, server: str
    ) -> mt.ReadResourceResult:
        """A proxied resource as read, its secrets replaced by handles unless its server's `"secrets"` is `"pass"`."""
        return await self._redacted(self.redactor.redact_resource, result, owner, secrets, server)

    async def prompt(
        self, result: mt.GetPromptResult, owner: str, secrets: SecretsMode, server: str
    ) -> mt.GetPromptResult:
        """A proxied prompt, its secrets replaced by handles unless its server's `"secrets"` is `"pass"`."""
        return await self._redacted(self.redactor.redact_prompt, result, owner, secrets, server)

    async def error(
        self, exc: MCPError, owner: str, secrets: SecretsMode, server: str, allow: frozenset[str] = frozenset()
    ) -> MCPError:
        """A downstream's protocol error as the client gets it: its secrets replaced by handles (`exc` itself when
        it holds none). A downstream may quote what it rejected, a credential included."""
        redact = functools.partial(self.redactor.redact_error, allow=allow)
        try:
            error = await self._redacted(redact, exc.error, owner, secrets, server)
        except Exception as problem:  # the secrets table failed: the error is still answered, its text withheld
            # No traceback: its context is the downstream's error, text and all.
            logger.error("a downstream's error could not be checked for secrets: %r", problem)
            return MCPError(
                exc.code,
                "The server's error could not be checked for secrets, so its text is not shown; see offprompt's log.",
            )
        return exc if error is exc.error else MCPError.from_error_data(error)

    @staticmethod
    async def _redacted(
        redact: Callable[[T, str, str], T], value: T, owner: str, secrets: SecretsMode, server: str
    ) -> T:
        """`redact(value, owner, server)` in a worker thread (the table is a file), unless secrets pass. These are
        rare requests, not the tiny call: the detector's own anchor scan is their prefilter."""
        if secrets == "pass":
            return value
        return await anyio.to_thread.run_sync(redact, value, owner, server)

    def _count_inline(self, site: CallSite, size: int) -> None:
        """Count a result that passed inline, for `offprompt stats`. `offprompt.wrap` opens its memory on the
        first store: what passes before that is not counted (opening it for a count would take its lock)."""
        if self._opened is not None:
            self._opened.usage.inline(site.server, site.tool, size)

    async def _stored_protocol_error(self, site: CallSite, exc: MCPError) -> mt.CallToolResult:
        """A sensitive tool's protocol error, stored like its results; a failure to store it is answered like any
        failure of the call, and chains nothing of the error (its text may hold a secret) into the log."""
        try:
            return await self.settle(site, _error_as_result(exc))
        except Exception as problem:
            problem.__context__ = None
            return await self._failed(site, problem)

    async def _failed(self, site: CallSite, exc: BaseException) -> mt.CallToolResult:
        """`failure`, its text redacted like a result's: a downstream's words may be quoted in it."""
        result = self.failure(site, exc)
        if site.secrets == "pass" or not may_hold_secret(model_text(result)):
            return result
        try:
            return await anyio.to_thread.run_sync(
                self.redactor.redact_result, result, site.owner, site.server, site.secrets_allow
            )
        except Exception as problem:  # the secrets table failed: still an answer, its text withheld
            logger.error("an error of %s could not be checked for secrets: %r", site.source, problem)
            return error_result(
                f"{site.source} failed, and its error could not be checked for secrets, so its text is not "
                "shown; see offprompt's log."
            )

    def failure(self, site: CallSite, exc: BaseException) -> mt.CallToolResult:
        """A failed call as an error result. Nothing of a sensitive result's content is quoted, here or in the
        log: a validation error carries the offending value."""
        sensitive = site.mode == "always"
        if isinstance(exc, OffpromptError):
            return error_result(str(exc))
        if isinstance(exc, ValidationError):
            logger.warning("%s answered with a malformed tool result (%d problems)", site.source, exc.error_count())
            if sensitive:
                return error_result(
                    f"{site.source} answered with a malformed tool result. Its tool is marked sensitive "
                    '("off_prompt": "always"), so nothing of it is shown; the server\'s own log may say more.'
                )
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "result"
            return error_result(f"{site.source} answered with a malformed tool result ({where}: {first['msg']}).")
        if sensitive:
            logger.error("%s failed in offprompt (%s)", site.source, type(exc).__name__)
            return error_result(
                f"{site.source} failed in offprompt ({type(exc).__name__}); its tool is marked sensitive, so the "
                "error's text is not shown. See offprompt's log."
            )
        logger.exception("%s failed in offprompt", site.source)
        return error_result(f"{site.source} failed in offprompt ({type(exc).__name__}: {exc}); see offprompt's log.")
