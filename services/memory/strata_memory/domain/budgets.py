"""Character budgets and label rules, checked on every write and never on read or render.

Lengths count Unicode code points (``len`` on ``str``), the same unit ``chars_current`` shows the model.
"""

from __future__ import annotations

import unicodedata

from strata_serving.errors import InvalidArgument

from .errors import CharLimitExceeded
from .model import MAX_BLOCK_LIMIT, Block

MAX_LABEL_LENGTH = 200
"""Longest label accepted, in code points."""

_FORBIDDEN_LABEL_CHARS = frozenset("<>")
"""Labels become XML-like tag names in the prompt and are never escaped, so these would break it."""
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Cf", "Co", "Cn"})
"""Control characters, lone surrogates, format characters (zero-width spaces and joiners, bidi
embeddings, overrides and isolates, the BOM, the soft hyphen), private-use and unassigned code points."""
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800") | frozenset(
    chr(c) for c in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0x180B, 0x1810))
)
"""Characters Unicode counts as letters, symbols or marks that show nothing: Hangul fillers, the
blank Braille pattern, variation selectors, Mongolian variation selectors."""
_CONFUSABLE_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE")
"""Alphabets whose letters are look-alikes of each other's (Cyrillic U+0430 and Latin ``a``)."""


def check_budget(block: Block, new_value: str) -> None:
    """Refuse a write that would leave ``block`` holding more than ``block.limit`` characters.

    Exactly ``limit`` characters is allowed. Raises :class:`CharLimitExceeded` naming the block, its
    limit, its current length and the requested length.
    """
    if len(new_value) > block.limit:
        raise CharLimitExceeded(
            block.label, limit=block.limit, current=len(block.value), requested=len(new_value)
        )


def validate_limit(limit: int, *, field: str = "limit") -> int:
    """Return ``limit`` if it is a usable block limit (1 .. int32 max), else raise ``InvalidArgument``."""
    if limit <= 0:
        raise InvalidArgument.field(field, f"must be positive, got {limit}", reason="INVALID_LIMIT")
    if limit > MAX_BLOCK_LIMIT:
        raise InvalidArgument.field(
            field, f"must be at most {MAX_BLOCK_LIMIT} (int32), got {limit}", reason="INVALID_LIMIT"
        )
    return limit


def check_limit_change(block: Block, new_limit: int) -> None:
    """Refuse a new limit that is out of range or below the block's current length.

    Out of range raises ``InvalidArgument`` (reason ``INVALID_LIMIT``); below the current length raises
    :class:`CharLimitExceeded` with ``limit=new_limit`` and current = requested = the current length.
    """
    validate_limit(new_limit)
    if len(block.value) > new_limit:
        raise CharLimitExceeded(
            block.label, limit=new_limit, current=len(block.value), requested=len(block.value)
        )


def validate_label(
    label: str, *, field: str = "label", error: type[InvalidArgument] = InvalidArgument
) -> str:
    """Return ``label`` unchanged if it is a well-formed block label, else raise ``error``.

    A label is 1..200 code points, may contain ``/`` between non-empty segments (``system/persona``),
    and has no whitespace, control characters, ``<`` or ``>``. It must also read as what it is:
    no invisible, zero-width or bidi-control character; in NFKC form (so no fullwidth or other
    compatibility look-alikes of plain letters); and no segment mixing Latin, Greek, Cyrillic,
    Armenian or Cherokee letters (``hum\\u0430n``, with a Cyrillic a, is refused). A label wholly
    in one script that resembles one in another (all-Cyrillic ``\\u0441\\u043e\\u0441\\u043e``
    beside Latin ``coco``) is accepted: telling those apart needs Unicode's confusables table, which
    Strata does not ship.
    The raised error names ``field`` and has reason ``INVALID_LABEL``; tools pass
    ``error=ToolArgumentError`` so the model sees an argument error.
    """
    problem = _label_problem(label)
    if problem is not None:
        raise error.field(field, problem, reason="INVALID_LABEL")
    return label


def _label_problem(label: str) -> str | None:
    if not label:
        return "must not be empty"
    if len(label) > MAX_LABEL_LENGTH:
        return f"must be at most {MAX_LABEL_LENGTH} characters, got {len(label)}"
    if label.startswith("/") or label.endswith("/"):
        return f"must not start or end with '/', got {label!r}"
    if "//" in label:
        return f"must not contain an empty path segment ('//'), got {label!r}"
    if any(segment in (".", "..") for segment in label.split("/")):
        return f"must not contain a '.' or '..' path segment, got {label!r}"
    return _character_problem(label)


def _character_problem(label: str) -> str | None:
    for ch in label:
        if ch.isspace() or unicodedata.category(ch) in {"Cc", "Cs"}:
            return f"must not contain whitespace or control characters, got {label!r}"
        if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES or ch in _INVISIBLE_LETTERS:
            return (
                "must not contain invisible, zero-width, bidi-control, private-use or unassigned "
                f"characters (U+{ord(ch):04X}), got {label!r}"
            )
        if ch in _FORBIDDEN_LABEL_CHARS:
            return f"must not contain '<' or '>', got {label!r}"
    normal = unicodedata.normalize("NFKC", label)
    if normal != label:
        return f"must be in Unicode NFKC form (write {normal!r}), got {label!r}"
    for segment in label.split("/"):
        scripts = sorted({_script(ch) for ch in segment} & set(_CONFUSABLE_SCRIPTS))
        if len(scripts) > 1:
            return (
                f"must not mix {' and '.join(s.title() for s in scripts)} letters in one segment "
                f"(look-alikes), got {label!r}"
            )
    return None


def _script(ch: str) -> str:
    """The script a letter's Unicode name starts with (``LATIN``, ``CYRILLIC``…); "" for non-letters."""
    if not ch.isalpha():
        return ""
    return unicodedata.name(ch, "").split(" ", 1)[0]
