"""Setting and removing one member of a JSONC text leaves every other character as it was: the file stays the
user's, comments and trailing commas and layout included, and still parses to what was meant."""

from __future__ import annotations

import json

from offprompt.config.jsonc import strip_jsonc
from offprompt.config.jsonc_edit import remove_member, set_member

COMMENTED = """{
  // the servers Cursor starts
  "mcpServers": {
    "git": {"command": "uvx", "args": ["mcp-server-git"]}, // the repository tools
    /* more to come */
    "fs": {
      "command": "npx"
    },
  },
  "theme": "dark",
}
"""


def _data(text: str) -> object:
    return json.loads(strip_jsonc(text))


def test_a_member_added_keeps_every_comment_and_the_other_members() -> None:
    text = set_member(COMMENTED, ["mcpServers"], "offprompt", {"command": "offprompt", "args": ["serve"]})
    for comment in ("// the servers Cursor starts", "// the repository tools", "/* more to come */"):
        assert comment in text
    assert _data(text) == {
        "mcpServers": {
            "git": {"command": "uvx", "args": ["mcp-server-git"]},
            "fs": {"command": "npx"},
            "offprompt": {"command": "offprompt", "args": ["serve"]},
        },
        "theme": "dark",
    }
    assert text.startswith(COMMENTED.split('    "fs"')[0])  # the lines before the new member, untouched


def test_a_member_removed_takes_its_lines_and_the_comment_on_its_line() -> None:
    assert remove_member(COMMENTED, ["mcpServers"], "git") == COMMENTED.replace(
        '    "git": {"command": "uvx", "args": ["mcp-server-git"]}, // the repository tools\n', ""
    )
    # the last one: its lines go, and the comma before it (its own trailing comma, JSONC's, with its lines)
    assert remove_member(COMMENTED, ["mcpServers"], "fs") == COMMENTED.replace(
        '    "fs": {\n      "command": "npx"\n    },\n', ""
    ).replace('["mcp-server-git"]}, //', '["mcp-server-git"]} //')


def test_a_value_already_there_is_replaced_and_missing_objects_are_made() -> None:
    text = set_member(COMMENTED, ["mcpServers"], "fs", {"command": "other"})
    assert _data(text)["mcpServers"]["fs"] == {"command": "other"}  # type: ignore[index]
    assert "/* more to come */" in text
    nested = set_member('{"numStartups": 3}', ["projects", "/home/me/app", "mcpServers"], "x", {"command": "y"})
    assert _data(nested) == {"numStartups": 3, "projects": {"/home/me/app": {"mcpServers": {"x": {"command": "y"}}}}}


def test_the_last_member_removed_leaves_an_empty_object_that_parses() -> None:
    text = remove_member(remove_member(COMMENTED, ["mcpServers"], "git"), ["mcpServers"], "fs")
    assert _data(text) == {"mcpServers": {}, "theme": "dark"}
    assert remove_member('{"a": {"x": 1}}', ["a"], "x") == '{"a": {}}'
    assert remove_member(COMMENTED, ["mcpServers"], "absent") == COMMENTED
