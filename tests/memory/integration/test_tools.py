"""Memory tools through ExecuteTool on a real server: results as the LLM sees them, refusals, concurrency."""

from __future__ import annotations

import asyncio
import json

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, block_value, expect_error, new_agent, run_tool


def args(**values: object) -> str:
    return json.dumps(values)


async def test_list_tools_serves_a_function_schema_for_every_tool(stub: Stub) -> None:
    tools = (await stub.ListTools(api.ListToolsRequest())).tools
    names = {t.name for t in tools}
    assert {"core_memory_append", "memory_replace", "memory_insert", "memory_rethink", "memory"} <= names
    assert {"archival_memory_insert", "archival_memory_search", "conversation_search"} <= names
    for tool in tools:
        schema = json.loads(tool.json_schema)
        assert schema["type"] == "function"
        assert schema["function"]["name"] == tool.name
        assert schema["function"]["parameters"]["type"] == "object"
    assert all(t.needs_retrieval == t.name.startswith(("archival", "conversation")) for t in tools)


async def test_append_returns_the_new_value_in_a_letta_envelope(stub: Stub) -> None:
    agent = await new_agent(stub)
    run = await run_tool(stub, agent.id, "core_memory_append", args(label="human", content="Name: Bob"))
    assert run.ok
    assert run.text == "Name: Bob"
    envelope = json.loads(run.envelope)
    assert envelope["status"] == "OK"
    assert envelope["message"] == "Name: Bob"
    assert envelope["time"].endswith("UTC+0000")
    assert (run.block.label, run.block.value, run.block.version) == ("human", "Name: Bob", 2)
    assert run.prompt_recompiled


async def test_replace_insert_rethink_edit_the_stored_block(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob\nLikes tea"))
    await run_tool(
        stub, agent.id, "memory_replace", args(label="human", old_string="tea", new_string="coffee")
    )
    await run_tool(
        stub, agent.id, "memory_insert", args(label="human", new_string="Lives in Oslo", insert_line=1)
    )
    assert await block_value(stub, agent.id, "human") == "Name: Bob\nLives in Oslo\nLikes coffee"
    await run_tool(
        stub, agent.id, "core_memory_replace", args(label="human", old_content="Oslo", new_content="Bergen")
    )
    assert "Bergen" in await block_value(stub, agent.id, "human")
    run = await run_tool(stub, agent.id, "memory_rethink", args(label="plans", new_memory="Trip in May"))
    assert run.ok
    assert await block_value(stub, agent.id, "plans") == "Trip in May"


async def test_refused_edits_are_error_results_that_change_nothing(stub: Stub) -> None:
    agent = await new_agent(
        stub,
        pb.Block(label="human", value="a\na", limit=10),
        pb.Block(label="rules", value="r", read_only=True),
    )
    cases = [
        ("memory_replace", args(label="human", old_string="zzz", new_string="y"), "did not appear verbatim"),
        ("memory_replace", args(label="human", old_string="a", new_string="b"), "Multiple occurrences"),
        ("memory_replace", args(label="human", old_string="1→ a", new_string="b"), "line number prefix"),
        ("core_memory_append", args(label="rules", content="x"), "read-only"),
        ("core_memory_append", args(label="human", content="x" * 20), "limit of 10"),
        ("memory_insert", args(label="human", new_string="x", insert_line=7), "[0, 2]"),
        ("core_memory_append", args(label="ghost", content="x"), "ghost"),
        ("core_memory_append", "{not json", "JSON"),
        ("core_memory_append", args(label="human"), "content"),
        ("memory_insert", args(label="human", new_string="x", insert_line="two"), "insert_line"),
        ("no_such_tool", args(), "no_such_tool"),
        ("conversation_search", args(query="x"), "unavailable"),
    ]
    for name, arguments, fragment in cases:
        run = await run_tool(stub, agent.id, name, arguments)
        assert not run.ok, name
        assert fragment in run.text, (name, run.text)
        assert run.reason, name
        assert json.loads(run.envelope)["status"] == "Failed"
    assert await block_value(stub, agent.id, "human") == "a\na"
    versions = await stub.ListBlockVersions(
        api.ListBlockVersionsRequest(block=pb.BlockRef(agent_id=agent.id, label="human"))
    )
    assert len(versions.versions) == 1


async def test_budget_refusal_carries_its_reason(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="", limit=3))
    run = await run_tool(stub, agent.id, "core_memory_append", args(label="human", content="abcd"))
    assert (run.ok, run.reason) == (False, "CHAR_LIMIT_EXCEEDED")


async def test_omni_memory_tool_creates_edits_renames_and_deletes_by_path(stub: Stub) -> None:
    agent = await new_agent(stub)
    created = await run_tool(
        stub,
        agent.id,
        "memory",
        args(command="create", path="/memories/project/notes", description="Notes", file_text="n1"),
    )
    assert created.ok, created.text
    assert await block_value(stub, agent.id, "project/notes") == "n1"
    await run_tool(
        stub,
        agent.id,
        "memory",
        args(command="str_replace", path="/memories/project/notes", old_string="n1", new_string="n2"),
    )
    await run_tool(
        stub, agent.id, "memory", args(command="insert", path="/memories/project/notes", insert_text="n3")
    )
    assert await block_value(stub, agent.id, "project/notes") == "n2\nn3"
    renamed = await run_tool(
        stub,
        agent.id,
        "memory",
        args(command="rename", old_path="/memories/project/notes", new_path="/memories/project/log"),
    )
    assert renamed.ok, renamed.text
    deleted = await run_tool(stub, agent.id, "memory", args(command="delete", path="/memories/project/log"))
    assert deleted.ok, deleted.text
    agent_now = await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id))
    assert list(agent_now.block_labels) == ["persona", "human"]
    again = await run_tool(stub, agent.id, "memory", args(command="delete", path="/memories/project/log"))
    assert not again.ok


async def test_fifty_concurrent_appends_keep_every_line(stub: Stub) -> None:
    agent = await new_agent(stub)
    runs = await asyncio.gather(
        *(
            run_tool(stub, agent.id, "core_memory_append", args(label="human", content=f"line {i}"))
            for i in range(50)
        )
    )
    assert all(run.ok for run in runs)
    lines = (await block_value(stub, agent.id, "human")).split("\n")
    assert sorted(lines) == sorted(f"line {i}" for i in range(50))
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert block.version == 51


async def test_tool_edit_with_a_stale_etag_is_aborted(stub: Stub) -> None:
    agent = await new_agent(stub)
    read = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    await run_tool(stub, agent.id, "core_memory_append", args(label="human", content="first"), etag=read.etag)
    await expect_error(
        run_tool(stub, agent.id, "core_memory_append", args(label="human", content="second"), etag=read.etag),
        grpc.StatusCode.ABORTED,
        "ETAG_MISMATCH",
    )
    assert await block_value(stub, agent.id, "human") == "first"


async def test_tool_on_unknown_agent_is_not_found(stub: Stub) -> None:
    await expect_error(
        run_tool(stub, "agent-missing", "core_memory_append", args(label="human", content="x")),
        grpc.StatusCode.NOT_FOUND,
    )


async def test_snippet_style_returns_less_than_the_whole_block(stub: Stub) -> None:
    long_value = "\n".join(f"fact {i}" for i in range(200))
    agent = await new_agent(
        stub, pb.Block(label="human", value=long_value), tool_result_style=pb.TOOL_RESULT_STYLE_SNIPPET
    )
    run = await run_tool(
        stub, agent.id, "memory_replace", args(label="human", old_string="fact 20", new_string="fact twenty")
    )
    assert run.ok
    assert "fact twenty" in run.text
    assert "fact 1\n" not in run.text
    assert len(run.text) < len(long_value) / 4
