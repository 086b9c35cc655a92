"""Recall messages through a real server: append with sequence numbers, list with filters, counts."""

from __future__ import annotations

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, expect_error, new_agent

USER, ASSISTANT = pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT


async def test_append_numbers_messages_and_lists_them_in_order(stub: Stub) -> None:
    agent = await new_agent(stub)
    sent = [pb.Message(role=USER, content="hi"), pb.Message(role=ASSISTANT, content="hello")]
    stored = (await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=sent))).messages
    assert [(m.sequence, m.conversation_id) for m in stored] == [(1, "default"), (2, "default")]
    more = await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[
                pb.Message(
                    role=ASSISTANT,
                    tool_calls=[pb.ToolCall(id="c1", name="send_message", arguments='{"message": "bye"}')],
                )
            ],
        )
    )
    assert more.messages[0].sequence == 3
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id, roles=[ASSISTANT]))
    assert listed.total_size == 2
    assert [m.content for m in listed.messages] == ["hello", ""]
    assert listed.messages[1].tool_calls[0].name == "send_message"


async def test_message_count_reaches_the_metadata_at_recompile(stub: Stub) -> None:
    agent = await new_agent(stub)
    messages = [pb.Message(role=USER, content=f"m{i}") for i in range(3)]
    await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=messages))
    assert (await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))).stale
    done = await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    assert "- 3 previous messages between you and the user" in done.prompt.text


async def test_bad_messages_are_refused_and_nothing_is_stored(stub: Stub) -> None:
    agent = await new_agent(stub)
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    for message in (
        pb.Message(content="no role"),
        pb.Message(role=USER, content="  "),
        pb.Message(role=pb.MessageRole.ValueType(7), content="x"),
    ):
        batch = [pb.Message(role=USER, content="fine"), message]
        await expect_error(
            stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=batch)), invalid
        )
    await expect_error(stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id)), invalid)
    await expect_error(
        stub.AppendMessages(
            api.AppendMessagesRequest(
                agent_id=agent.id, conversation_id="nope", messages=[pb.Message(role=USER, content="x")]
            )
        ),
        grpc.StatusCode.NOT_FOUND,
    )
    assert (await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id))).total_size == 0


async def test_messages_page_through_with_tokens(stub: Stub) -> None:
    agent = await new_agent(stub)
    batch = [pb.Message(role=USER, content=f"m{i}") for i in range(7)]
    await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=batch))
    contents: list[str] = []
    token = ""
    while True:
        page = await stub.ListMessages(
            api.ListMessagesRequest(agent_id=agent.id, page_size=3, page_token=token)
        )
        contents.extend(m.content for m in page.messages)
        token = page.next_page_token
        if not token:
            break
    assert contents == [f"m{i}" for i in range(7)]
