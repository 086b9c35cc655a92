"""The three tools that reach external memory: their arguments parsed, their results formatted.

Pure functions only; running the search is the caller's business. Date bounds are inclusive, a
date-only bound covers the whole day, and a bound without an offset is in the agent's timezone.
Bounds are returned in UTC, clamped to the representable range (``0001-01-01`` east of UTC begins
before year 1 in UTC: it means "from the beginning"), and a stored time that the agent's timezone
cannot show (year 1 west of UTC, year 9999 east of it) is shown in UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from ...limits import MAX_FILTER_TAGS, MAX_SEARCH_RESULTS, MAX_TAG_CHARS
from ..errors import ToolArgumentError
from ..prompt import zone
from .arguments import Arguments, decode_arguments

ROLES = ("user", "assistant", "tool", "system")
DEFAULT_RESULTS = 5
MAX_RESULTS = MAX_SEARCH_RESULTS


@dataclass(frozen=True, slots=True)
class ArchivalInsert:
    content: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ArchivalQuery:
    query: str
    tags: tuple[str, ...]
    match_all: bool
    top_k: int
    start: datetime | None
    end: datetime | None


@dataclass(frozen=True, slots=True)
class RecallQuery:
    query: str
    roles: tuple[str, ...]
    limit: int
    start: datetime | None
    end: datetime | None


@dataclass(frozen=True, slots=True)
class Found:
    """One search hit as a tool reports it."""

    id: str
    created_at: datetime
    content: str
    score: float  # what the hits are ordered by (RetrievalService's fusion)
    rrf_score: float
    vector_rank: int | None
    fts_rank: int | None
    search_mode: str
    tags: tuple[str, ...] = ()
    role: str = ""


def parse_archival_insert(arguments: str | Mapping[str, Any]) -> ArchivalInsert:
    args = _arguments("archival_memory_insert", arguments, ("content", "tags"))
    content = args.required_str("content")
    if not content.strip():
        raise ToolArgumentError("archival_memory_insert: 'content' must not be empty.")
    return ArchivalInsert(
        content, tuple(dict.fromkeys(t.strip() for t in args.optional_str_list("tags") if t.strip()))
    )


def parse_archival_search(arguments: str | Mapping[str, Any], timezone: str) -> ArchivalQuery:
    names = ("query", "tags", "tag_match_mode", "top_k", "start_datetime", "end_datetime")
    args = _arguments("archival_memory_search", arguments, names)
    mode = (args.optional_str("tag_match_mode") or "any").lower()
    if mode not in ("any", "all"):
        raise ToolArgumentError('archival_memory_search: \'tag_match_mode\' must be "any" or "all".')
    start, end = _range(args, "start_datetime", "end_datetime", timezone)
    return ArchivalQuery(
        query=args.optional_str("query") or "",
        tags=_filter_tags(args),
        match_all=mode == "all",
        top_k=_count(args, "top_k"),
        start=start,
        end=end,
    )


def parse_recall_search(arguments: str | Mapping[str, Any], timezone: str) -> RecallQuery:
    args = _arguments("conversation_search", arguments, ("query", "roles", "limit", "start_date", "end_date"))
    roles = tuple(dict.fromkeys(args.optional_str_list("roles")))  # 100,000 "user"s are one role
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ToolArgumentError(
            f"conversation_search: unknown role(s) {unknown}; roles are {', '.join(ROLES)}."
        )
    start, end = _range(args, "start_date", "end_date", timezone)
    return RecallQuery(args.optional_str("query") or "", roles, _count(args, "limit"), start, end)


def parse_bound(text: str, *, name: str, end: bool, timezone: str) -> datetime:
    """An ISO 8601 date or datetime; a date alone spans its day; no offset means the agent's zone."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolArgumentError(
            f"Invalid {name} format: {text}. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)."
        ) from None
    if len(text.strip()) == 10:
        moment = datetime.combine(moment.date(), time.max if end else time.min)
    return in_utc(moment if moment.tzinfo else moment.replace(tzinfo=zone(timezone)))


def in_utc(moment: datetime) -> datetime:
    """``moment`` in UTC, clamped to years 1-9999 when its offset carries it past either end."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        edge = datetime.min if moment.year == datetime.min.year else datetime.max
        return edge.replace(tzinfo=UTC)


def archival_results(found: Sequence[Found], timezone: str) -> str:
    """A JSON list of ``{id, timestamp, content, tags, relevance}`` (Letta's shape, relevance always)."""
    return json.dumps(
        [
            {
                "id": f.id,
                "timestamp": _iso(f.created_at, timezone),
                "content": f.content,
                "tags": list(f.tags),
            }
            | {"relevance": _relevance(f)}
            for f in found
        ],
        ensure_ascii=False,
    )


def recall_results(found: Sequence[Found], timezone: str, now: datetime) -> str:
    """``{"message": "Showing N results:", "results": […]}``, N counted after every filter."""
    if not found:
        return json.dumps({"message": "No results found.", "results": []})
    results = [
        {
            "timestamp": _iso(f.created_at, timezone),
            "time_ago": _ago(now - f.created_at),
            "role": f.role,
            "content": f.content,
            "relevance": _relevance(f),
        }
        for f in found
    ]
    return json.dumps({"message": f"Showing {len(found)} results:", "results": results}, ensure_ascii=False)


def _arguments(tool: str, arguments: str | Mapping[str, Any], names: tuple[str, ...]) -> Arguments:
    return Arguments(tool, decode_arguments(tool, arguments), names)


def _filter_tags(args: Arguments) -> tuple[str, ...]:
    tags = args.optional_str_list("tags")
    if len(tags) > MAX_FILTER_TAGS:
        raise ToolArgumentError(
            f"{args.tool}: 'tags' has {len(tags)} tags; at most {MAX_FILTER_TAGS}.",
            field_violations=[("tags", f"at most {MAX_FILTER_TAGS} tags")],
        )
    for tag in tags:
        if not tag or len(tag) > MAX_TAG_CHARS:
            raise ToolArgumentError(
                f"{args.tool}: each tag must have 1 to {MAX_TAG_CHARS} characters, got {len(tag)}.",
                field_violations=[("tags", f"each tag 1 to {MAX_TAG_CHARS} characters")],
            )
    return tuple(tags)


def _count(args: Arguments, name: str) -> int:
    value = args.optional_int(name, DEFAULT_RESULTS)
    if not 1 <= value <= MAX_RESULTS:
        raise ToolArgumentError(f"{args.tool}: '{name}' must be between 1 and {MAX_RESULTS}, got {value}.")
    return value


def _range(
    args: Arguments, start_name: str, end_name: str, timezone: str
) -> tuple[datetime | None, datetime | None]:
    start_text, end_text = args.optional_str(start_name), args.optional_str(end_name)
    start = parse_bound(start_text, name=start_name, end=False, timezone=timezone) if start_text else None
    end = parse_bound(end_text, name=end_name, end=True, timezone=timezone) if end_text else None
    if start and end and start > end:
        raise ToolArgumentError(
            f"{args.tool}: '{start_name}' ({start_text}) is after '{end_name}' ({end_text})."
        )
    return start, end


def _relevance(found: Found) -> dict[str, Any]:
    relevance: dict[str, Any] = {
        "score": round(found.score, 6),
        "rrf_score": round(found.rrf_score, 6),
        "search_mode": found.search_mode,
    }
    if found.vector_rank is not None:
        relevance["vector_rank"] = found.vector_rank
    if found.fts_rank is not None:
        relevance["fts_rank"] = found.fts_rank
    return relevance


def _iso(moment: datetime, timezone: str) -> str:
    try:
        shown = moment.astimezone(zone(timezone))
    except OverflowError:  # year 1 west of UTC or year 9999 east of it: not a date in that zone
        shown = moment.astimezone(UTC)
    return shown.isoformat(timespec="seconds")


def _ago(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
