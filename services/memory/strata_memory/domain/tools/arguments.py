"""Decoding and checking tool arguments exactly as an LLM emits them.

Every problem becomes a :class:`ToolArgumentError` that names the argument, so the model can fix its
call; nothing here raises a bare exception. String arguments have their line endings normalised to
``\\n`` (``\\r\\n`` and lone ``\\r``); tabs and all other characters are kept as written. A lone
UTF-16 surrogate (JSON's ``"\\ud800"`` escape without its pair) is refused wherever it appears: it is
not a character, and no store, index or protobuf string can hold it.
A NUL character anywhere in the arguments is refused too (reason ``NUL_CHARACTER``), as on every other
write path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import LineNumberPrefix, ToolArgumentError
from ..newlines import normalise_newlines
from ..render import LINE_NUMBER_WARNING

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
LINE_NUMBER_PREFIX = re.compile(r"^[ \t]*\d+→[ \t]*", re.MULTILINE)
"""A line that starts like a rendered line-numbered value line (Letta's guard regex)."""
_WARNING_SENTENCE = LINE_NUMBER_WARNING.split(". ", 1)[0]
"""The warning's first sentence: quoting any part of the banner from there on is refused."""
_GUARD_TAIL = (
    "Do not include line numbers when calling memory tools (line numbers are for display purposes only)."
)


def decode_arguments(tool: str, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as a dict: JSON text is parsed (raw control characters inside strings allowed,
    as LLMs emit them); an empty or blank text means no arguments."""
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            decoded = json.loads(arguments, strict=False)
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(
                f"Arguments for {tool} are not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            ) from exc
        except (ValueError, RecursionError) as exc:
            raise ToolArgumentError(f"Arguments for {tool} are not valid JSON: {exc}.") from exc
    else:
        decoded = arguments
    if not isinstance(decoded, Mapping):
        raise ToolArgumentError(f"Arguments for {tool} must be a JSON object, got {_json_type(decoded)}.")
    if not all(isinstance(key, str) for key in decoded):
        raise ToolArgumentError(f"Arguments for {tool} must have string keys.")
    _refuse_surrogates(tool, decoded)
    _refuse_nul(tool, decoded)
    return dict(decoded)


def _refuse_surrogates(tool: str, arguments: Mapping[str, Any]) -> None:
    """Refuse any key or string value, at any depth, that holds a lone surrogate (iterative: a
    deeply nested value that JSON could decode must not overflow the stack here)."""
    pending: list[tuple[str, Any]] = [(name, value) for name, value in arguments.items()]
    while pending:
        name, value = pending.pop()
        if isinstance(value, str):
            texts = [value]
        elif isinstance(value, Mapping):
            texts = [key for key in value if isinstance(key, str)]
            pending.extend((name, item) for item in value.values())
        elif isinstance(value, (list, tuple)):
            texts = []
            pending.extend((name, item) for item in value)
        else:
            texts = []
        if _LONE_SURROGATE.search(name) or any(_LONE_SURROGATE.search(text) for text in texts):
            raise ToolArgumentError(
                f"Arguments for {tool}: '{_printable(name)}' holds a lone surrogate "
                "(an unpaired \\ud800-\\udfff escape), which is not a character; "
                "send the character itself or a valid pair.",
                field_violations=[(_printable(name), "holds a lone surrogate")],
            )


def _printable(name: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", name)


def _refuse_nul(tool: str, arguments: Mapping[str, Any]) -> None:
    for name, value in arguments.items():
        if _holds_nul(name) or _holds_nul(value):
            raise ToolArgumentError(
                f"{tool}: '{name}' must not contain a NUL character (U+0000).",
                reason="NUL_CHARACTER",
                field_violations=[(name, "must not contain a NUL character (U+0000)")],
            )


def _holds_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds U+0000 in any string, keys included (walked without
    recursion: the JSON may nest as deep as the decoder allows)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class Arguments:
    """Typed access to one call's arguments; unknown names are refused up front."""

    def __init__(self, tool: str, values: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise ToolArgumentError(
                f"{tool} got unexpected argument(s) {', '.join(map(repr, unknown))}; "
                f"its arguments are: {', '.join(allowed)}.",
                field_violations=[(name, "unexpected argument") for name in unknown],
            )
        self.tool = tool
        self._values = values

    def required_str(self, name: str, *, purpose: str = "") -> str:
        """A string argument that must be present (JSON ``null`` counts as missing)."""
        value = self._values.get(name)
        if value is None:
            suffix = f" for {purpose}" if purpose else ""
            raise ToolArgumentError(
                f"{self.tool}: '{name}' is required{suffix}.",
                field_violations=[(name, "required")],
            )
        return self._as_str(name, value)

    def optional_str(self, name: str, default: str | None = None) -> str | None:
        """A string argument that may be absent or ``null`` (then ``default``)."""
        value = self._values.get(name)
        return default if value is None else self._as_str(name, value)

    def optional_int(self, name: str, default: int) -> int:
        """An integer argument (``5`` or ``5.0``; not ``true``, not ``"5"``), ``default`` if absent."""
        value = self._values.get(name)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._mistyped(name, "an integer", value)
        return value

    def optional_str_list(self, name: str) -> list[str]:
        """A list of strings (absent or ``null``: empty); a lone string is taken as a one-item list."""
        value = self._values.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._mistyped(name, "an array of strings", value)
        return list(value)

    def given(self, name: str) -> bool:
        """Whether the argument is present with a non-null value."""
        return self._values.get(name) is not None

    def _as_str(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self._mistyped(name, "a string", value)
        return normalise_newlines(value)

    def _mistyped(self, name: str, expected: str, value: Any) -> ToolArgumentError:
        return ToolArgumentError(
            f"{self.tool}: '{name}' must be {expected}, got {_json_type(value)}.",
            field_violations=[(name, f"must be {expected}")],
        )


def refuse_line_numbers(name: str, text: str) -> None:
    """Refuse a text argument that copies display-only line numbers or the line-number warning.

    Both read as DESIGN.md quotes the guard ("… contains a line number prefix, which is not allowed.
    …"); which of the two was found is in the metadata (``found``: ``prefix`` or ``warning``).
    """
    found = "prefix" if LINE_NUMBER_PREFIX.search(text) else "warning" if _WARNING_SENTENCE in text else None
    if found is not None:
        raise LineNumberPrefix(
            f"{name} contains a line number prefix, which is not allowed. {_GUARD_TAIL}",
            metadata={"argument": name, "found": found},
        )


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    ((int, float), "a number"),
    (str, "a string"),
    (Mapping, "an object"),
    ((list, tuple), "an array"),
)


def _json_type(value: Any) -> str:
    """How a decoded JSON value is named in error messages (bool is checked before number)."""
    if value is None:
        return "null"
    for types, name in _JSON_TYPES:
        if isinstance(value, types):
            return name
    return type(value).__name__
