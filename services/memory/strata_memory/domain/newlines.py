"""The one line-ending rule of every write path: ``\\r\\n`` and lone ``\\r`` are stored as ``\\n``.

It applies to every text that is rendered into a prompt or counted against a budget — block values
and descriptions, an agent's system text, attached files' content and description — whether it
arrives through the API, a tool or a restore, so ``chars_current`` counts what the model sees. Tabs and
every other character are kept as written. Messages and passages are records of what was said and
are stored verbatim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .model import Block

TEXT_FIELDS = ("value", "description")
"""The block fields the rule applies to."""


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def block_with_lf(block: Block) -> Block:
    return dataclasses.replace(
        block, value=normalise_newlines(block.value), description=normalise_newlines(block.description)
    )


def changes_with_lf(
    changes: Mapping[str, object], fields: tuple[str, ...] = TEXT_FIELDS
) -> dict[str, object]:
    """``changes`` (field name → new value) with the named text fields normalised."""
    return {
        name: normalise_newlines(value) if name in fields and isinstance(value, str) else value
        for name, value in changes.items()
    }
