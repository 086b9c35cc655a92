"""Typed reads of a JSON document's fields, each refusal naming the path inside the file."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from strata_serving.errors import InvalidArgument

FIELD = "agent_file"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def refuse(path: str, problem: str) -> InvalidArgument:
    """INVALID_ARGUMENT on ``agent_file`` whose message starts with the path inside the file."""
    return InvalidArgument.field(FIELD, f"{path}: {problem}")


def obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise refuse(path, "must be an object")
    return value


def items(parent: dict[str, Any], key: str, path: str) -> list[Any]:
    """``parent[key]`` as a list; absent or null is an empty list."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise refuse(_join(path, key), "must be an array")
    return value


def text(parent: dict[str, Any], key: str, path: str, default: str = "") -> str:
    """``parent[key]`` as a string; absent or null is ``default``."""
    value = parent.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise refuse(_join(path, key), "must be a string")
    return value


def required_text(parent: dict[str, Any], key: str, path: str) -> str:
    value = text(parent, key, path)
    if not value:
        raise refuse(_join(path, key), "is required")
    return value


def flag(parent: dict[str, Any], key: str, path: str) -> bool:
    value = parent.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise refuse(_join(path, key), "must be true or false")
    return value


def whole(parent: dict[str, Any], key: str, path: str) -> int | None:
    value = parent.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(_join(path, key), "must be a whole number")
    return value


def ids(parent: dict[str, Any], key: str, path: str) -> list[str]:
    """``parent[key]`` as a list of id strings."""
    found = items(parent, key, path)
    for i, value in enumerate(found):
        if not isinstance(value, str):
            raise refuse(f"{_join(path, key)}[{i}]", "must be an id string")
    return found


def time_us(parent: dict[str, Any], key: str, path: str) -> int:
    """An ISO 8601 time as microseconds since the epoch (no zone: UTC); absent or null is 0."""
    value = text(parent, key, path)
    if not value:
        return 0
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise refuse(_join(path, key), f"is not an ISO 8601 time: {value[:40]!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def iso_time(us: int) -> str:
    """Microseconds since the epoch as ISO 8601 in UTC (``2026-01-22T02:06:34.048739+00:00``)."""
    return (_EPOCH + timedelta(microseconds=us)).isoformat()


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def reframed(check: Callable[[], object], path: str) -> None:
    """Run a domain check, its refusal re-worded to name ``path`` inside the file."""
    try:
        check()
    except InvalidArgument as exc:
        raise refuse(path, str(exc).split(": ", 1)[-1]) from exc
