"""Prompt receipts: what one compiled system prompt was built from, named by a stable id.

A receipt lists each block the prompt rendered (id, label, version, in render order), the counts its
``<memory_metadata>`` reported (messages, passages with their tags, files), the render mode and the
compile time. Its id is a digest of everything but the time: two compiles of the same memory get the
same id, any edit (a block's version, an attach or detach, a new message) a new one. A receipt is
immutable once recorded, so it keeps naming what the prompt used after memory moves on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

RECEIPT_PREFIX = "receipt-"


@dataclass(frozen=True, slots=True)
class BlockUse:
    """One block as a prompt rendered it."""

    block_id: str
    label: str
    version: int


@dataclass(frozen=True, slots=True)
class PromptReceipt:
    tenant_id: str
    agent_id: str
    compiled_us: int
    render_mode: str
    blocks: tuple[BlockUse, ...]
    message_count: int
    passage_count: int
    file_count: int
    tags: tuple[str, ...]
    system_sha256: str
    """Digest of the agent's system instructions, which are part of the prompt but not of memory."""

    @property
    def id(self) -> str:
        return receipt_id(self)


def receipt_id(receipt: PromptReceipt) -> str:
    """``receipt-`` and 32 hex digits of SHA-256 over the receipt without its time (see the module)."""
    basis = {
        "agent": receipt.agent_id,
        "mode": receipt.render_mode,
        "blocks": [[b.block_id, b.label, b.version] for b in receipt.blocks],
        "counts": [receipt.message_count, receipt.passage_count, receipt.file_count],
        "tags": list(receipt.tags),
        "system": receipt.system_sha256,
    }
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return RECEIPT_PREFIX + digest[:32]


def system_digest(system: str) -> str:
    return hashlib.sha256(system.encode()).hexdigest()
