"""`intent`: the argument offprompt adds to every proxied tool.

The model says what it wants from the result; the argument is removed before the call goes downstream, and
when the result goes off the prompt its reference shows the passages that answer the intent, so one call
both fetches and finds. A tool that has an `intent` argument of its own keeps it, untouched.
"""

from __future__ import annotations

from typing import Any

INTENT = "intent"
#: Kept short: every proxied tool carries it in tools/list (14 tokens a tool with the JSON around it, measured by
#: tests/test_tool_limits.py; the sentence was 30).
DESCRIPTION = "What to find"


def with_intent(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The input schema with offprompt's `intent` added; None when the tool has an `intent` of its own."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    if INTENT in properties:
        return None
    return {**schema, "properties": {**properties, INTENT: {"type": "string", "description": DESCRIPTION}}}
