"""Rows of ``agent_file_residues``: what an Agent File import kept verbatim, one row per agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from strata_memory.store import schema

_residues = schema.agent_file_residues


@dataclass(frozen=True, slots=True)
class Residue:
    agent_id: str
    tenant_id: str
    import_id: str
    position: int
    agent: dict[str, Any]
    blocks: dict[str, Any]
    """Strata block id → the block's residue."""
    messages: dict[str, Any]
    """Strata message id → the message's residue."""
    document: dict[str, Any]
    ids: dict[str, str]
    """The file's ids → Strata ids (the whole import's)."""
    created_us: int


def insert_residues(conn: Connection, residues: Sequence[Residue]) -> None:
    if residues:
        conn.execute(insert(_residues), [_columns(r) for r in residues])


def group_of(conn: Connection, tenant_id: str, agent_id: str) -> list[Residue]:
    """The residues of every agent still stored that was imported with ``agent_id`` (in file order);
    empty when the agent was not imported."""
    own = select(_residues.c.import_id).where(
        _residues.c.agent_id == agent_id, _residues.c.tenant_id == tenant_id
    )
    rows = conn.execute(
        select(_residues)
        .where(_residues.c.import_id.in_(own.scalar_subquery()))
        .order_by(_residues.c.position)
    ).mappings()
    return [Residue(**dict(row)) for row in rows]


def _columns(residue: Residue) -> dict[str, Any]:
    return {name: getattr(residue, name) for name in Residue.__dataclass_fields__}
