"""``<memory_metadata>`` and the assembly of the full system prompt from its raw text and memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from strata_serving.errors import InvalidArgument

CORE_MEMORY_VARIABLE = "{CORE_MEMORY}"
"""Where compiled memory goes in an agent's raw system text (appended when missing)."""
TIMESTAMP_FORMAT = "%Y-%m-%d %I:%M:%S %p %Z%z"
"""Letta's ``format_datetime``: ``2026-08-01 06:24:28 PM UTC+0000``."""


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """What ``<memory_metadata>`` tells the agent about itself and its external memory."""

    agent_id: str
    conversation_id: str
    recompiled_at: datetime
    """When the prompt was (re)compiled; a naive value is taken to be UTC."""
    timezone: str
    """IANA name of the agent's timezone, e.g. ``UTC`` or ``Europe/Paris``."""
    message_count: int
    """Messages stored in recall memory (Letta: persisted minus in-context)."""
    archival_count: int
    archival_tags: Sequence[str] = field(default=())


def zone(timezone: str) -> ZoneInfo:
    """The ``ZoneInfo`` for an IANA name; an unknown or malformed name raises ``InvalidArgument``."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name too long for a path
        raise InvalidArgument.field(
            "timezone", f"unknown IANA timezone {timezone[:64]!r}", reason="INVALID_TIMEZONE"
        ) from exc


def format_timestamp(moment: datetime, timezone: str) -> str:
    """``moment`` in ``timezone`` as ``YYYY-MM-DD hh:mm:ss AM TZ+zzzz`` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone(timezone)).strftime(TIMESTAMP_FORMAT)


def render_memory_metadata(stats: MemoryStats) -> str:
    """The ``<memory_metadata>`` block exactly as DESIGN.md shows it (no trailing newline).

    The archival line appears only when ``archival_count > 0``; the tags line only when there are
    tags, sorted and distinct. Unlike Letta's code, the recall line keeps "(use tools to access them)".
    """
    lines = [
        "<memory_metadata>",
        f"- AGENT_ID: {stats.agent_id}",
        f"- CONVERSATION_ID: {stats.conversation_id}",
        f"- System prompt last recompiled: {format_timestamp(stats.recompiled_at, stats.timezone)}",
        f"- {stats.message_count} previous messages between you and the user are stored in recall memory"
        " (use tools to access them)",
    ]
    if stats.archival_count > 0:
        lines.append(
            f"- {stats.archival_count} total memories you created are stored in archival memory"
            " (use tools to access them)"
        )
    tags = sorted(set(stats.archival_tags))
    if tags:
        lines.append(f"- Available archival memory tags: {', '.join(tags)}")
    lines.append("</memory_metadata>")
    return "\n".join(lines)


def assemble_system_prompt(raw_system: str, compiled_memory: str, memory_metadata: str) -> str:
    """The full system prompt: every ``{CORE_MEMORY}`` in ``raw_system`` replaced by memory + metadata.

    The inserted text is ``compiled_memory + "\\n\\n" + memory_metadata``. Without the variable it is
    appended after two newlines. Inserted text is not scanned again, so memory that itself contains
    ``{CORE_MEMORY}`` is left alone.
    """
    memory = compiled_memory + "\n\n" + memory_metadata
    if CORE_MEMORY_VARIABLE not in raw_system:
        return raw_system + "\n\n" + memory
    return raw_system.replace(CORE_MEMORY_VARIABLE, memory)
