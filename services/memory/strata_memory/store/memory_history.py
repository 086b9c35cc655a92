"""An agent's memory as it was at a past moment: which blocks were attached (``block_attachments``) and
each one's newest version by then (``block_versions``).

Every attach writes a row, every detach (and the deletion of a block) closes it; a row is open while
``detached_us`` is NULL. A block attached at ``t`` is part of memory at ``t`` and later, and a block
detached at ``t`` is not part of it at ``t``. A deleted block's history is deleted with it, so memory
read as of a time before the deletion no longer shows that block. ``store.blocks.blocks_as_of`` reads
memory at a moment with :data:`AS_OF`.
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection

from strata_memory.store import schema
from strata_memory.store.records import now_us

_attachments, _versions = schema.block_attachments, schema.block_versions
_INSERT = insert(_attachments)
_CLOSE = update(_attachments).where(
    _attachments.c.agent_id == bindparam("for_agent"),
    _attachments.c.block_id == bindparam("for_block"),
    _attachments.c.detached_us.is_(None),
)
_CLOSE_BLOCK = update(_attachments).where(
    _attachments.c.block_id == bindparam("for_block"), _attachments.c.detached_us.is_(None)
)
_earlier = _versions.alias("earlier")
_newest_by = (
    select(func.max(_earlier.c.version))
    .where(_earlier.c.block_id == _attachments.c.block_id, _earlier.c.changed_us <= bindparam("at_us"))
    .correlate(_attachments)
    .scalar_subquery()
)
# The blocks attached at ``at_us``, in attach order, each at its newest version by then, in one statement.
AS_OF = (
    select(_versions)
    .select_from(
        _attachments.join(
            _versions,
            and_(_versions.c.block_id == _attachments.c.block_id, _versions.c.version == _newest_by),
        )
    )
    .where(
        _attachments.c.agent_id == bindparam("agent_id"),
        _attachments.c.attached_us <= bindparam("at_us"),
        or_(_attachments.c.detached_us.is_(None), _attachments.c.detached_us > bindparam("at_us")),
    )
    .order_by(_attachments.c.position, _attachments.c.id)
)


def attached(conn: Connection, agent_id: str, block_id: str, position: int) -> None:
    conn.execute(
        _INSERT,
        {"agent_id": agent_id, "block_id": block_id, "position": position, "attached_us": now_us()},
    )


def detached(conn: Connection, agent_id: str, block_id: str) -> None:
    conn.execute(_CLOSE, {"for_agent": agent_id, "for_block": block_id, "detached_us": now_us()})


def block_deleted(conn: Connection, block_id: str) -> None:
    conn.execute(_CLOSE_BLOCK, {"for_block": block_id, "detached_us": now_us()})


def forget_agent(conn: Connection, agent_id: str) -> int:
    """Delete the agent's attachment history; how many rows there were."""
    return conn.execute(delete(_attachments).where(_attachments.c.agent_id == agent_id)).rowcount
