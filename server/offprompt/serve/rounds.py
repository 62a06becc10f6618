"""2026-07-28 clients: a downstream's request during a call becomes an input-required round trip.

A 2026-07-28 client takes no server requests. When a downstream asks (`sampling/createMessage`,
`elicitation/create`, `roots/list`) while serving such a client's call, offprompt answers the call with an
`InputRequiredResult` that carries the request and an opaque `requestState`, keeps the downstream call
waiting, and, when the client retries the call with its `inputResponses` and that `requestState`, hands the
answer to the downstream and waits again: for the call's result, or for the next request (another round).
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mt
from mcp.shared.exceptions import MCPError

#: How long a downstream's request waits for the client's retry before the downstream is told it got no answer.
ROUND_SECONDS = 300.0
#: Calls waiting for a retry, at most; the oldest are forgotten first.
MAX_WAITING = 1_000

_REQUESTS: dict[str, Any] = {
    "sampling/createMessage": mt.CreateMessageRequest,
    "elicitation/create": mt.ElicitRequest,
    "roots/list": mt.ListRootsRequest,
}


@dataclass
class _Asked:
    """One downstream request handed to the client, and the answer it waits for."""

    method: str
    params: dict[str, Any] | None
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class RoundTripChannel:
    """The client of one 2026-07-28 call, as the downstream's requests see it: asked by round trips."""

    def __init__(self, capabilities: mt.ClientCapabilities | None, owner: str = "") -> None:
        self._capabilities = capabilities
        self.owner = owner
        self._keys = itertools.count(1)
        self.asked: dict[str, _Asked] = {}  # handed out, not answered yet
        self.new = anyio.Event()  # set when a request was added or the call ended; replaced before each wait

    def supports(self, feature: str) -> bool:
        return self._capabilities is not None and getattr(self._capabilities, feature, None) is not None

    @property
    def client(self) -> object:
        return self  # no session: each call is its own client

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Nothing: a round trip's answer is all such a call's client reads (a log waits for no round)."""

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        key = f"{method.split('/')[0]}-{next(self._keys)}"
        asked = self.asked[key] = _Asked(method, params)
        self.new.set()
        with anyio.move_on_after(ROUND_SECONDS):
            await asked.answered.wait()
        self.asked.pop(key, None)
        if asked.answer is None:
            raise MCPError(mt.INTERNAL_ERROR, f"the client did not answer {method} within {ROUND_SECONDS:.0f} s")
        return asked.answer

    def pending(self) -> dict[str, _Asked]:
        """The requests not answered yet."""
        return {key: asked for key, asked in self.asked.items() if asked.answer is None}

    def deliver(self, responses: dict[str, Any]) -> None:
        for key, response in responses.items():
            asked = self.asked.get(key)
            if asked is not None and asked.answer is None:
                asked.answer = response.model_dump(by_alias=True, exclude_none=True, mode="json")
                asked.answered.set()


@dataclass
class _Call:
    channel: RoundTripChannel
    owner: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: mt.CallToolResult | None = None
    error: MCPError | None = None  # a protocol error the downstream answered with, for the client
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # cancels the call at the server


Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


class Rounds:
    """The calls of 2026-07-28 clients that wait for a retry, by `requestState`."""

    def __init__(self) -> None:
        self._waiting: OrderedDict[str, _Call] = OrderedDict()

    async def call(
        self,
        params: mt.CallToolRequestParams,
        owner: str,
        capabilities: mt.ClientCapabilities | None,
        start: Callable[[RoundTripChannel], Awaitable[mt.CallToolResult]],
        spawn: Spawn,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        """The first answer to a call (`start` runs it with the channel), or the next one to a retry."""
        if params.request_state is None:
            call = _Call(RoundTripChannel(capabilities, owner), owner)

            async def run() -> None:
                try:
                    with call.scope:
                        call.result = await start(call.channel)
                except MCPError as exc:  # runs in the proxy's task group: nothing may escape
                    call.error = exc
                finally:
                    call.done.set()
                    call.channel.new.set()  # wakes `_next`, which waits on this one event

            spawn(run)
        else:
            found = self._waiting.pop(params.request_state, None)
            if found is None or found.owner != owner:
                raise MCPError(
                    mt.INVALID_PARAMS, "Invalid or expired requestState: call the tool again from the start."
                )
            call = found
            call.channel.deliver(dict(params.input_responses or {}))
        try:
            return await self._next(call)
        except anyio.get_cancelled_exc_class():
            call.scope.cancel()  # the client gave up on the call (cancelled it): the server's call ends too
            raise

    async def _next(self, call: _Call) -> mt.CallToolResult | mt.InputRequiredResult:
        while True:
            pending = call.channel.pending()
            if call.done.is_set() or pending:
                break
            # Set by the downstream's next request and by the call's end: one event, not a task group racing two
            # (its tasks and cancel scope were a tenth of a tiny call's CPU).
            call.channel.new = anyio.Event()
            await call.channel.new.wait()
        if call.done.is_set():
            if call.error is not None:
                raise call.error
            if call.result is None:
                raise MCPError(mt.INTERNAL_ERROR, "the call ended without a result")
            return call.result
        state = secrets.token_urlsafe(18)  # the one key to this waiting call: unguessable, used once
        self._waiting[state] = call
        while len(self._waiting) > MAX_WAITING:
            self._waiting.popitem(last=False)
        requests = {
            key: _REQUESTS[asked.method].model_validate({"method": asked.method, "params": asked.params or {}})
            for key, asked in pending.items()
        }
        return mt.InputRequiredResult(input_requests=requests, request_state=state)
