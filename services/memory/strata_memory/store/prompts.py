"""Compiled system prompts, one per agent and conversation."""

from __future__ import annotations

from sqlalchemy import bindparam, delete, insert, select
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
