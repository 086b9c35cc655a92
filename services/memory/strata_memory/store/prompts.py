"""Compiled system prompts, one per agent and conversation."""

from __future__ import annotations

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from strata_memory.store import schema
from strata_memory.store.records import PromptRecord


def get_prompt(conn: Connection, agent_id: str, conversation_id: str) -> PromptRecord | None:
    row = (
        conn.execute(
            select(schema.system_prompts).where(
                schema.system_prompts.c.agent_id == agent_id,
                schema.system_prompts.c.conversation_id == conversation_id,
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    return PromptRecord(
        row["agent_id"], row["conversation_id"], row["text"], row["fingerprint"], row["compiled_us"]
    )


def save_prompt(conn: Connection, prompt: PromptRecord) -> None:
    table = schema.system_prompts
    conn.execute(
        delete(table).where(
            table.c.agent_id == prompt.agent_id, table.c.conversation_id == prompt.conversation_id
        )
    )
    conn.execute(
        insert(table).values(
            agent_id=prompt.agent_id,
            conversation_id=prompt.conversation_id,
            text=prompt.text,
            fingerprint=prompt.fingerprint,
            compiled_us=prompt.compiled_us,
        )
    )
