"""Agents and blocks through a real MemoryService: defaults, validation, budgets, etags, sharing, tenants."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_serving.status import bad_request_from, error_info_from
from tests.memory.integration.conftest import Stub, block_value, expect_error, new_agent

NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
ABORTED = grpc.StatusCode.ABORTED


def ref(agent_id: str, label: str) -> pb.BlockRef:
    return pb.BlockRef(agent_id=agent_id, label=label)


async def update(stub: Stub, agent_id: str, label: str, etag: str = "", **fields: Any) -> pb.Block:
    request = api.UpdateBlockRequest(
        ref=ref(agent_id, label),
        block=pb.Block(**fields),
        update_mask=FieldMask(paths=list(fields)),
        etag=etag,
    )
    return await stub.UpdateBlock(request)


async def test_new_agent_gets_persona_and_human_blocks(stub: Stub) -> None:
    agent = await new_agent(stub)
    assert list(agent.block_labels) == ["persona", "human"]
    listed = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert [(b.label, b.limit, b.value) for b in listed.blocks] == [
        ("persona", 20000, ""),
        ("human", 20000, ""),
    ]
    assert agent.render_mode == pb.RENDER_MODE_STANDARD
    assert agent.recompile_policy == pb.RECOMPILE_POLICY_ON_EDIT


async def test_agent_with_own_blocks_keeps_their_order_and_defaults_limit(stub: Stub) -> None:
    agent = await new_agent(
        stub, pb.Block(label="system/persona", value="I am Sam"), pb.Block(label="notes", limit=50)
    )
    assert list(agent.block_labels) == ["system/persona", "notes"]
    block = await stub.GetBlock(api.GetBlockRequest(block=ref(agent.id, "system/persona")))
    assert (block.limit, block.chars_current, block.version) == (100000, 8, 1)
    assert block.etag
    assert block.etag != agent.etag


async def test_unknown_agent_and_block_are_not_found(stub: Stub) -> None:
    await expect_error(
        stub.GetAgent(api.GetAgentRequest(agent_id="agent-nope")), NOT_FOUND, "AGENT_NOT_FOUND"
    )
    agent = await new_agent(stub)
    error = await expect_error(stub.GetBlock(api.GetBlockRequest(block=ref(agent.id, "nope"))), NOT_FOUND)
    assert "persona, human" in (error.details() or "")


async def test_tenants_do_not_see_each_other(stub: Stub) -> None:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="a")), metadata=[("x-strata-tenant", "acme")]
    )
    assert agent.tenant_id == "acme"
    await expect_error(stub.GetAgent(api.GetAgentRequest(agent_id=agent.id)), NOT_FOUND)
    other = await stub.GetAgent(
        api.GetAgentRequest(agent_id=agent.id), metadata=[("x-strata-tenant", "acme")]
    )
    assert other.id == agent.id
    await expect_error(
        stub.GetAgent(api.GetAgentRequest(agent_id=agent.id), metadata=[("x-strata-tenant", "bad tenant!")]),
        INVALID,
    )


async def test_bad_block_input_is_refused_with_the_field_named(stub: Stub) -> None:
    agent = await new_agent(stub)
    cases = [
        (pb.Block(label=""), "label"),
        (pb.Block(label="a b"), "label"),
        (pb.Block(label="/lead"), "label"),
        (pb.Block(label="x", limit=0), "block.limit"),
        (pb.Block(label="x", limit=-5), "block.limit"),
        (pb.Block(label="x", value="too long", limit=3), "block.value"),
    ]
    for block, field in cases:
        error = await expect_error(
            stub.CreateBlock(api.CreateBlockRequest(block=block, agent_id=agent.id)), INVALID
        )
        violations = bad_request_from(error.trailing_metadata())
        assert violations is not None
        assert violations.field_violations[0].field == field, block
    listed = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert [b.label for b in listed.blocks] == ["persona", "human"]


async def test_budget_overflow_is_failed_precondition_with_lengths(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="12345", limit=10))
    error = await expect_error(
        update(stub, agent.id, "human", value="x" * 11), PRECONDITION, "CHAR_LIMIT_EXCEEDED"
    )
    info = error_info_from(error.trailing_metadata())
    assert info is not None
    assert dict(info.metadata) == {"label": "human", "limit": "10", "current": "5", "requested": "11"}
    await update(stub, agent.id, "human", value="x" * 10)
    await expect_error(update(stub, agent.id, "human", limit=9), PRECONDITION, "CHAR_LIMIT_EXCEEDED")
    assert await block_value(stub, agent.id, "human") == "x" * 10


async def test_update_mask_must_name_known_fields(stub: Stub) -> None:
    agent = await new_agent(stub)
    request = api.UpdateBlockRequest(
        ref=ref(agent.id, "human"), block=pb.Block(value="v"), update_mask=FieldMask(paths=["colour"])
    )
    await expect_error(stub.UpdateBlock(request), INVALID)
    request = api.UpdateBlockRequest(ref=ref(agent.id, "human"), block=pb.Block(value="v"))
    await expect_error(stub.UpdateBlock(request), INVALID)


async def test_stale_etag_is_aborted_and_changes_nothing(stub: Stub) -> None:
    agent = await new_agent(stub)
    first = await update(stub, agent.id, "human", value="one")
    await update(stub, agent.id, "human", etag=first.etag, value="two")
    await expect_error(
        update(stub, agent.id, "human", etag=first.etag, value="three"), ABORTED, "ETAG_MISMATCH"
    )
    assert await block_value(stub, agent.id, "human") == "two"


async def test_shared_block_edit_is_seen_by_every_holder(stub: Stub) -> None:
    one, two = await new_agent(stub), await new_agent(stub)
    shared = await stub.CreateBlock(
        api.CreateBlockRequest(block=pb.Block(label="team", value="v1"), agent_id=one.id)
    )
    attached = await stub.AttachBlock(api.AttachBlockRequest(agent_id=two.id, block_id=shared.id))
    again = await stub.AttachBlock(api.AttachBlockRequest(agent_id=two.id, block_id=shared.id))
    assert list(attached.block_labels) == list(again.block_labels) == ["persona", "human", "team"]
    await update(stub, one.id, "team", value="v2")
    assert await block_value(stub, two.id, "team") == "v2"
    await stub.DetachBlock(api.DetachBlockRequest(agent_id=two.id, block_id=shared.id))
    assert await block_value(stub, one.id, "team") == "v2"
    await expect_error(stub.GetBlock(api.GetBlockRequest(block=ref(two.id, "team"))), NOT_FOUND)


async def test_attaching_a_block_whose_label_is_taken_is_refused(stub: Stub) -> None:
    one, two = await new_agent(stub), await new_agent(stub)
    other_human = await stub.GetBlock(api.GetBlockRequest(block=ref(one.id, "human")))
    await expect_error(
        stub.AttachBlock(api.AttachBlockRequest(agent_id=two.id, block_id=other_human.id)),
        grpc.StatusCode.ALREADY_EXISTS,
        "BLOCK_EXISTS",
    )


async def test_history_lists_diffs_and_restores(stub: Stub) -> None:
    agent = await new_agent(stub)
    for value in ("alpha", "beta", "gamma"):
        await update(stub, agent.id, "human", value=value)
    versions = await stub.ListBlockVersions(api.ListBlockVersionsRequest(block=ref(agent.id, "human")))
    assert [(v.version, v.value) for v in versions.versions] == [
        (4, "gamma"),
        (3, "beta"),
        (2, "alpha"),
        (1, ""),
    ]
    assert versions.versions[0].source == "api:UpdateBlock"
    diff = await stub.DiffBlockVersions(
        api.DiffBlockVersionsRequest(block=ref(agent.id, "human"), from_version=2)
    )
    assert "-alpha" in diff.diff
    assert "+gamma" in diff.diff
    restored = await stub.RestoreBlockVersion(
        api.RestoreBlockVersionRequest(block=ref(agent.id, "human"), version=2)
    )
    assert (restored.value, restored.version) == ("alpha", 5)
    redo = await stub.RestoreBlockVersion(
        api.RestoreBlockVersionRequest(block=ref(agent.id, "human"), version=4)
    )
    assert redo.value == "gamma"
    await expect_error(
        stub.RestoreBlockVersion(api.RestoreBlockVersionRequest(block=ref(agent.id, "human"), version=99)),
        INVALID,
    )


async def test_pagination_walks_every_agent_once(stub: Stub) -> None:
    created = {(await new_agent(stub)).id for _ in range(5)}
    seen: list[str] = []
    token = ""
    while True:
        page = await stub.ListAgents(api.ListAgentsRequest(page_size=2, page_token=token))
        seen.extend(a.id for a in page.agents)
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(created)
    await expect_error(stub.ListAgents(api.ListAgentsRequest(page_size=-1)), INVALID)
    await expect_error(stub.ListAgents(api.ListAgentsRequest(page_token="garbage")), INVALID)


async def test_update_agent_settings_with_etag(stub: Stub) -> None:
    agent = await new_agent(stub)
    changed = await stub.UpdateAgent(
        api.UpdateAgentRequest(
            agent=pb.Agent(id=agent.id, timezone="Europe/Paris"),
            update_mask=FieldMask(paths=["timezone"]),
            etag=agent.etag,
        )
    )
    assert changed.timezone == "Europe/Paris"
    stale = api.UpdateAgentRequest(
        agent=pb.Agent(id=agent.id, name="x"), update_mask=FieldMask(paths=["name"]), etag=agent.etag
    )
    await expect_error(stub.UpdateAgent(stale), ABORTED)
    bad_zone = api.UpdateAgentRequest(
        agent=pb.Agent(id=agent.id, timezone="Mars/Olympus"), update_mask=FieldMask(paths=["timezone"])
    )
    await expect_error(stub.UpdateAgent(bad_zone), INVALID)


async def test_delete_agent_removes_orphaned_blocks_but_keeps_shared_ones(stub: Stub) -> None:
    one, two = await new_agent(stub), await new_agent(stub)
    shared = await stub.CreateBlock(api.CreateBlockRequest(block=pb.Block(label="team"), agent_id=one.id))
    await stub.AttachBlock(api.AttachBlockRequest(agent_id=two.id, block_id=shared.id))
    human = await stub.GetBlock(api.GetBlockRequest(block=ref(one.id, "human")))
    await stub.DeleteAgent(api.DeleteAgentRequest(agent_id=one.id))
    await expect_error(stub.GetAgent(api.GetAgentRequest(agent_id=one.id)), NOT_FOUND)
    await expect_error(stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=human.id))), NOT_FOUND)
    assert (await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=shared.id)))).label == "team"


async def test_detach_with_a_stale_etag_is_aborted_and_keeps_the_block(stub: Stub) -> None:
    agent = await new_agent(stub)
    human = await stub.GetBlock(api.GetBlockRequest(block=ref(agent.id, "human")))
    await update(stub, agent.id, "human", value="changed meanwhile")
    stale = api.DetachBlockRequest(agent_id=agent.id, block_id=human.id, etag=human.etag)
    await expect_error(stub.DetachBlock(stale), ABORTED, "ETAG_MISMATCH")
    assert await block_value(stub, agent.id, "human") == "changed meanwhile"


async def test_labels_with_dot_segments_are_refused(stub: Stub) -> None:
    agent = await new_agent(stub)
    for label in ("../escape", "a/./b", "notes/.."):
        request = api.CreateBlockRequest(block=pb.Block(label=label), agent_id=agent.id)
        await expect_error(stub.CreateBlock(request), INVALID, "INVALID_LABEL")
