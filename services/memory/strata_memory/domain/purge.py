"""Forgetting with a receipt: what a purge targets, which stores it reports, and its verdict.

Pure rules, no I/O. A purge deletes one target and every stored copy of its content; its receipt
lists every store in :data:`STORES` order (zero when a store held nothing), so two receipts compare
line by line. It is *verified* only when RetrievalService was read back by id after the deletion
and no index leg held any of the purged documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

VECTOR_LEG, TEXT_LEG = "vector_leg", "text_leg"

STORES: tuple[str, ...] = (
    "agents",
    "blocks",
    "block_versions",
    "block_attachments",
    "conversations",
    "messages",
    "archives",
    "passages",
    "files",
    "system_prompts",
    "prompt_snapshots",
    "prompt_receipts",
    "agent_file_residues",
    "write_requests",
    "index_jobs",
    VECTOR_LEG,
    TEXT_LEG,
)
"""Every store a receipt reports, in its order: the SQL tables, the outbox, then the index legs."""


class PurgeKind(Enum):
    AGENT = "agent"
    BLOCK = "block"
    PASSAGE = "passage"
    MESSAGE = "message"
    CONVERSATION = "conversation"


@dataclass(frozen=True, slots=True)
class PurgeTarget:
    """What to forget: one resource by id; a conversation also names its agent (``agent_id``)."""

    kind: PurgeKind
    id: str
    agent_id: str = ""

    @property
    def name(self) -> str:
        """``kind/id``, or ``conversation/agent_id/conversation_id``."""
        if self.kind is PurgeKind.CONVERSATION:
            return f"conversation/{self.agent_id}/{self.id}"
        return f"{self.kind.value}/{self.id}"


@dataclass(frozen=True, slots=True)
class PurgeReceipt:
    target: str
    counts: tuple[tuple[str, int], ...]
    document_ids: tuple[str, ...]
    verified: bool
    remaining_ids: tuple[str, ...]
    note: str
    purged_us: int


@dataclass(slots=True)
class Tally:
    """Rows deleted per store, accumulated by the store functions of one purge."""

    counts: dict[str, int] = field(default_factory=dict)
    document_ids: set[str] = field(default_factory=set)
    block_ids: set[str] = field(default_factory=set)
    """The blocks deleted (their renderings kept in memory are dropped too)."""

    def add(self, store: str, deleted: int) -> None:
        if store not in STORES:
            raise ValueError(f"unknown store {store!r}")
        self.counts[store] = self.counts.get(store, 0) + max(deleted, 0)


def ordered_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Every store of :data:`STORES`, in order, with its count (0 when absent)."""
    return tuple((store, counts.get(store, 0)) for store in STORES)


def verdict(
    document_ids: Iterable[str], vector_ids: Iterable[str], text_ids: Iterable[str]
) -> tuple[bool, tuple[str, ...], str]:
    """Whether a read-back proves the documents gone: (verified, the ids still held, a note).

    Only ids that were purged count: a leg holding some other id says nothing about this purge."""
    purged = set(document_ids)
    remaining = tuple(sorted(purged & (set(vector_ids) | set(text_ids))))
    if not remaining:
        return True, (), ""
    return False, remaining, f"{len(remaining)} purged document(s) are still held by an index leg"
