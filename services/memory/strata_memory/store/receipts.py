"""Prompt receipts, recorded once per id and never changed (``domain/receipts.py`` says what they hold).

A receipt row outlives the prompt it was made for: a recompile rewrites an agent's snapshot in place
but adds a receipt, so a message that names a receipt keeps naming what its prompt was built from.
Receipts go with their agent (DeleteAgent) and with a purge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from strata_memory.domain.receipts import BlockUse, PromptReceipt
from strata_memory.store import schema

_receipts = schema.prompt_receipts
_RECEIPT = select(_receipts).where(
    _receipts.c.id == bindparam("receipt_id"), _receipts.c.tenant_id == bindparam("tenant_id")
)
_INSERT = {
    "sqlite": sqlite.insert(_receipts).on_conflict_do_nothing(index_elements=[_receipts.c.id]),
    "postgresql": postgresql.insert(_receipts).on_conflict_do_nothing(index_elements=[_receipts.c.id]),
}


def save_receipt(conn: Connection, receipt: PromptReceipt) -> str:
    """Record ``receipt`` unless its id is recorded already (the first compile's time stays); its id."""
    conn.execute(_INSERT[conn.dialect.name], _row(receipt))
    return receipt.id


def get_receipt(conn: Connection, tenant_id: str, receipt_id: str) -> PromptReceipt | None:
    row = conn.execute(_RECEIPT, {"receipt_id": receipt_id, "tenant_id": tenant_id}).mappings().first()
    return None if row is None else receipt_from_row(dict(row))


def delete_agent_receipts(conn: Connection, agent_id: str) -> int:
    """Delete every receipt of the agent; how many there were."""
    return conn.execute(delete(_receipts).where(_receipts.c.agent_id == agent_id)).rowcount


def _row(receipt: PromptReceipt) -> dict[str, Any]:
    return {
        "id": receipt.id,
        "tenant_id": receipt.tenant_id,
        "agent_id": receipt.agent_id,
        "compiled_us": receipt.compiled_us,
        "render_mode": receipt.render_mode,
        "blocks": [[b.block_id, b.label, b.version] for b in receipt.blocks],
        "message_count": receipt.message_count,
        "passage_count": receipt.passage_count,
        "file_count": receipt.file_count,
        "tags": list(receipt.tags),
        "system_sha256": receipt.system_sha256,
    }


def receipt_from_row(row: Mapping[str, Any]) -> PromptReceipt:
    return PromptReceipt(
        tenant_id=row["tenant_id"],
        agent_id=row["agent_id"],
        compiled_us=int(row["compiled_us"]),
        render_mode=row["render_mode"],
        blocks=tuple(BlockUse(str(b[0]), str(b[1]), int(b[2])) for b in row["blocks"]),
        message_count=int(row["message_count"]),
        passage_count=int(row["passage_count"]),
        file_count=int(row["file_count"]),
        tags=tuple(str(t) for t in row["tags"]),
        system_sha256=row["system_sha256"],
    )
