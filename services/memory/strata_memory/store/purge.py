"""Purge's store side: delete a target and every row that holds a copy of its content, counting each.

Each function runs inside the caller's transaction and adds what it deleted to a
:class:`~strata_memory.domain.purge.Tally` (rows per store, and the ids of the index documents
whose rows went). Lookups are tenant-scoped: another tenant's id is NOT_FOUND, never purged.
What a purge must reach besides the target's own row:

* a block: its versions (``block_versions`` hold every past value), its attachment history, and the
  compiled prompts, prompt snapshots and prompt receipts of every agent that held it (they rendered
  or named its value); the caller recompiles those agents' prompts without it;
* a message or a conversation: the outbox jobs naming the messages;
* a passage: its tags' counts and its outbox jobs; a tag only it carried leaves the prompt snapshots
  and receipts of its archive's agents that listed it (the caller recompiles their prompts);
* an agent: everything :func:`strata_memory.store.agents.delete_agent` deletes, the archives (with
  their passages) no other agent holds, its Agent File residue, and the history of its blocks that
  no other agent holds, with what agents that held one of those blocks before compiled from it.

An Agent File import keeps what Strata does not model verbatim, per block and per message (a
message's several content parts, a block's nested metadata): a purged block's or message's entry is
removed from every residue of the tenant that holds one, and counted under ``agent_file_residues``
(one per entry; a purged agent's own residue row counts one). The records of idempotent writes
(``write_requests``, a day's SHA-256 of each request) that stored a purged id are deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sqlalchemy import Table, delete, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from strata_memory.domain.purge import Tally
from strata_memory.store import agents, archives, blocks, memory_history, schema
from strata_memory.store.notices import announce_jobs
from strata_memory.store.records import DEFAULT_CONVERSATION, now_us
from strata_serving.errors import NotFound

_messages, _jobs = schema.messages, schema.index_jobs


def _count(conn: Connection, table: Table, *where: ColumnElement[bool]) -> int:
    return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _delete(conn: Connection, tally: Tally, store: str, table: Table, *where: ColumnElement[bool]) -> None:
    tally.add(store, int(conn.execute(delete(table).where(*where)).rowcount))


def drop_jobs(conn: Connection, tenant_id: str, document_ids: Sequence[str], tally: Tally) -> list[int]:
    """Delete every outbox job (pending, backing off or parked) naming one of these documents, except
    those a worker is delivering now (leased): their ids are returned, for the caller to wait until
    they are settled (an upsert on the wire would land after the purge's deletion otherwise)."""
    ids = sorted(set(document_ids))
    now = now_us()
    in_flight: list[int] = []
    for start in range(0, len(ids), 500):
        naming = (_jobs.c.tenant_id == tenant_id, _jobs.c.document_id.in_(ids[start : start + 500]))
        leased = conn.execute(select(_jobs.c.id).where(*naming, _jobs.c.lease_until_us > now)).scalars()
        in_flight += [int(job_id) for job_id in leased]
        _delete(conn, tally, "index_jobs", _jobs, *naming, _jobs.c.lease_until_us <= now)
    return in_flight


def leased_jobs(conn: Connection, job_ids: Sequence[int]) -> list[int]:
    """Which of these jobs a worker still holds under a live lease."""
    now = now_us()
    query = select(_jobs.c.id).where(_jobs.c.id.in_(list(job_ids)), _jobs.c.lease_until_us > now)
    return [int(job_id) for job_id in conn.execute(query).scalars()]


def hold_jobs(conn: Connection, job_ids: Sequence[int], *, owner: str, until_us: int) -> None:
    """Lease these outbox jobs to a purge (the outbox takes none of them until ``until_us``)."""
    for start in range(0, len(job_ids), 500):
        chunk = list(job_ids[start : start + 500])
        conn.execute(
            update(_jobs).where(_jobs.c.id.in_(chunk)).values(lease_owner=owner, lease_until_us=until_us)
        )


def release_jobs(conn: Connection, job_ids: Sequence[int], *, owner: str) -> None:
    """Hand these jobs, still leased to ``owner``, to the outbox now (and wake other replicas')."""
    for start in range(0, len(job_ids), 500):
        chunk = list(job_ids[start : start + 500])
        conn.execute(
            update(_jobs)
            .where(_jobs.c.id.in_(chunk), _jobs.c.lease_owner == owner)
            .values(lease_owner="", lease_until_us=0)
        )
    announce_jobs(conn)


def drop_job_ids(conn: Connection, job_ids: Sequence[int]) -> None:
    """Delete these outbox jobs (a purge's own delete jobs, once it delivered them itself)."""
    for start in range(0, len(job_ids), 500):
        conn.execute(delete(_jobs).where(_jobs.c.id.in_(list(job_ids[start : start + 500]))))


def purge_message(conn: Connection, tenant_id: str, message_id: str, tally: Tally) -> str:
    """Delete one message of the tenant; returns its agent's id. NOT_FOUND when it has none such."""
    row = conn.execute(
        select(_messages.c.agent_id).where(_messages.c.tenant_id == tenant_id, _messages.c.id == message_id)
    ).first()
    if row is None:
        raise NotFound(f"Message '{message_id}' not found.", metadata={"message_id": message_id})
    _delete_messages(conn, tally, row.agent_id, [message_id])
    forget_in_residues(conn, tenant_id, "messages", [message_id], tally, agent_id=row.agent_id)
    return str(row.agent_id)


def purge_conversation(
    conn: Connection, tenant_id: str, agent_id: str, conversation_id: str, tally: Tally
) -> None:
    """Delete a conversation of the tenant's agent with its messages and its compiled prompt; the
    agent's ``default`` conversation loses its messages and prompt but stays."""
    agents.get_agent(conn, tenant_id, agent_id, for_update=True)
    agents.get_conversation(conn, agent_id, conversation_id)
    where = (_messages.c.agent_id == agent_id, _messages.c.conversation_id == conversation_id)
    ids = list(conn.execute(select(_messages.c.id).where(*where)).scalars())
    _delete_messages(conn, tally, agent_id, ids)
    forget_in_residues(conn, tenant_id, "messages", ids, tally, agent_id=agent_id)
    prompts = schema.system_prompts.c
    _delete(
        conn,
        tally,
        "system_prompts",
        schema.system_prompts,
        prompts.agent_id == agent_id,
        prompts.conversation_id == conversation_id,
    )
    if conversation_id == DEFAULT_CONVERSATION:
        return  # every agent has it (appends without a conversation go there): kept, empty
    conv = schema.conversations.c
    _delete(
        conn,
        tally,
        "conversations",
        schema.conversations,
        conv.agent_id == agent_id,
        conv.id == conversation_id,
    )


def _delete_messages(conn: Connection, tally: Tally, agent_id: str, ids: Sequence[str]) -> None:
    """Delete these messages of one agent, keeping the agent's message count true."""
    deleted = 0
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        deleted += int(conn.execute(delete(_messages).where(_messages.c.id.in_(chunk))).rowcount)
    tally.add("messages", deleted)
    tally.document_ids.update(ids)
    if deleted:
        counted = schema.agents.c.message_count
        conn.execute(
            update(schema.agents)
            .where(schema.agents.c.id == agent_id)
            .values(message_count=counted - deleted)
        )


def purge_passage(
    conn: Connection, tenant_id: str, passage_id: str, tally: Tally
) -> tuple[tuple[str, ...], list[str]]:
    """Delete one passage of the tenant (PASSAGE_NOT_FOUND otherwise); returns its archive's agents,
    and those of them whose prompts listed a tag only this passage carried (their snapshots and
    receipts listing it are deleted; the caller recompiles their prompts)."""
    found = archives.get_passages(conn, tenant_id, [passage_id])
    archives.delete_passage(conn, tenant_id, passage_id)
    tally.add("passages", 1)
    tally.document_ids.add(passage_id)
    holders = archives.get_archive(conn, tenant_id, found[0].archive_id).agent_ids
    tags = set(found[0].tags)
    return holders, [agent_id for agent_id in holders if forget_tags(conn, tally, agent_id, tags)]


def forget_tags(conn: Connection, tally: Tally, agent_id: str, tags: set[str]) -> bool:
    """Delete the agent's prompt snapshots and receipts listing a tag of ``tags`` that none of its
    archives holds any more; whether there was such a tag (its compiled prompts list it too)."""
    link, kept = schema.archive_agents.c, schema.archive_tags.c
    archive_ids = select(link.archive_id).where(link.agent_id == agent_id).scalar_subquery()
    held = set(
        conn.execute(select(kept.tag).where(kept.archive_id.in_(archive_ids), kept.tag.in_(tags))).scalars()
    )
    gone = tags - held
    if not gone:
        return False
    for store, table in (
        ("prompt_snapshots", schema.prompt_snapshots),
        ("prompt_receipts", schema.prompt_receipts),
    ):
        rows = conn.execute(select(table.c.id, table.c.tags).where(table.c.agent_id == agent_id))
        listing = [row.id for row in rows if not gone.isdisjoint(row.tags or ())]
        if listing:
            _delete(conn, tally, store, table, table.c.id.in_(listing))
    return True


def purge_block(conn: Connection, tenant_id: str, block_id: str, tally: Tally) -> list[str]:
    """Delete a block of the tenant, its history, and what its holders compiled from it; returns
    the agents that hold it now (whose prompts the caller recompiles)."""
    blocks.get_block(conn, tenant_id, block_id, for_update=True)
    holding = blocks.holders(conn, block_id)
    ever_held = _ever_held(conn, block_id)
    _delete_block_rows(conn, tally, block_id)
    forget_in_residues(conn, tenant_id, "blocks", [block_id], tally)
    forget_compiled(conn, tally, sorted(ever_held | set(holding)), block_id)
    return holding


def _ever_held(conn: Connection, block_id: str) -> set[str]:
    """The agents whose attachment history names the block (they held it once, or hold it now)."""
    history = schema.block_attachments.c
    return set(conn.execute(select(history.agent_id).where(history.block_id == block_id)).scalars())


def _delete_block_rows(conn: Connection, tally: Tally, block_id: str) -> None:
    versions = schema.block_versions
    tally.add("block_versions", _count(conn, versions, versions.c.block_id == block_id))
    history = schema.block_attachments
    _delete(conn, tally, "block_attachments", history, history.c.block_id == block_id)
    blocks.delete_block(conn, block_id)
    tally.add("blocks", 1)
    tally.block_ids.add(block_id)


def forget_in_residues(
    conn: Connection,
    tenant_id: str,
    part: Literal["blocks", "messages"],
    ids: Sequence[str],
    tally: Tally,
    *,
    agent_id: str | None = None,
    where: ColumnElement[bool] | None = None,
) -> None:
    """Remove these blocks' or messages' entries from the tenant's Agent File residues (only
    ``agent_id``'s when given: a message is one agent's), counting each entry removed."""
    wanted = set(ids)
    if not wanted:
        return
    residues = schema.agent_file_residues
    query = select(residues.c.agent_id, residues.c[part]).where(residues.c.tenant_id == tenant_id)
    if agent_id is not None:
        query = query.where(residues.c.agent_id == agent_id)
    if where is not None:
        query = query.where(where)
    for holder, entries in conn.execute(query).all():
        removed = wanted.intersection(entries or {})
        if removed:
            kept = {key: value for key, value in entries.items() if key not in removed}
            conn.execute(update(residues).where(residues.c.agent_id == holder).values({part: kept}))
            tally.add("agent_file_residues", len(removed))


def forget_write_requests(conn: Connection, tenant_id: str, ids: set[str], tally: Tally) -> None:
    """Delete the tenant's records of idempotent writes that stored one of these ids: each keeps a
    SHA-256 of its request, content included, for a day (a retry after the purge stores anew)."""
    if not ids:
        return
    rows = schema.write_requests
    kept = conn.execute(
        select(rows.c.method, rows.c.request_id, rows.c.resource_ids).where(rows.c.tenant_id == tenant_id)
    ).all()
    for method, request_id, stored in kept:
        if not ids.isdisjoint(stored or ()):
            where = (rows.c.tenant_id == tenant_id, rows.c.method == method, rows.c.request_id == request_id)
            _delete(conn, tally, "write_requests", rows, *where)


def forget_compiled(conn: Connection, tally: Tally, agent_ids: Sequence[str], block_id: str) -> None:
    """Delete the compiled prompts and snapshots of these agents (they rendered the block's value)
    and their prompt receipts that name the block."""
    if not agent_ids:
        return
    prompts, snapshots, receipts = schema.system_prompts, schema.prompt_snapshots, schema.prompt_receipts
    _delete(conn, tally, "system_prompts", prompts, prompts.c.agent_id.in_(agent_ids))
    _delete(conn, tally, "prompt_snapshots", snapshots, snapshots.c.agent_id.in_(agent_ids))
    rows = conn.execute(select(receipts.c.id, receipts.c.blocks).where(receipts.c.agent_id.in_(agent_ids)))
    naming = [row.id for row in rows if any(entry[0] == block_id for entry in row.blocks)]
    if naming:
        _delete(conn, tally, "prompt_receipts", receipts, receipts.c.id.in_(naming))


def purge_agent(conn: Connection, tenant_id: str, agent_id: str, tally: Tally) -> None:
    """Delete the tenant's agent and everything of it (see the module docstring)."""
    agent = agents.get_agent(conn, tenant_id, agent_id, for_update=True)
    _count_agent_rows(conn, tally, agent_id)
    tally.document_ids.update(
        conn.execute(select(_messages.c.id).where(_messages.c.agent_id == agent_id)).scalars()
    )
    for archive_id in archives.agent_archive_ids(conn, agent_id):
        link = schema.archive_agents.c
        others = _count(conn, schema.archive_agents, link.archive_id == archive_id, link.agent_id != agent_id)
        if not others:
            passage_ids = archives.delete_archive(conn, archive_id)
            tally.add("archives", 1)
            tally.add("passages", len(passage_ids))
            tally.document_ids.update(passage_ids)
    own = [
        b.block.id
        for b in blocks.agent_blocks(conn, agent_id)
        if blocks.holders(conn, b.block.id) == [agent_id]
    ]
    for block_id in own:  # another agent that held one before may keep a prompt rendering it
        earlier = _ever_held(conn, block_id) - {agent_id}
        _delete_block_rows(conn, tally, block_id)
        forget_compiled(conn, tally, sorted(earlier), block_id)
    residue = schema.agent_file_residues
    forget_in_residues(conn, tenant_id, "blocks", own, tally, where=residue.c.agent_id != agent_id)
    _delete(conn, tally, "agent_file_residues", residue, residue.c.agent_id == agent_id)
    agents.delete_agent(conn, agent)
    tally.add("agents", 1)


def _count_agent_rows(conn: Connection, tally: Tally, agent_id: str) -> None:
    """Count the rows :func:`agents.delete_agent` deletes with the agent (before it does)."""
    for store, table in (
        ("messages", _messages),
        ("files", schema.files),
        ("conversations", schema.conversations),
        ("system_prompts", schema.system_prompts),
        ("prompt_snapshots", schema.prompt_snapshots),
        ("prompt_receipts", schema.prompt_receipts),
    ):
        tally.add(store, _count(conn, table, table.c.agent_id == agent_id))
    history = schema.block_attachments
    tally.add("block_attachments", _count(conn, history, history.c.agent_id == agent_id))
    memory_history.forget_agent(conn, agent_id)
