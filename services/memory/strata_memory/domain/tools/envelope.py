"""The Letta-style JSON envelope a tool result is handed to the LLM in."""

from __future__ import annotations

import json
from datetime import datetime

from ..prompt import format_timestamp


def tool_envelope(ok: bool, message: str, now: datetime, timezone: str) -> str:
    """``{"status": "OK"|"Failed", "message": …, "time": "YYYY-MM-DD hh:mm:ss AM TZ+zzzz"}`` as JSON.

    Serialised as Letta's ``json_dumps`` does: two-space indent, non-ASCII kept as is (not
    ``\\u``-escaped). ``now`` may be naive (taken as UTC).

    The text is ``json.dumps(envelope, indent=2, ensure_ascii=False)`` written out: with an indent
    ``json.dumps`` runs its pure-Python encoder, and the message is a whole block value on every
    successful edit (bench/perf/findings.md); each string is still escaped by ``json``.
    """
    status = "OK" if ok else "Failed"
    return (
        f'{{\n  "status": "{status}",\n'
        f'  "message": {json.dumps(message, ensure_ascii=False)},\n'
        f'  "time": {json.dumps(format_timestamp(now, timezone), ensure_ascii=False)}\n}}'
    )
