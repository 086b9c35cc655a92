"""Compiled system prompts, one per agent and conversation."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.engine import Connection

from strata_memory.store import schema
from strata_memory.store.records import PromptRecord

_prompts = schema.system_prompts
_WHERE = (
    _prompts.c.agent_id == bindparam("agent_id"),
    _prompts.c.conversation_id == bindparam("conversation_id"),
)
_PROMPT = select(_prompts).where(*_WHERE)
_DELETE_PROMPT = delete(_prompts).where(*_WHERE)
_INSERT_PROMPT = insert(_prompts)

# What <memory_metadata> counts, in one statement: the agent's messages and the passages of every
# archive attached to it; the tags only when there are passages.
_agent_archives = select(schema.archive_agents.c.archive_id).where(
    schema.archive_agents.c.agent_id == bindparam("agent_id")
)
_COUNTS = select(
    select(func.count())
    .select_from(schema.messages)
    .where(schema.messages.c.agent_id == bindparam("agent_id"))
    .scalar_subquery()
    .label("messages"),
    select(func.count())
    .select_from(schema.passages)
    .where(schema.passages.c.archive_id.in_(_agent_archives))
    .scalar_subquery()
    .label("passages"),
)
_TAGS = (
    select(schema.passage_tags.c.tag)
    .distinct()
    .where(schema.passage_tags.c.archive_id.in_(_agent_archives))
    .order_by(schema.passage_tags.c.tag)
)


@dataclass(frozen=True, slots=True)
class MemoryCounts:
    """What the prompt's metadata reports beside core memory."""

    messages: int
    passages: int
    tags: list[str]


def memory_counts(conn: Connection, agent_id: str) -> MemoryCounts:
    """Messages stored for the agent, passages in its archives and their distinct tags (sorted)."""
    params = {"agent_id": agent_id}
    messages, passages = conn.execute(_COUNTS, params).one()
    tags = list(conn.execute(_TAGS, params).scalars()) if passages else []
    return MemoryCounts(int(messages), int(passages), tags)


def get_prompt(conn: Connection, agent_id: str, conversation_id: str) -> PromptRecord | None:
    params = {"agent_id": agent_id, "conversation_id": conversation_id}
    row = conn.execute(_PROMPT, params).mappings().first()
    if row is None:
        return None
    return PromptRecord(
        row["agent_id"], row["conversation_id"], row["text"], row["fingerprint"], row["compiled_us"]
    )


def save_prompt(conn: Connection, prompt: PromptRecord) -> None:
    where = {"agent_id": prompt.agent_id, "conversation_id": prompt.conversation_id}
    conn.execute(_DELETE_PROMPT, where)
    conn.execute(
        _INSERT_PROMPT,
        {**where, "text": prompt.text, "fingerprint": prompt.fingerprint, "compiled_us": prompt.compiled_us},
    )
