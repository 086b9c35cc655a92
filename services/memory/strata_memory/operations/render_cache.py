"""Rendered core memory reused while the blocks that determine it are unchanged.

The key is what the text is a function of: the render mode and the agent's blocks in attach order,
each named by its id, version and time of its last write. A block's version moves with every write of
any field that renders (label, value, limit, description, read_only) and ids are never reused, so
equal keys mean equal text (the write time guards against a store restored from a backup under a
running server, where a version number could come back with other content).
The key is always built from rows read in the caller's own transaction: an edit committed by another
replica, process or connection shows up as a new version there, misses, and is rendered afresh. The
cache never decides *whether* memory changed, only skips re-rendering what the store just said is the
same. Files render outside it (they carry no version).

Bounded by entries and by characters held; shared by the store's executor threads (one lock).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence

from strata_memory.domain.model import RenderMode
from strata_memory.domain.render import render_blocks
from strata_memory.store.records import BlockRecord

MAX_ENTRIES = 512
MAX_CHARACTERS = 8_000_000

RenderKey = tuple[RenderMode, tuple[tuple[str, int, int], ...]]


class RenderCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_characters: int = MAX_CHARACTERS) -> None:
        self._entries: OrderedDict[RenderKey, str] = OrderedDict()
        self._characters = 0
        self._max_entries = max_entries
        self._max_characters = max_characters
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def render_blocks(self, records: Sequence[BlockRecord], mode: RenderMode) -> str:
        """The blocks rendered in ``mode``, from the cache when these versions were rendered before."""
        key: RenderKey = (mode, tuple((r.block.id, r.block.version, r.updated_us) for r in records))
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        text = render_blocks([record.block for record in records], mode)
        self._keep(key, text)
        return text

    def forget(self, block_ids: Collection[str]) -> int:
        """Drop every rendering that includes one of these blocks (a purge: no copy of a purged
        value may stay in this process); returns how many were dropped."""
        if not block_ids:
            return 0
        with self._lock:
            naming = [key for key in self._entries if any(entry[0] in block_ids for entry in key[1])]
            for key in naming:
                self._characters -= len(self._entries.pop(key))
            return len(naming)

    def holding(self, text: str) -> int:
        """How many kept renderings contain ``text``."""
        with self._lock:
            return sum(text in rendered for rendered in self._entries.values())

    def _keep(self, key: RenderKey, text: str) -> None:
        if len(text) > self._max_characters:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = text
            self._characters += len(text)
            while len(self._entries) > self._max_entries or self._characters > self._max_characters:
                _, dropped = self._entries.popitem(last=False)
                self._characters -= len(dropped)
