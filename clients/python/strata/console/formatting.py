"""Pure helpers the templates use: budget bars, times, counts and line diffs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf import timestamp_pb2

WARN_SHARE = 0.8
"""A block at 80 % of its limit shows its budget bar in the warning colour..."""
FULL_SHARE = 0.95
"""...and at 95 % in the alarm colour."""


def budget_level(current: int, limit: int) -> str:
    """``ok``, ``warn`` or ``full``: how close ``current`` characters are to ``limit``."""
    if limit <= 0:
        return "ok"
    share = current / limit
    if share >= FULL_SHARE:
        return "full"
    return "warn" if share >= WARN_SHARE else "ok"


def budget_percent(current: int, limit: int) -> int:
    """The bar's width in percent, 0..100."""
    if limit <= 0:
        return 0
    return max(0, min(100, round(100 * current / limit)))


def when(stamp: timestamp_pb2.Timestamp | None) -> str:
    """A timestamp as ``2026-12-06 01:02:03 UTC``; empty when unset."""
    if stamp is None or (stamp.seconds == 0 and stamp.nanos == 0):
        return ""
    return datetime.fromtimestamp(stamp.seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def at_most(count: int, cap: int) -> str:
    """``count``, or ``cap+`` when the one page read was full (there may be more)."""
    return f"{cap}+" if count >= cap else str(count)


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: ``kind`` is ``add``, ``del``, ``hunk`` or ``same``."""

    kind: str
    text: str


def line_diff(before: str, after: str, before_name: str, after_name: str) -> list[DiffLine]:
    """A unified line diff of two texts, classified for display (no lines when equal)."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), before_name, after_name, lineterm="", n=3
    )
    return classify(list(lines))


def classify(lines: list[str]) -> list[DiffLine]:
    """Classify the lines of a unified diff (as the service's diffs and :func:`line_diff` give)."""
    kinds = []
    for line in lines:
        if line.startswith(("+++", "---")):
            kinds.append(DiffLine("head", line))
        elif line.startswith("@@"):
            kinds.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            kinds.append(DiffLine("add", line))
        elif line.startswith("-"):
            kinds.append(DiffLine("del", line))
        else:
            kinds.append(DiffLine("same", line))
    return kinds


def parse_day(value: str, end: bool = False) -> timestamp_pb2.Timestamp | None:
    """A ``YYYY-MM-DD`` date field as a timestamp (start of day, or its end with ``end``); None if empty.

    Raises ``ValueError`` with a message a person can act on."""
    if not value.strip():
        return None
    try:
        day = datetime.strptime(value.strip(), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{value!r} is not a date: write it as YYYY-MM-DD") from None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(day.replace(hour=23, minute=59, second=59) if end else day)
    return stamp
