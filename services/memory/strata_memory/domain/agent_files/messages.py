"""Letta messages ↔ Strata recall messages.

What maps: ``role`` (system, user, assistant, tool; any other role is refused), ``content`` (a string,
or the text of a single ``{"type": "text"}`` part; several parts or other kinds are kept verbatim and
Strata stores their texts joined by newlines, for search), ``name``, ``tool_calls`` (``id``,
``function.name``, ``function.arguments``), ``tool_call_id`` and ``created_at``. Everything else
(``otid``, ``model``, ``tool_returns``, ``step_id``, …) is kept verbatim in the message's residue.

A residue is the file's object with every mapped value replaced by ``None``; writing it back fills
each ``None`` from Strata. A value Strata could not hold as written stays in the residue and is
written back as it was.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from . import fields as f

ROLES = ("system", "user", "assistant", "tool")
MAPPED = ("id", "agent_id", "role", "content", "name", "tool_call_id", "created_at", "tool_calls")


@dataclass(frozen=True, slots=True)
class PlannedToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class PlannedMessage:
    file_id: str
    role: str
    content: str
    name: str
    tool_calls: tuple[PlannedToolCall, ...]
    tool_call_id: str
    created_us: int
    """0: the file gave no time (the import's time is used)."""
    residue: dict[str, Any]


def plan_message(raw: Any, path: str) -> PlannedMessage:
    """One message of the file, checked, with its residue."""
    message = f.obj(raw, path)
    role = f.text(message, "role", path)
    if role not in ROLES:
        raise f.refuse(f"{path}.role", f"{role!r} is not one of {', '.join(ROLES)}")
    residue = {key: (None if key in MAPPED else copy.deepcopy(value)) for key, value in message.items()}
    content, residue["content"] = _content(message.get("content"), f"{path}.content")
    calls, residue["tool_calls"] = _tool_calls(message, path)
    return PlannedMessage(
        file_id=f.required_text(message, "id", path),
        role=role,
        content=content,
        name=f.text(message, "name", path),
        tool_calls=calls,
        tool_call_id=f.text(message, "tool_call_id", path),
        created_us=f.time_us(message, "created_at", path),
        residue=residue,
    )


def _content(value: Any, path: str) -> tuple[str, Any]:
    """(Strata's content, the residue's content)."""
    if value is None or isinstance(value, str):
        return value or "", None
    if not isinstance(value, list):
        raise f.refuse(path, "must be a string or an array of parts")
    texts = []
    for i, raw in enumerate(value):
        part = f.obj(raw, f"{path}[{i}]")
        if part.get("type") == "text":
            texts.append(f.text(part, "text", f"{path}[{i}]"))
    if len(value) == 1 and value[0].get("type") == "text":
        return texts[0], [dict(value[0], text=None)]
    return "\n".join(texts), copy.deepcopy(value)


def _tool_calls(message: dict[str, Any], path: str) -> tuple[tuple[PlannedToolCall, ...], Any]:
    """(the mapped calls, the residue's ``tool_calls``)."""
    raw = message.get("tool_calls")
    if raw is None:
        return (), None
    calls, residue = [], []
    for i, item in enumerate(f.items(message, "tool_calls", path)):
        where = f"{path}.tool_calls[{i}]"
        call = f.obj(item, where)
        function = f.obj(call.get("function") or {}, f"{where}.function")
        arguments = function.get("arguments")
        written = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append(PlannedToolCall(f.text(call, "id", where), f.text(function, "name", where), written))
        kept = copy.deepcopy(call)
        kept["id"] = None
        kept["function"] = dict(
            function, name=None, arguments=None if isinstance(arguments, str) else arguments
        )
        residue.append(kept)
    return tuple(calls), residue


@dataclass(frozen=True, slots=True)
class ExportedMessage:
    """A stored message as the writer needs it, with the residue kept at import (if any)."""

    strata_id: str
    role: str
    content: str
    name: str
    tool_calls: tuple[PlannedToolCall, ...]
    tool_call_id: str
    created_us: int
    residue: dict[str, Any] | None


def write_message(message: ExportedMessage, file_id: str, agent_file_id: str) -> dict[str, Any]:
    """The message as the file holds it: the residue with Strata's values filled in."""
    out: dict[str, Any] = (
        copy.deepcopy(message.residue) if message.residue is not None else {"type": "message"}
    )
    content: Any = out.get("content")
    if message.residue is None:
        content = [{"type": "text", "text": message.content}] if message.content else []
    elif content is None:
        content = message.content
    elif _single_text(content):
        content = [dict(content[0], text=message.content)]
    filled = {
        "id": file_id,
        "agent_id": agent_file_id,
        "role": message.role,
        "content": content,
        "name": message.name or None,
        "tool_calls": _write_calls(message.tool_calls, out.get("tool_calls")),
        "tool_call_id": message.tool_call_id or None,
        "created_at": f.iso_time(message.created_us),
    }
    return _overlay(out, filled)


def _single_text(content: Any) -> bool:
    return isinstance(content, list) and len(content) == 1 and content[0].get("text", "") is None


def _write_calls(calls: tuple[PlannedToolCall, ...], residue: Any) -> Any:
    if not calls:
        return residue if residue is not None else None
    kept = residue if isinstance(residue, list) and len(residue) == len(calls) else [None] * len(calls)
    written = []
    for call, old in zip(calls, kept, strict=True):
        out: dict[str, Any] = copy.deepcopy(old) if isinstance(old, dict) else {"type": "function"}
        kept_function = out.get("function")
        function: dict[str, Any] = dict(kept_function) if isinstance(kept_function, dict) else {}
        function["name"] = call.name
        if function.get("arguments") is None:
            function["arguments"] = call.arguments
        out["id"], out["function"] = call.id, function
        written.append(out)
    return written


def _overlay(residue: dict[str, Any], filled: dict[str, Any]) -> dict[str, Any]:
    """``residue`` with each mapped key set (in the residue's key order; new keys at the end)."""
    residue.update(filled)
    return residue
