"""Rendering and the system prompt through a real server: golden files, policies, conversations, files."""

from __future__ import annotations

import json

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.domain.golden_diff import expected
from tests.memory.integration.conftest import Stub, expect_error, new_agent, run_tool

SEVERAL = [
    pb.Block(
        label="persona",
        value="I am Sam.\nI like clear answers.",
        limit=20_000,
        description="The agent's persona",
    ),
    pb.Block(label="human", value="Name: Bob", limit=20_000, description="About the user"),
    pb.Block(label="policies", value="Be kind.", read_only=True),
]
NUMBERED = [
    pb.Block(label="human", value="Name: Bob\nLikes tea", limit=5000, description="About the user"),
    pb.Block(label="rules", value="", limit=100, read_only=True),
]
GIT = [
    pb.Block(label="system/persona", value="I am Sam"),
    pb.Block(label="system/human", value="Bob", description="User info"),
    pb.Block(label="system/project/notes", value="n1"),
    pb.Block(label="reference/api", value="x"),
]


async def render(
    stub: Stub, agent_id: str, mode: pb.RenderMode.ValueType = pb.RENDER_MODE_UNSPECIFIED
) -> str:
    return (await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent_id, mode=mode))).text


async def prompt(stub: Stub, agent_id: str, conversation_id: str = "") -> pb.SystemPrompt:
    return await stub.GetSystemPrompt(
        api.GetSystemPromptRequest(agent_id=agent_id, conversation_id=conversation_id)
    )


async def test_renders_match_the_golden_files_in_every_mode(stub: Stub) -> None:
    several = await new_agent(stub, *SEVERAL)
    assert await render(stub, several.id) == expected("standard_several")
    numbered = await new_agent(stub, *NUMBERED, render_mode=pb.RENDER_MODE_LINE_NUMBERED)
    assert await render(stub, numbered.id) == expected("line_numbered_several")
    git = await new_agent(stub, *GIT)
    assert await render(stub, git.id, pb.RENDER_MODE_GIT) == expected("git_reference_example")


async def test_system_prompt_fills_core_memory_and_metadata(stub: Stub) -> None:
    agent = await new_agent(stub, *SEVERAL, system="You are Sam.\n{CORE_MEMORY}\nBe brief.")
    text = (await prompt(stub, agent.id)).text
    memory, metadata = expected("standard_several"), text.split("\n\n<memory_metadata>\n")[1]
    assert text.startswith("You are Sam.\n" + memory + "\n\n<memory_metadata>\n")
    assert text.endswith("</memory_metadata>\nBe brief.")
    assert f"- AGENT_ID: {agent.id}\n- CONVERSATION_ID: default\n" in metadata
    recall = "- 0 previous messages between you and the user are stored in recall memory"
    assert f"{recall} (use tools to access them)" in metadata
    assert "archival" not in metadata


async def test_explicit_policy_keeps_the_prompt_until_recompiled(stub: Stub) -> None:
    agent = await new_agent(stub, recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT)
    before = await prompt(stub, agent.id)
    assert not before.stale
    run = await run_tool(
        stub, agent.id, "core_memory_append", json.dumps({"label": "human", "content": "Likes tea"})
    )
    assert run.ok
    assert not run.prompt_recompiled
    assert (
        "next recompile"
        in (
            await run_tool(
                stub, agent.id, "memory", json.dumps({"command": "create", "path": "x", "description": "d"})
            )
        ).text
    )
    after_edit = await prompt(stub, agent.id)
    assert after_edit.text == before.text
    assert after_edit.stale
    dry = await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id, dry_run=True))
    assert not dry.saved
    assert "+Likes tea" in dry.diff
    assert (await prompt(stub, agent.id)).text == before.text
    done = await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    assert done.saved
    now = await prompt(stub, agent.id)
    assert "Likes tea" in now.text
    assert not now.stale


async def test_on_edit_policy_recompiles_after_each_edit(stub: Stub) -> None:
    agent = await new_agent(stub)
    await run_tool(
        stub, agent.id, "core_memory_append", json.dumps({"label": "human", "content": "Likes tea"})
    )
    current = await prompt(stub, agent.id)
    assert "Likes tea" in current.text
    assert not current.stale


async def test_conversations_each_have_their_own_prompt(stub: Stub) -> None:
    agent = await new_agent(stub, recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT)
    conversation = await stub.CreateConversation(
        api.CreateConversationRequest(agent_id=agent.id, conversation_id="trip")
    )
    assert conversation.id == "trip"
    trip = await prompt(stub, agent.id, "trip")
    assert "- CONVERSATION_ID: trip" in trip.text
    await expect_error(
        stub.CreateConversation(api.CreateConversationRequest(agent_id=agent.id, conversation_id="trip")),
        grpc.StatusCode.ALREADY_EXISTS,
    )
    await expect_error(prompt(stub, agent.id, "nope"), grpc.StatusCode.NOT_FOUND, "CONVERSATION_NOT_FOUND")
    listed = await stub.ListConversations(api.ListConversationsRequest(agent_id=agent.id))
    assert sorted(c.id for c in listed.conversations) == ["default", "trip"]


async def test_files_render_under_directories_open_and_closed(stub: Stub) -> None:
    agent = await new_agent(
        stub, pb.Block(label="human", value="Name: Bob\nLikes tea", limit=5000, description="About the user")
    )
    file = await stub.AttachFile(
        api.AttachFileRequest(
            agent_id=agent.id,
            file=pb.File(directory="notes", name="notes/a.txt", content="a", limit=100, is_open=True),
        )
    )
    assert await render(stub, agent.id) == expected("compile_standard_with_directory")
    closed = await stub.UpdateFile(
        api.UpdateFileRequest(
            file_id=file.id, file=pb.File(is_open=False), update_mask=FieldMask(paths=["is_open"])
        )
    )
    assert not closed.is_open
    text = await render(stub, agent.id)
    assert '<file status="closed" name="notes/a.txt">' in text
    assert "<value>\na\n</value>" not in text
    await stub.DetachFile(api.DetachFileRequest(file_id=file.id))
    assert "<directories>" not in await render(stub, agent.id)


async def test_recompiling_a_missing_agent_is_not_found(stub: Stub) -> None:
    await expect_error(
        stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id="agent-x")),
        grpc.StatusCode.NOT_FOUND,
    )
