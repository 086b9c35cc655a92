"""A Letta-shaped Agent File of one agent with many messages, for the import benchmark."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

TOPICS = ("the garden", "a trip to Lisbon", "the quarterly report", "a new bicycle", "the piano lessons")


def generated_file(messages: int) -> bytes:
    """A Letta-shaped Agent File of one agent with ``messages`` messages (user / assistant tool call /
    tool return, repeating)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out: list[dict[str, Any]] = []
    for i in range(messages):
        at = (start + timedelta(seconds=i)).isoformat()
        topic = TOPICS[i % len(TOPICS)]
        turn, step = divmod(i, 3)
        base = {
            "type": "message",
            "id": f"message-{i}",
            "agent_id": "agent-0",
            "created_at": at,
            "otid": None,
        }
        if step == 0:
            text = f"Turn {turn}: let me tell you about {topic}; it went better than expected this week."
            out.append(
                base | {"role": "user", "content": [{"type": "text", "text": text}], "tool_calls": None}
            )
        elif step == 1:
            reply = json.dumps({"message": f"Noted what you said about {topic} (turn {turn})."})
            call = {
                "id": f"call-{turn}",
                "type": "function",
                "function": {"name": "send_message", "arguments": reply},
            }
            out.append(
                base | {"role": "assistant", "content": [], "tool_calls": [call], "model": "gpt-4o-mini"}
            )
        else:
            ok = '{"status": "OK", "message": "None"}'
            out.append(
                base
                | {"role": "tool", "content": [{"type": "text", "text": ok}], "tool_call_id": f"call-{turn}"}
            )
    agent = {
        "id": "agent-0",
        "name": "generated",
        "system": "You are a helpful assistant.",
        "block_ids": ["block-0", "block-1"],
        "messages": out,
        "in_context_message_ids": [m["id"] for m in out[-20:]],
        "llm_config": {"model": "gpt-4o-mini", "context_window": 128000},
        "tool_ids": [],
    }
    blocks = [
        {"id": "block-0", "label": "persona", "value": "I am a patient assistant.", "limit": 5000},
        {"id": "block-1", "label": "human", "value": "Name: Ada", "limit": 5000},
    ]
    return json.dumps({"agents": [agent], "blocks": blocks, "tools": [], "groups": []}).encode()
