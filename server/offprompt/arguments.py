"""A proxied call's arguments on their way out: `⟦secret:…⟧` handles and `⟦memory:…⟧` references filled in.

One parser reads both kinds of token, and one pass over every string of the arguments replaces them: a handle
by its value (for a server that may receive it), a reference by the stored item or the part of it that its
options name. A reference that is the whole string takes the type its argument's schema asks for:

    ⟦memory:NS/ITEM⟧                   the item: its text for a string, its JSON for an object, array or number,
                                       its bytes in base64 where the schema asks for base64
    ⟦memory:NS/ITEM lines=120-480⟧     lines 120 to 480 (1-based, both included; `lines=120-` to the end)
    ⟦memory:NS/ITEM select=.rows[0]⟧   a jq selection, with memory_select's limits (runs to the closing ⟧)

Inside a longer string a reference is replaced by its text. The pass is one: tokens inside what was filled in
stay as they are. A stored item was redacted before it was stored: its handles are put back where the
receiving server may have their values, and left (and counted) otherwise.

Who may receive what: the caller's own namespaces only; an `always` (sensitive) output goes to the server that
produced it and the servers its `share_with` names; any other output to any server, unless its server's
`flows_to` narrows that. Anything refused raises before a byte is sent.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from offprompt.artifacts import TEXT_KINDS
from offprompt.errors import NotFoundError, OffpromptError, ReferenceRefusedError
from offprompt.jsonrpc import dumps
from offprompt.memory.catalog import Flow
from offprompt.memory.reference import MEMORY_MARK, memory_token
from offprompt.memory.task_memory import TaskMemory
from offprompt.secrets import Redactor, holds_handle
from offprompt.secrets.vault import HANDLE, QUOTED_HANDLE

__all__ = ["MEMORY_MARK", "Filled", "Passed", "Receiver", "fill", "holds_reference", "holds_token", "memory_token"]

#: Both tokens, as written: a secret handle (the vault's own grammar, also percent-encoded as it sits in a URI), or
#: a memory reference with at most one option.
TOKEN: Final = re.compile(
    f"{HANDLE.pattern}"
    f"|(?i:{QUOTED_HANDLE.pattern.replace('(?P<id>', '(?P<qid>')})"
    r"|⟦memory:(?P<ns>[A-Za-z0-9_-]{1,64})/(?P<item>\d{1,6})(?: +(?P<option>lines|select)=(?P<value>[^⟧]*))?⟧"
)
#: Anything that starts like a memory reference: one that TOKEN does not read is refused, never sent as is.
_LOOSE_MEMORY: Final = re.compile(r"⟦memory:[^⟧]{0,200}⟧?")
_LINES: Final = re.compile(r"\s*(\d+)\s*(?:-\s*(\d*)\s*)?")
_BASE64_FORMATS: Final = frozenset({"byte", "base64", "binary"})
_SHAPE: Final = "write ⟦memory:NAMESPACE/ITEM⟧, optionally with one option before the ⟧: lines=120-480 or select=<jq>"


def holds_token(value: Any) -> bool:
    """Whether any string in `value` may hold a handle or a reference (the cheap check before the walk)."""
    return _any_string(value, lambda text: MEMORY_MARK in text or holds_handle(text))


def holds_reference(value: Any) -> bool:
    """Whether any string in `value` may hold a `⟦memory:…⟧` reference (the memory is needed to fill it)."""
    return _any_string(value, lambda text: MEMORY_MARK in text)


def _any_string(value: Any, test: Callable[[str], bool]) -> bool:
    if isinstance(value, str):
        return test(value)
    if isinstance(value, dict):
        return any(_any_string(item, test) for item in value.values())
    if isinstance(value, list):
        return any(_any_string(item, test) for item in value)
    return False


@dataclass(frozen=True, slots=True)
class Passed:
    """One reference filled in: which namespace, which part of it (for provenance)."""

    namespace: str
    part: str


@dataclass(slots=True)
class Filled:
    """The arguments to forward, what stored outputs went into them, and how many handles in those outputs were
    left as handles (the receiving server may not have their values)."""

    arguments: dict[str, Any] | None
    passed: list[Passed] = field(default_factory=list)
    handles_left: int = 0

    def flows(self, tool: str, at: float) -> list[tuple[str, Flow]]:
        return [(p.namespace, Flow(at, tool, p.part)) for p in self.passed]


@dataclass(frozen=True, slots=True)
class Receiver:
    """The call the arguments go to, and the config that decides what it may receive."""

    server: str
    tool: str
    owner: str
    schema: Mapping[str, Any] | None
    max_bytes: int | None
    #: Each server's `share_with` and `flows_to` (None: its outputs go anywhere).
    share_with: Mapping[str, Collection[str]]
    flows_to: Mapping[str, Collection[str] | None]


def fill(
    arguments: Mapping[str, Any] | None, receiver: Receiver, redactor: Redactor, memory: TaskMemory | None
) -> Filled:
    """The arguments with every handle and reference filled in, for forwarding only (never log or store them).

    Raises `UnknownSecretError`/`SecretNotSharedError` for a handle and `ReferenceRefusedError` for a reference
    that may not be filled in for this receiver: the call must not go out."""
    if arguments is None:
        return Filled(None)
    filler = _Filler(receiver, redactor, memory)
    properties = _properties(receiver.schema)
    out = {key: filler.value(item, properties.get(key)) for key, item in arguments.items()}
    filled = Filled(out, filler.passed, filler.left)
    if filler.passed and receiver.max_bytes is not None:
        # The arguments as written plus what was filled in (UTF-8, before JSON escapes): serializing the whole
        # of them here would hold one more copy of a 10 MB output at the call's peak.
        size = len(dumps(arguments)) + filler.filled_bytes
        if size > receiver.max_bytes:
            raise ReferenceRefusedError(
                f"The arguments of {receiver.server}.{receiver.tool} would be {size:,} bytes once their "
                f"⟦memory:…⟧ references are filled in, more than its server's max_argument_bytes "
                f"({receiver.max_bytes:,}), so the call was not sent. Pass a part (lines=A-B or select=<jq>), or "
                f'raise "max_argument_bytes" of the server "{receiver.server}" in the offprompt config.'
            )
    return filled


class _Filler:
    def __init__(self, receiver: Receiver, redactor: Redactor, memory: TaskMemory | None) -> None:
        self.receiver = receiver
        self.redactor = redactor
        self.memory = memory
        self.passed: list[Passed] = []
        self.left = 0
        self.filled_bytes = 0
        self._items: dict[str, tuple[str, int, str]] = {}  # a reference checked once, however often it is used

    def value(self, value: Any, schema: Any) -> Any:
        if isinstance(value, str):
            return self.string(value, schema) if holds_token(value) else value
        if isinstance(value, dict):
            properties = _properties(schema)
            return {key: self.value(item, properties.get(key)) for key, item in value.items()}
        if isinstance(value, list):
            items = schema.get("items") if isinstance(schema, Mapping) else None
            return [self.value(item, items) for item in value]
        return value

    def string(self, text: str, schema: Any) -> Any:
        whole = TOKEN.fullmatch(text)
        if whole is not None and whole.group("ns") is not None:
            return self.whole(whole, schema)
        self.refuse_malformed(text)

        def replace(match: re.Match[str]) -> str:
            if match.group("ns") is None:
                secret_id = match.group("id") or match.group("qid").lower()
                return self.redactor.value_for(match.group(0), secret_id, self.receiver.owner, self.server)
            return self.text_of(match, inside=True)

        return TOKEN.sub(replace, text)  # one pass: what was filled in is not read again

    @property
    def server(self) -> str:
        return self.receiver.server

    def refuse_malformed(self, text: str) -> None:
        if MEMORY_MARK not in text:
            return
        for loose in _LOOSE_MEMORY.finditer(text):
            if TOKEN.match(text, loose.start()) is None:
                raise ReferenceRefusedError(
                    f"{loose.group(0)!r} is not a memory reference offprompt can read, so the call was not sent: "
                    f"{_SHAPE}."
                )

    # -- one reference ---------------------------------------------------------------------------------------

    def whole(self, match: re.Match[str], schema: Any) -> Any:
        """A reference that is the whole string: the type its argument's schema asks for."""
        types = _types(schema)
        if _wants_base64(schema):
            return base64.b64encode(self.payload(match)).decode("ascii")
        if types and "string" not in types:
            return self.json_of(match, types)
        return self.text_of(match, inside=False)

    def item(self, match: re.Match[str]) -> tuple[str, int, str]:
        """The reference's namespace, item and kind, once it is known to be the caller's and allowed here."""
        key = f"{match.group('ns')}/{match.group('item')}"
        if key not in self._items:
            self._items[key] = self._checked(match)
        return self._items[key]

    def _checked(self, match: re.Match[str]) -> tuple[str, int, str]:
        namespace, item = match.group("ns"), int(match.group("item"))
        memory = self.memory
        if memory is None:
            raise ReferenceRefusedError(f"{match.group(0)} names a stored output, but this server has no memory.")
        try:
            record = memory.get(namespace, self.receiver.owner)
            found = memory.item(namespace, item, self.receiver.owner)
        except NotFoundError:
            raise ReferenceRefusedError(
                f"{match.group(0)} names no stored output of this caller (unknown, expired, deleted, or another "
                "token's), so the call was not sent. Call memory_list to see your namespaces."
            ) from None
        except OffpromptError as exc:
            raise ReferenceRefusedError(f"{match.group(0)}: {exc}; the call was not sent.") from None
        self.allowed(match.group(0), namespace, record.tool)
        return namespace, item, found.kind

    def allowed(self, token: str, namespace: str, tool: str) -> None:
        assert self.memory is not None
        origin = self.memory.origin(namespace)
        server = self.server
        if origin is None:
            raise ReferenceRefusedError(
                f"{token} was stored before offprompt recorded whose output a namespace is, so it goes to no tool; "
                f"the call was not sent. Call {tool} again and pass the new reference."
            )
        if origin.server == server:
            return
        shares = server in self.receiver.share_with.get(origin.server, ())
        if origin.sensitive and not shares:
            raise ReferenceRefusedError(
                f'{token} is the output of {tool}, a tool marked sensitive ("off_prompt": "always"): it goes only '
                f'to tools of "{origin.server}", so the call to "{server}" was not sent. If "{server}" should '
                f'receive it, add "share_with": ["{server}"] to the server "{origin.server}" in the offprompt config.'
            )
        flows_to = self.receiver.flows_to.get(origin.server)
        if not origin.sensitive and flows_to is not None and server not in flows_to and not shares:
            raise ReferenceRefusedError(
                f'{token} is the output of {tool}, whose server "{origin.server}" lets its outputs go only to '
                f'{", ".join(repr(s) for s in sorted(flows_to)) or "its own tools"} (its "flows_to"), so the call '
                f'to "{server}" was not sent. Add "{server}" to its "flows_to" in the offprompt config to allow it.'
            )

    def payload(self, match: re.Match[str]) -> bytes:
        """The item's bytes as stored (a text's UTF-8, its handles put back where allowed)."""
        namespace, item, kind = self.item(match)
        assert self.memory is not None
        if match.group("option") is not None or kind in TEXT_KINDS:
            return self.text_of(match, inside=False).encode("utf-8")
        self.passed.append(Passed(namespace, f"item {item}, whole"))
        payload = self.memory.payload(namespace, item)
        self.filled_bytes += (len(payload) + 2) // 3 * 4  # its base64
        return payload

    def text_of(self, match: re.Match[str], *, inside: bool) -> str:
        namespace, item, kind = self.item(match)
        assert self.memory is not None
        if kind not in TEXT_KINDS:
            where = "inside a longer string" if inside else "in an argument that is a plain string"
            raise ReferenceRefusedError(
                f"{match.group(0)} is a {kind}, which cannot go {where}: a binary goes only, whole, in an argument "
                'whose schema asks for base64 ("contentEncoding": "base64"). The call was not sent.'
            )
        option, value = match.group("option"), match.group("value")
        if option == "select":
            restored = self.selected(match, namespace, item, value)  # its handles put back in each value
            part = f"item {item}, select {value.strip()}"
        else:
            text = self.memory.payload(namespace, item).decode("utf-8")
            part = f"item {item}, whole"
            if option == "lines":
                text, part = _lines(text, value, match.group(0)), f"item {item}, lines {value.strip()}"
            # In a JSON text a handle sits inside a string: a value with a newline or a quote goes in escaped.
            fit = _json_escaped if kind == "json" else None
            restored, left = self.redactor.restore(text, self.receiver.owner, self.server, fit)
            self.left += left
        self.passed.append(Passed(namespace, part))
        self.filled_bytes += len(restored) if restored.isascii() else len(restored.encode("utf-8"))
        return restored

    def selected(self, match: re.Match[str], namespace: str, item: int, expression: str) -> str:
        """A jq selection as text: one output that is a JSON string gives the string itself, else each output
        as compact JSON, one per line (what memory_select shows)."""
        outputs = [self.restored_json(v) for v in self.outputs(match, namespace, item, expression)]
        if len(outputs) == 1 and isinstance(outputs[0], str):
            return str(outputs[0])
        return "\n".join(dumps(output).decode() for output in outputs)

    def outputs(self, match: re.Match[str], namespace: str, item: int, expression: str) -> list[Any]:
        assert self.memory is not None
        if not expression.strip():
            raise ReferenceRefusedError(f"{match.group(0)} has an empty select=: {_SHAPE}. The call was not sent.")
        try:
            selection = self.memory.select(namespace, expression, item, self.receiver.owner)
        except OffpromptError as exc:
            raise ReferenceRefusedError(f"{match.group(0)}: {exc} The call was not sent.") from None
        return [json.loads(line) for line in selection.text.splitlines() if line.strip()]

    def json_of(self, match: re.Match[str], types: set[str]) -> Any:
        """A reference that fills an argument whose schema asks for JSON (an object, an array, a number)."""
        token = match.group(0)
        if match.group("option") == "select":
            namespace, item, _ = self.item(match)
            expression = match.group("value")
            outputs = [self.restored_json(v) for v in self.outputs(match, namespace, item, expression)]
            self.passed.append(Passed(namespace, f"item {item}, select {expression.strip()}"))
            self.filled_bytes += sum(len(dumps(output)) for output in outputs)
            if len(outputs) == 1:
                return outputs[0]
            if "array" in types:
                return outputs
            raise ReferenceRefusedError(
                f"{token} gives {len(outputs)} outputs, but its argument takes one value: wrap the expression in "
                "[ ] to pass them as one array. The call was not sent."
            )
        text = self.text_of(match, inside=False)
        try:
            return json.loads(text)
        except ValueError:
            raise ReferenceRefusedError(
                f"{token} is not JSON, but its argument's schema asks for {' or '.join(sorted(types))}: pass a JSON "
                "item (or a select= of one), or put the reference in a string argument. The call was not sent."
            ) from None

    def restored_json(self, value: Any) -> Any:
        """Every string of a selected JSON value with its handles put back where allowed."""
        if isinstance(value, str):
            restored, left = self.redactor.restore(value, self.receiver.owner, self.server, _json_unescaped)
            self.left += left
            return restored
        if isinstance(value, dict):
            return {key: self.restored_json(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.restored_json(item) for item in value]
        return value


def _json_escaped(value: str) -> str:
    """A secret's value as it must stand inside a JSON string: as it is when it already reads there (it was found
    in JSON text, escapes and all), else escaped (it was found in a parsed value: a key's real newlines)."""
    try:
        json.loads(f'"{value}"')
    except ValueError:
        return json.dumps(value, ensure_ascii=False)[1:-1]
    return value


def _json_unescaped(value: str) -> str:
    """A secret's value as it must stand in a parsed JSON string: one found in JSON text (`\\n` escapes and all)
    decoded; one found in a parsed value as it is."""
    if "\\" not in value:
        return value
    try:
        decoded = json.loads(f'"{value}"')
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


#: A line as memory_load, memory_grep and the outline count them: up to a "\n" (a "\r" alone ends none).
_LINE: Final = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _lines(text: str, spec: str, token: str) -> str:
    """Lines `spec` (`A-B`, `A-` or `A`, 1-based, both ends included) of `text`, their line ends kept."""
    parsed = _LINES.fullmatch(spec)
    rows = _LINE.findall(text)
    if parsed is None:
        raise ReferenceRefusedError(f"{token}: lines= takes A-B (e.g. lines=120-480), A- or A. The call was not sent.")
    first = int(parsed.group(1))
    last = len(rows) if parsed.group(2) == "" else int(parsed.group(2) or first)
    if first < 1 or last < first or first > len(rows):
        raise ReferenceRefusedError(
            f"{token}: the item has {len(rows):,} lines, so lines={spec.strip()} names none of them. The call was "
            "not sent."
        )
    return "".join(rows[first - 1 : last])


def _properties(schema: Any) -> Mapping[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    found: dict[str, Any] = {}
    for sub in _alternatives(schema):
        properties = sub.get("properties")
        if isinstance(properties, Mapping):
            for key, value in properties.items():
                found.setdefault(key, value)
    return found


def _alternatives(schema: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The schema and the members of its anyOf/oneOf/allOf (one level: what tool schemas use)."""
    subs = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        members = schema.get(key)
        if isinstance(members, list):
            subs += [m for m in members if isinstance(m, Mapping)]
    return subs


def _types(schema: Any) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    types: set[str] = set()
    for sub in _alternatives(schema):
        kind = sub.get("type")
        if isinstance(kind, str):
            types.add(kind)
        elif isinstance(kind, list):
            types |= {k for k in kind if isinstance(k, str)}
    types.discard("null")
    return types


def _wants_base64(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    return any(
        sub.get("contentEncoding") == "base64" or sub.get("format") in _BASE64_FORMATS for sub in _alternatives(schema)
    )
