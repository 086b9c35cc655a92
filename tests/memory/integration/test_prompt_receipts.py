"""Prompt receipts through a real MemoryService on each store backend: a compiled prompt names exactly
the block versions and counts it used; an edit after compiling leaves the stored prompt's receipt as it
was and sets stale; a recompile gets a new receipt while the old one stays readable; messages record
the receipt they were generated under, and an unknown or foreign receipt stores nothing."""

from __future__ import annotations

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, expect_error, new_agent


async def _prompt(stub: Stub, agent_id: str) -> pb.SystemPrompt:
    return await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))


async def _edit(stub: Stub, agent_id: str, label: str, value: str) -> pb.Block:
    return await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent_id, label=label),
            block=pb.Block(value=value),
            update_mask=FieldMask(paths=["value"]),
        )
    )


def _used(receipt: pb.PromptReceipt) -> list[tuple[str, str, int]]:
    return [(b.block_id, b.label, b.version) for b in receipt.blocks]


async def test_a_receipt_names_the_versions_used_and_survives_an_edit_after_compiling(stub: Stub) -> None:
    agent = await new_agent(
        stub,
        pb.Block(label="persona", value="I am Sam.", limit=100),
        pb.Block(label="human", value="Name: Ada", limit=100),
        recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT,
    )
    persona = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="persona")))
    human = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    compiled = await _prompt(stub, agent.id)
    receipt = compiled.receipt
    assert receipt.id.startswith("receipt-")
    assert receipt.agent_id == agent.id
    assert _used(receipt) == [(persona.id, "persona", 1), (human.id, "human", 1)]
    assert (receipt.message_count, receipt.passage_count, receipt.file_count) == (0, 0, 0)
    assert receipt.render_mode == pb.RENDER_MODE_STANDARD
    assert not compiled.stale

    await _edit(stub, agent.id, "human", "Name: Ada Lovelace")
    after_edit = await _prompt(stub, agent.id)
    assert after_edit.stale
    assert after_edit.receipt == receipt  # the stored text's receipt, not memory's
    assert "Name: Ada Lovelace" not in after_edit.text

    recompiled = await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    new = recompiled.prompt.receipt
    assert new.id != receipt.id
    assert _used(new) == [(persona.id, "persona", 1), (human.id, "human", 2)]
    old = await stub.GetPromptReceipt(api.GetPromptReceiptRequest(receipt_id=receipt.id))
    assert old == receipt  # still readable after the snapshot it described was rewritten


async def test_the_same_memory_compiles_to_the_same_receipt_id(stub: Stub) -> None:
    agent = await new_agent(stub, recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT)
    first = (await _prompt(stub, agent.id)).receipt
    again = await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    assert again.prompt.receipt.id == first.id
    assert again.prompt.receipt == first  # recorded once: the first compile's time is kept


async def test_messages_record_the_receipt_they_were_generated_under(stub: Stub) -> None:
    agent = await new_agent(stub)
    receipt = (await _prompt(stub, agent.id)).receipt
    appended = await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_ASSISTANT, content="Hi Ada!")],
            prompt_receipt_id=receipt.id,
        )
    )
    assert [m.prompt_receipt_id for m in appended.messages] == [receipt.id]
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id))
    assert [m.prompt_receipt_id for m in listed.messages] == [receipt.id]
    # One lookup from the answer to the memory that produced it.
    found = await stub.GetPromptReceipt(
        api.GetPromptReceiptRequest(receipt_id=listed.messages[0].prompt_receipt_id)
    )
    assert found == receipt


async def test_an_unknown_or_foreign_receipt_stores_nothing(stub: Stub) -> None:
    agent, other = await new_agent(stub), await new_agent(stub)
    foreign = (await _prompt(stub, other.id)).receipt.id
    for receipt_id in ("receipt-0000", foreign):
        await expect_error(
            stub.AppendMessages(
                api.AppendMessagesRequest(
                    agent_id=agent.id,
                    messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="hello")],
                    prompt_receipt_id=receipt_id,
                )
            ),
            grpc.StatusCode.NOT_FOUND,
            "RECEIPT_NOT_FOUND",
        )
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id))
    assert list(listed.messages) == []
    await expect_error(
        stub.GetPromptReceipt(api.GetPromptReceiptRequest(receipt_id="receipt-0000")),
        grpc.StatusCode.NOT_FOUND,
        "RECEIPT_NOT_FOUND",
    )


async def test_receipts_go_with_their_agent(stub: Stub) -> None:
    agent = await new_agent(stub)
    receipt = (await _prompt(stub, agent.id)).receipt
    await stub.DeleteAgent(api.DeleteAgentRequest(agent_id=agent.id))
    await expect_error(
        stub.GetPromptReceipt(api.GetPromptReceiptRequest(receipt_id=receipt.id)),
        grpc.StatusCode.NOT_FOUND,
        "RECEIPT_NOT_FOUND",
    )
