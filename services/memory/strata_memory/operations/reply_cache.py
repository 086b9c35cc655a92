"""Replies of the hot reads kept under the stamps of what they were built from.

A key names everything a reply is a function of: the tenant, and the ids, versions and write times of
the rows behind it (``store.blocks.BlockStamp``), read in the caller's own statement, on the event loop
where the page cache makes that safe (``store.glance``). Equal keys mean equal replies, so the cache
never decides whether the store changed: a write committed by another replica, process or connection
shows up as a new stamp there, misses, and is read in full. Kept replies are never modified (the
servicer hands the same message to every caller). Bounded by entries and by characters held; a purge
drops every kept reply (no copy of a purged value may stay in this process).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable
from typing import Any

MAX_ENTRIES = 4096
MAX_CHARACTERS = 16_000_000


class ReplyCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_characters: int = MAX_CHARACTERS) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, int, frozenset[str]]] = OrderedDict()
        self._characters = 0
        self._max_entries = max_entries
        self._max_characters = max_characters
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, reply: Any, *, characters: int, block_ids: Collection[str]) -> None:
        """Keep ``reply`` (``characters``: its size, for the bound; ``block_ids``: the blocks it shows)."""
        if characters > self._max_characters:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._characters -= old[1]
            self._entries[key] = (reply, characters, frozenset(block_ids))
            self._characters += characters
            while len(self._entries) > self._max_entries or self._characters > self._max_characters:
                _, (_, size, _) = self._entries.popitem(last=False)
                self._characters -= size

    def holding(self, text: str) -> int:
        """How many kept replies contain ``text`` (in their ``str``: a message's text format)."""
        with self._lock:
            return sum(text in str(reply) for reply, _, _ in self._entries.values())

    def clear(self) -> int:
        """Drop every kept reply (a purge); returns how many were dropped."""
        with self._lock:
            dropped = len(self._entries)
            self._entries.clear()
            self._characters = 0
            return dropped

    def forget(self, block_ids: Collection[str]) -> int:
        """Drop every reply showing one of these blocks; returns how many were dropped."""
        if not block_ids:
            return 0
        wanted = set(block_ids)
        with self._lock:
            naming = [key for key, (_, _, shown) in self._entries.items() if shown & wanted]
            for key in naming:
                self._characters -= self._entries.pop(key)[1]
            return len(naming)
