"""An edit's work does not grow with the agent's conversations, and no conversation's prompt goes stale.

Every edit of an ``on_edit`` agent used to re-render and rewrite each conversation's whole prompt in
the write transaction (601 conversations x a 400k-character block: 2-3 s per edit). The test counts the
SQL statements one edit sends about prompts and conversations — the same for 1 and for 25
conversations — and reads every conversation's prompt back: current, not stale, each with its own id.
An edit rewrites the agent's snapshot row alone while every conversation points at it; one created
since, or recompiled on its own, is pointed at it by the next edit. No timing is asserted
(``bench/perf/edit_cost.py`` measures it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import event
from sqlalchemy.engine import Engine

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, new_agent, run_tool

_PROMPT_TABLES = ("system_prompts", "prompt_snapshots", "conversations")


@contextmanager
def prompt_statements() -> Iterator[list[str]]:
    """The SQL statements (about prompts or conversations) any engine in this process sends meanwhile.

    Only statements naming those tables are kept, so the outbox worker's polling cannot change the count.
    """
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if any(table in statement for table in _PROMPT_TABLES):
            seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


async def agent_with_conversations(stub: Stub, count: int) -> pb.Agent:
    agent = await new_agent(stub, pb.Block(label="notes", value="v0"))
    for i in range(count - 1):  # "default" is the first
        await stub.CreateConversation(
            api.CreateConversationRequest(agent_id=agent.id, conversation_id=f"c{i}")
        )
    return agent


async def edit_statements(stub: Stub, agent: pb.Agent, value: str) -> int:
    with prompt_statements() as seen:
        await stub.UpdateBlock(
            api.UpdateBlockRequest(
                ref=pb.BlockRef(agent_id=agent.id, label="notes"),
                block=pb.Block(value=value),
                update_mask=FieldMask(paths=["value"]),
            )
        )
        await run_tool(stub, agent.id, "core_memory_append", json.dumps({"label": "notes", "content": "+"}))
    return len(seen)


async def test_an_edit_sends_as_many_prompt_statements_for_25_conversations_as_for_1(stub: Stub) -> None:
    agents = [await agent_with_conversations(stub, count) for count in (1, 2, 25)]
    # The first edits after conversations were created point them at the agent's snapshot: the same
    # statements for 1 as for 24 new conversations.
    first = [await edit_statements(stub, agent, "v1") for agent in agents]
    assert first[1] == first[2]
    # Then each of the two recompiles (UpdateBlock's, the tool's) rewrites the snapshot row alone.
    assert [await edit_statements(stub, agent, "v2") for agent in agents] == [2, 2, 2]


async def _prompt(stub: Stub, agent: pb.Agent, conversation: str) -> pb.SystemPrompt:
    return await stub.GetSystemPrompt(
        api.GetSystemPromptRequest(agent_id=agent.id, conversation_id=conversation)
    )


async def test_a_conversation_created_after_an_edit_follows_the_next_one(stub: Stub) -> None:
    agent = await agent_with_conversations(stub, 1)
    await edit_statements(stub, agent, "before")
    await stub.CreateConversation(api.CreateConversationRequest(agent_id=agent.id, conversation_id="later"))
    # It starts with a prompt of its own (its own text, not the agent's snapshot).
    assert "before\n+" in (await _prompt(stub, agent, "later")).text
    await edit_statements(stub, agent, "after")
    for conversation in ("default", "later"):
        prompt = await _prompt(stub, agent, conversation)
        assert "after\n+" in prompt.text
        assert f"- CONVERSATION_ID: {conversation}\n" in prompt.text
        assert not prompt.stale


async def test_a_conversation_recompiled_on_its_own_follows_the_next_edit(stub: Stub) -> None:
    agent = await agent_with_conversations(stub, 2)
    await edit_statements(stub, agent, "before")
    await stub.RecompileSystemPrompt(
        api.RecompileSystemPromptRequest(agent_id=agent.id, conversation_id="c0")
    )
    await edit_statements(stub, agent, "after")
    for conversation in ("default", "c0"):
        prompt = await _prompt(stub, agent, conversation)
        assert "after\n+" in prompt.text
        assert not prompt.stale


async def test_every_conversation_prompt_is_current_after_an_edit(stub: Stub) -> None:
    agent = await agent_with_conversations(stub, 5)
    await edit_statements(stub, agent, "fresh value")
    listed = await stub.ListConversations(api.ListConversationsRequest(agent_id=agent.id))
    assert len(listed.conversations) == 5
    for conversation in listed.conversations:
        prompt = await stub.GetSystemPrompt(
            api.GetSystemPromptRequest(agent_id=agent.id, conversation_id=conversation.id)
        )
        assert "fresh value\n+" in prompt.text
        assert f"- CONVERSATION_ID: {conversation.id}\n" in prompt.text
        assert not prompt.stale


@pytest.mark.parametrize("conversations", [1, 3])
async def test_an_explicit_agent_keeps_every_stored_prompt_until_asked(
    stub: Stub, conversations: int
) -> None:
    agent = await new_agent(
        stub, pb.Block(label="notes", value="v0"), recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT
    )
    for i in range(conversations - 1):
        await stub.CreateConversation(
            api.CreateConversationRequest(agent_id=agent.id, conversation_id=f"c{i}")
        )
    before = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    await edit_statements(stub, agent, "changed")
    after = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    assert (after.text, after.stale) == (before.text, True)
    await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    fresh = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    assert "changed\n+" in fresh.text
    assert not fresh.stale
