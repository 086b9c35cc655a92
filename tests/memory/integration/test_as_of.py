"""Memory as of a past moment through a real MemoryService on each store backend: over a history of
edits, attaches, detaches and renames, RenderMemory and ListBlocks as of each captured moment equal
what they returned then; a receipt id reads what that prompt used; DiffMemory shows the whole memory's
change between two moments."""

from __future__ import annotations

import asyncio
import time

import grpc
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.timestamp_pb2 import Timestamp

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, expect_error, new_agent


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.FromMicroseconds(time.time_ns() // 1000)
    return stamp


async def _capture(stub: Stub, agent_id: str) -> tuple[Timestamp, str, list[tuple[str, str, int]]]:
    """A moment between writes, and the render and blocks at it."""
    await asyncio.sleep(0.002)
    rendered = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent_id))
    listed = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent_id))
    moment = _now()
    await asyncio.sleep(0.002)
    return moment, rendered.text, [(b.label, b.value, b.version) for b in listed.blocks]


async def _edit(stub: Stub, block_id: str, *, value: str = "", label: str = "") -> None:
    block, paths = (pb.Block(value=value), ["value"]) if value else (pb.Block(label=label), ["label"])
    await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(block_id=block_id), block=block, update_mask=FieldMask(paths=paths)
        )
    )


async def test_as_of_reads_equal_what_was_read_at_each_moment(stub: Stub) -> None:
    agent = await new_agent(
        stub, pb.Block(label="persona", value="I am Sam."), pb.Block(label="human", value="Ada")
    )
    blocks = {b.label: b for b in (await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))).blocks}
    shared = await stub.CreateBlock(api.CreateBlockRequest(block=pb.Block(label="team", value="core team")))
    captured = [await _capture(stub, agent.id)]
    await _edit(stub, blocks["human"].id, value="Ada Lovelace")
    captured.append(await _capture(stub, agent.id))
    await stub.AttachBlock(api.AttachBlockRequest(agent_id=agent.id, block_id=shared.id))
    captured.append(await _capture(stub, agent.id))
    await _edit(stub, shared.id, value="core team\nplus Grace")
    await _edit(stub, blocks["persona"].id, label="self")
    captured.append(await _capture(stub, agent.id))
    await stub.DetachBlock(api.DetachBlockRequest(agent_id=agent.id, block_id=blocks["human"].id))
    captured.append(await _capture(stub, agent.id))
    await stub.AttachBlock(api.AttachBlockRequest(agent_id=agent.id, block_id=blocks["human"].id))
    await _edit(stub, blocks["human"].id, value="Ada, Countess of Lovelace")
    captured.append(await _capture(stub, agent.id))

    assert len({text for _, text, _ in captured}) == len(captured)  # every step changed the render
    for moment, text, listed in captured:
        rendered = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id, as_of=moment))
        assert rendered.text == text
        past = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id, as_of=moment))
        assert [(b.label, b.value, b.version) for b in past.blocks] == listed


async def test_a_receipt_reads_the_memory_its_prompt_used(stub: Stub) -> None:
    agent = await new_agent(
        stub, pb.Block(label="human", value="Ada"), recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT
    )
    prompt = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    then = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id))
    await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent.id, label="human"),
            block=pb.Block(value="Grace"),
            update_mask=FieldMask(paths=["value"]),
        )
    )
    past = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id, receipt_id=prompt.receipt.id))
    assert past.text == then.text
    assert "Ada" in past.text
    assert "Ada" in prompt.text


async def test_diff_memory_between_two_moments(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Ada"))
    before = _now()
    await asyncio.sleep(0.002)
    block = await stub.CreateBlock(
        api.CreateBlockRequest(block=pb.Block(label="todo", value="write the notes"), agent_id=agent.id)
    )
    await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent.id, label="human"),
            block=pb.Block(value="Ada Lovelace"),
            update_mask=FieldMask(paths=["value"]),
        )
    )
    diff = (await stub.DiffMemory(api.DiffMemoryRequest(agent_id=agent.id, from_time=before))).diff
    assert "-Ada\n" in diff
    assert "+Ada Lovelace\n" in diff
    assert "+write the notes\n" in diff
    assert block.id  # the attach shows as the new block's lines


async def test_bad_moments_are_refused(stub: Stub) -> None:
    agent = await new_agent(stub)
    both = api.RenderMemoryRequest(agent_id=agent.id, as_of=_now(), receipt_id="receipt-x")
    await expect_error(stub.RenderMemory(both), grpc.StatusCode.INVALID_ARGUMENT)
    await expect_error(
        stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id, receipt_id="receipt-0000")),
        grpc.StatusCode.NOT_FOUND,
        "RECEIPT_NOT_FOUND",
    )
    await expect_error(
        stub.DiffMemory(api.DiffMemoryRequest(agent_id=agent.id)), grpc.StatusCode.INVALID_ARGUMENT
    )
    await expect_error(stub.ListBlocks(api.ListBlocksRequest(as_of=_now())), grpc.StatusCode.INVALID_ARGUMENT)
