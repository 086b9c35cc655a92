"""Concurrent edits through a real MemoryService on each store backend: two writers who read the same
version and edit different lines both land (merged, one new version each); the same line is ABORTED
with the conflicting hunk in ErrorInfo and BadRequest, and nothing changes; budgets apply to the
merged value. Before base_etag, the second writer of different lines got ABORTED (ETAG_MISMATCH)."""

from __future__ import annotations

import asyncio
import json

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_serving.status import bad_request_from, error_info_from
from tests.memory.integration.conftest import Stub, expect_error, new_agent, run_tool

NOTES = "name: Ada\nrole: engineer\ncity: Paris\nlikes: tea\n"


def _update(agent_id: str, value: str, *, etag: str = "", base_etag: str = "") -> api.UpdateBlockRequest:
    return api.UpdateBlockRequest(
        ref=pb.BlockRef(agent_id=agent_id, label="human"),
        block=pb.Block(value=value),
        update_mask=FieldMask(paths=["value"]),
        etag=etag,
        base_etag=base_etag,
    )


async def _read(stub: Stub, agent_id: str) -> pb.Block:
    return await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent_id, label="human")))


async def test_two_writers_of_different_lines_both_land(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value=NOTES, limit=500))
    read = await _read(stub, agent.id)
    edits = [NOTES.replace("engineer", "architect"), NOTES.replace("tea", "coffee")]
    # Both writers read version 1; with etag (only if unchanged) the second one is refused...
    await stub.UpdateBlock(_update(agent.id, edits[0], etag=read.etag))
    await expect_error(
        stub.UpdateBlock(_update(agent.id, edits[1], etag=read.etag)),
        grpc.StatusCode.ABORTED,
        "ETAG_MISMATCH",
    )
    # ...with base_etag (made from version 1) it is merged.
    merged = await stub.UpdateBlock(_update(agent.id, edits[1], base_etag=read.etag))
    assert merged.value == "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"
    assert merged.version == 3
    history = await stub.ListBlockVersions(
        api.ListBlockVersionsRequest(block=pb.BlockRef(agent_id=agent.id, label="human"))
    )
    assert history.versions[0].source == "api:UpdateBlock(merged v1 onto v2)"


async def test_concurrent_based_writers_of_different_lines_all_land(stub: Stub) -> None:
    lines = [f"line {i}\n" for i in range(12)]
    agent = await new_agent(stub, pb.Block(label="human", value="".join(lines), limit=2000))
    read = await _read(stub, agent.id)
    edited = list(range(0, 12, 2))  # an unchanged line between any two edits

    async def edit(i: int) -> pb.Block:
        mine = [f"line {i} (edited)\n" if j == i else line for j, line in enumerate(lines)]
        return await stub.UpdateBlock(_update(agent.id, "".join(mine), base_etag=read.etag))

    await asyncio.gather(*(edit(i) for i in edited))
    final = await _read(stub, agent.id)
    expected = [f"line {j} (edited)\n" if j in edited else line for j, line in enumerate(lines)]
    assert final.value == "".join(expected)
    assert final.version == 1 + len(edited)


async def test_the_same_line_is_a_structured_conflict_and_nothing_changes(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value=NOTES, limit=500))
    read = await _read(stub, agent.id)
    theirs = await stub.UpdateBlock(_update(agent.id, NOTES.replace("Paris", "Lyon")))
    error = await expect_error(
        stub.UpdateBlock(_update(agent.id, NOTES.replace("Paris", "Nice"), base_etag=read.etag)),
        grpc.StatusCode.ABORTED,
        "MERGE_CONFLICT",
    )
    info = error_info_from(error.trailing_metadata())
    assert info is not None
    assert json.loads(info.metadata["hunks"]) == [
        {
            "field": "value",
            "base_start": 3,
            "base_end": 3,
            "base": "city: Paris\n",
            "current": "city: Lyon\n",
            "proposed": "city: Nice\n",
        }
    ]
    violations = bad_request_from(error.trailing_metadata())
    assert violations is not None
    assert [v.field for v in violations.field_violations] == ["block.value"]
    assert "'city: Lyon\\n' where this edit has 'city: Nice\\n'" in violations.field_violations[0].description
    after = await _read(stub, agent.id)
    assert (after.value, after.version) == (theirs.value, theirs.version)


async def test_the_budget_is_checked_on_the_merged_value(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="a\nb\nc\nd\n", limit=13))
    read = await _read(stub, agent.id)
    await stub.UpdateBlock(_update(agent.id, "a\nbbbb\nc\nd\n"))
    await expect_error(
        stub.UpdateBlock(_update(agent.id, "a\nb\nc\ndddd\n", base_etag=read.etag)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "CHAR_LIMIT_EXCEEDED",
    )
    assert (await _read(stub, agent.id)).value == "a\nbbbb\nc\nd\n"


async def test_validate_only_merges_without_writing(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value=NOTES, limit=500))
    read = await _read(stub, agent.id)
    theirs = await stub.UpdateBlock(_update(agent.id, NOTES.replace("engineer", "architect")))
    request = _update(agent.id, NOTES.replace("tea", "coffee"), base_etag=read.etag)
    request.validate_only = True
    preview = await stub.UpdateBlock(request)
    assert preview.value == "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"
    assert (await _read(stub, agent.id)) == theirs


async def test_an_unknown_base_or_both_conditions_are_invalid(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value=NOTES, limit=500))
    read = await _read(stub, agent.id)
    await expect_error(
        stub.UpdateBlock(_update(agent.id, "x", base_etag="not-an-etag")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_BASE_ETAG",
    )
    both = _update(agent.id, "x", etag=read.etag, base_etag=read.etag)
    await expect_error(stub.UpdateBlock(both), grpc.StatusCode.INVALID_ARGUMENT)
    assert (await _read(stub, agent.id)) == read


async def test_a_tool_call_based_on_an_older_version_merges_or_conflicts(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value=NOTES, limit=500))
    read = await _read(stub, agent.id)
    await stub.UpdateBlock(_update(agent.id, NOTES.replace("role: engineer", "role: architect")))
    arguments = json.dumps({"label": "human", "old_string": "likes: tea", "new_string": "likes: mate"})
    run = await run_tool(stub, agent.id, "memory_replace", arguments, base_etag=read.etag)
    assert run.ok, run.text
    assert run.block.value == "name: Ada\nrole: architect\ncity: Paris\nlikes: mate\n"
    clash = json.dumps({"label": "human", "old_string": "role: engineer", "new_string": "role: chef"})
    await expect_error(
        run_tool(stub, agent.id, "memory_replace", clash, base_etag=read.etag),
        grpc.StatusCode.ABORTED,
        "MERGE_CONFLICT",
    )
    assert (await _read(stub, agent.id)).value == run.block.value
