"""The Letta-style JSON envelope a tool result is handed to the LLM in."""

from __future__ import annotations

import json
from datetime import datetime

from ..prompt import format_timestamp


def tool_envelope(ok: bool, message: str, now: datetime, timezone: str) -> str:
    """``{"status": "OK"|"Failed", "message": …, "time": "YYYY-MM-DD hh:mm:ss AM TZ+zzzz"}`` as JSON.

    Serialised as Letta's ``json_dumps`` does: two-space indent, non-ASCII kept as is (not
    ``\\u``-escaped). ``now`` may be naive (taken as UTC).
    """
    envelope = {
        "status": "OK" if ok else "Failed",
        "message": message,
        "time": format_timestamp(now, timezone),
    }
    return json.dumps(envelope, indent=2, ensure_ascii=False)
