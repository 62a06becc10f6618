"""Redaction of every text a result carries, and substitution of handles in nested arguments."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest

from offprompt.arguments import Receiver, fill
from offprompt.errors import UnknownSecretError
from offprompt.secrets import HANDLE, Redactor, may_hold_secret_in
from tests.secrets.corpus import AWS_ID, GHP, JWT, PG_PASSWORD, SECRETS

ENV = f"GITHUB_TOKEN={GHP}\nAWS_ACCESS_KEY_ID={AWS_ID}\n"


@pytest.fixture
def redactor(tmp_path: Path) -> Redactor:
    return Redactor(tmp_path)


def test_every_text_of_a_result_is_redacted_and_binaries_are_left_alone(redactor: Redactor) -> None:
    image = base64.b64encode(b"\x89PNG" + GHP.encode()).decode()  # a value hidden in a binary stays binary
    result = mt.CallToolResult(
        content=[
            mt.TextContent(text=ENV),
            mt.EmbeddedResource(resource=mt.TextResourceContents(uri="file:///app/.env", text=ENV)),
            mt.ImageContent(data=image, mime_type="image/png"),
        ],
        structured_content={"session": {"jwt": JWT, "tags": [f"db={PG_PASSWORD}"]}, "n": 3},
    )
    redacted = redactor.redact_result(result, "", "s")
    dumped = redacted.model_dump_json()
    for value in (GHP, AWS_ID, JWT):
        assert value not in dumped
    assert redacted.content[2] == result.content[2]
    assert redacted.structured_content is not None
    assert HANDLE.fullmatch(redacted.structured_content["session"]["jwt"])
    assert redacted.structured_content["n"] == 3


def test_a_result_without_secrets_is_returned_as_it_was(redactor: Redactor) -> None:
    result = mt.CallToolResult(content=[mt.TextContent(text="2026-11-30T12:00:00Z")], structured_content={"a": [1]})
    assert not may_hold_secret_in(result)
    assert redactor.redact_result(result, "", "s") is result
    assert redactor.redact_wire({"content": [{"type": "text", "text": "ok"}]}, "", "s") == {
        "content": [{"type": "text", "text": "ok"}]
    }


def test_redacting_twice_changes_nothing_more(redactor: Redactor) -> None:
    text = "\n".join(case.text for case in SECRETS)
    once = redactor.redact_text(text, "", "s")
    assert redactor.redact_text(once, "", "s") == once


def test_the_wire_form_is_redacted_like_the_model(redactor: Redactor) -> None:
    raw = {
        "content": [
            {"type": "text", "text": ENV},
            {"type": "resource", "resource": {"uri": "file:///.env", "text": ENV}},
        ],
        "structuredContent": {"token": GHP},
        "isError": False,
    }
    model = redactor.redact_result(mt.CallToolResult.model_validate(raw), "", "s")
    wire = redactor.redact_wire(raw, "", "s")
    assert mt.CallToolResult.model_validate(wire) == model
    assert raw["structuredContent"] == {"token": GHP}  # the input is not changed in place


def test_handles_anywhere_in_nested_arguments_become_their_values(redactor: Redactor) -> None:
    text = redactor.redact_text(ENV, "", "s")
    github, aws = (m.group(0) for m in HANDLE.finditer(text))
    arguments = {"headers": {"Authorization": f"token {github}"}, "keys": [aws, 7, None], "n": 1}
    assert substitute(redactor, arguments, "", "s") == {
        "headers": {"Authorization": f"token {GHP}"},
        "keys": [AWS_ID, 7, None],
        "n": 1,
    }
    short = github.split(" ")[0] + "⟧"  # the kind is only a hint: ⟦secret:id⟧ works too
    assert substitute(redactor, {"t": short}, "", "s") == {"t": GHP}


def test_an_unknown_or_foreign_handle_is_refused(redactor: Redactor) -> None:
    github = next(HANDLE.finditer(redactor.redact_text(ENV, "alice", "s"))).group(0)
    with pytest.raises(UnknownSecretError, match="another token"):
        substitute(redactor, {"t": github}, "bob", "s")
    with pytest.raises(UnknownSecretError, match="secret:zzzzzzzz"):
        substitute(redactor, {"t": "⟦secret:zzzzzzzz github-token⟧"}, "alice", "s")


def substitute(redactor: Redactor, arguments: dict[str, Any], owner: str, server: str) -> dict[str, Any] | None:
    """The arguments as a call to `server` by `owner` sends them: handles filled in (`offprompt.arguments`)."""
    return fill(arguments, Receiver(server, "t", owner, None, None, {}, {}), redactor, None).arguments
