"""Core-memory values as the pure core sees them: immutable blocks, file blocks and directories."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

DEFAULT_BLOCK_LIMIT = 100_000
"""Characters a block may hold when its creator names no limit (Letta's CORE_MEMORY_BLOCK_CHAR_LIMIT)."""
DEFAULT_AGENT_BLOCK_LIMIT = 20_000
"""Limit of the ``persona`` and ``human`` blocks every new agent gets."""
MAX_BLOCK_LIMIT = 2**31 - 1
"""Limits are int32 on the wire and in the store."""
DEFAULT_FILE_LIMIT = 50_000
"""Characters shown of an attached document (Letta's DEFAULT_CORE_MEMORY_SOURCE_CHAR_LIMIT)."""

_EMPTY: Mapping[str, str] = MappingProxyType({})


class RenderMode(StrEnum):
    """How core memory is rendered into the system prompt."""

    STANDARD = "standard"
    LINE_NUMBERED = "line_numbered"
    GIT = "git"


class SearchMode(StrEnum):
    """Which legs a search runs: the one name for it from the request to RetrievalService and back.

    Each member's name is its proto value's suffix in both APIs (``SEARCH_MODE_HYBRID``), so the
    conversions at either edge are derived from this enum, never written out; the value is what a
    hit's ``relevance.search_mode`` and a tool's result say."""

    VECTOR = "vector"
    FTS = "fts"
    HYBRID = "hybrid"


class RecompilePolicy(StrEnum):
    """When the stored system prompt is rebuilt from memory."""

    ON_EDIT = "on_edit"
    """After every successful memory edit by a tool."""
    EXPLICIT = "explicit"
    """Only when RecompileSystemPrompt is called (keeps the LLM's prompt cache warm)."""


class ToolResultStyle(StrEnum):
    """What a successful edit tool returns to the LLM."""

    FULL_VALUE = "full_value"
    """The block's whole new value, as Letta does."""
    SNIPPET = "snippet"
    """A few numbered lines around the edit, to save tokens."""


@dataclass(frozen=True, slots=True)
class Block:
    """A labelled piece of core memory with a character budget.

    ``limit`` counts Unicode code points. ``metadata`` is never rendered. ``version`` is the store's
    optimistic-concurrency counter (the etag is derived from it); 0 means "not stored yet".
    """

    label: str
    value: str = ""
    limit: int = DEFAULT_BLOCK_LIMIT
    description: str = ""
    read_only: bool = False
    metadata: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    """Never rendered. The default is one shared read-only empty mapping (a ``default_factory``:
    dataclasses refuse a mappingproxy as a plain default because it is unhashable)."""
    id: str = ""
    version: int = 0

    @property
    def chars_current(self) -> int:
        return len(self.value)


@dataclass(frozen=True, slots=True)
class FileBlock:
    """A document attached to an agent: read-only to the agent, rendered under ``<directories>``."""

    name: str
    value: str = ""
    limit: int = DEFAULT_FILE_LIMIT
    description: str = ""
    is_open: bool = True


@dataclass(frozen=True, slots=True)
class Directory:
    """A named folder of attached documents."""

    name: str
    description: str = ""
    instructions: str = ""
    files: tuple[FileBlock, ...] = ()
