"""From a file's bytes to a JSON document that is safe to map: size, encoding, JSON, nesting.

Rules (each refusal is INVALID_ARGUMENT on the field ``agent_file``, its message naming the place):
- at most ``max_bytes`` bytes (the limits table: ``agent_file_bytes`` of the request limit);
- UTF-8 JSON, an object at the top; Letta also wrote files whose JSON is a *string* holding the
  document ("double-encoded"): such a string is decoded once more, never twice;
- no value nested deeper than ``MAX_DEPTH`` arrays and objects, and no string holding U+0000 or
  a lone surrogate (the path of the first such value is named).
"""

from __future__ import annotations

import json
from typing import Any

from strata_memory.limits import MAX_AGENT_FILE_DEPTH
from strata_serving.errors import InvalidArgument

MAX_DEPTH = MAX_AGENT_FILE_DEPTH
FIELD = "agent_file"


def read_document(data: bytes, *, max_bytes: int) -> dict[str, Any]:
    """The file's document; raises ``InvalidArgument`` naming what is wrong and where."""
    if not data:
        raise InvalidArgument.field(FIELD, "is empty; send the bytes of an .af file")
    if len(data) > max_bytes:
        raise InvalidArgument.field(FIELD, f"is {len(data)} bytes; at most {max_bytes} bytes are accepted")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidArgument.field(FIELD, f"is not UTF-8 (byte {exc.start})") from exc
    document = _loads(text, "")
    if isinstance(document, str):
        document = _loads(document, "(the JSON string the file holds) ")
    if not isinstance(document, dict):
        raise InvalidArgument.field(FIELD, f"must hold a JSON object, not {_kind(document)}")
    if (problem := first_problem(document, MAX_DEPTH)) is not None:
        raise InvalidArgument.field(FIELD, problem)
    return document


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument.field(
            FIELD, f"{where}is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise InvalidArgument.field(
            FIELD, f"{where}nests arrays and objects deeper than {MAX_DEPTH} levels"
        ) from exc


def first_problem(value: Any, limit: int) -> str | None:
    """Where the first value nested more than ``limit`` levels deep, or the first string (or key)
    holding U+0000 or a lone surrogate (no store keeps them), sits, and what is wrong; None if
    nothing is. Iterative: a deep document cannot exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if _unstorable(item):
                return f"{shorten(path or '(top)')}: holds U+0000 or a lone surrogate"
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return f"{shorten(path or '(top)')}: nested deeper than {limit} levels of arrays and objects"
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            step = f"[{key}]" if isinstance(item, list) else (f".{key}" if path else str(key))
            if isinstance(key, str) and _unstorable(key):
                return f"{shorten(path + step)}: its name holds U+0000 or a lone surrogate"
            stack.append((child, path + step, depth + 1))
    return None


def _unstorable(text: str) -> bool:
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shorten(path: str, keep: int = 120) -> str:
    """A path short enough for an error message (the middle of a very long one elided)."""
    return path if len(path) <= keep else f"{path[: keep // 2]}…{path[-keep // 2 :]}"


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
