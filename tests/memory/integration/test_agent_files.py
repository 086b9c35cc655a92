"""ImportAgentFile and ExportAgentFile through a real MemoryService, on every store backend, with the
seven real Letta files: what the store holds is checked against each file itself."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.domain.agent_files.fields import iso_time
from tests.memory.domain.agent_files.hostile import BASE, VARIANTS, Variant
from tests.memory.domain.agent_files.shared_files import SHARED, encoded, file_bytes, raw_document, with_files
from tests.memory.integration.conftest import Stub, expect_error

ROLES = {pb.MESSAGE_ROLE_SYSTEM: "system", pb.MESSAGE_ROLE_USER: "user"}
ROLES |= {pb.MESSAGE_ROLE_ASSISTANT: "assistant", pb.MESSAGE_ROLE_TOOL: "tool"}


def as_tenant(tenant: str) -> tuple[tuple[str, str]]:
    return (("x-strata-tenant", tenant),)


async def import_file(
    stub: Stub, data: bytes, tenant: str = "default", **fields: Any
) -> api.ImportAgentFileResponse:
    request = api.ImportAgentFileRequest(agent_file=data, **fields)
    return await stub.ImportAgentFile(request, metadata=as_tenant(tenant))


async def everything(stub: Stub, tenant: str = "default") -> tuple[list[str], list[str]]:
    """Every agent id and block id the tenant holds."""
    agents = await stub.ListAgents(api.ListAgentsRequest(page_size=1000), metadata=as_tenant(tenant))
    blocks = await stub.ListBlocks(api.ListBlocksRequest(page_size=1000), metadata=as_tenant(tenant))
    return [a.id for a in agents.agents], [b.id for b in blocks.blocks]


def text_of(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
async def test_every_shared_file_is_stored_as_the_file_holds_it(stub: Stub, path: Path) -> None:
    document = raw_document(path)
    imported = await import_file(stub, file_bytes(path))
    ids = dict(imported.report.ids)
    blocks = {b["id"]: b for b in document["blocks"]}
    assert [a.name for a in imported.agents] == [a["name"] for a in document["agents"]]
    for agent, raw in zip(imported.agents, document["agents"], strict=True):
        assert ids[raw["id"]] == agent.id
        stored = await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id))
        assert (stored.system, stored.timezone) == (raw["system"], raw["timezone"] or "UTC")
        listed = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id, page_size=1000))
        assert [b.id for b in listed.blocks] == [ids[i] for i in raw["block_ids"]]  # sharing: one id
        for block, file_id in zip(listed.blocks, raw["block_ids"], strict=True):
            want = blocks[file_id]
            assert (block.label, block.value, block.limit) == (want["label"], want["value"], want["limit"])
            assert (block.read_only, block.description) == (want["read_only"], want["description"] or "")
        await _messages_match(stub, agent.id, raw["messages"])
    assert imported.report.messages_imported == sum(len(a["messages"]) for a in document["agents"])


async def _messages_match(stub: Stub, agent_id: str, raw: list[dict[str, Any]]) -> None:
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent_id, page_size=1000))
    assert [ROLES[m.role] for m in listed.messages] == [m["role"] for m in raw]
    assert [m.content for m in listed.messages] == [text_of(m["content"]) for m in raw]
    assert [iso_time(m.create_time.ToMicroseconds()) for m in listed.messages] == [
        m["created_at"] for m in raw
    ]
    assert [m.tool_call_id for m in listed.messages] == [m["tool_call_id"] or "" for m in raw]
    calls = [[(c.id, c.name, c.arguments) for c in m.tool_calls] for m in listed.messages]
    want = [
        [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"] or []]
        for m in raw
    ]
    assert calls == want


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
async def test_export_import_export_gives_the_same_file(stub: Stub, path: Path) -> None:
    first = await import_file(stub, file_bytes(path))
    exported = await stub.ExportAgentFile(
        api.ExportAgentFileRequest(agent_id=first.agents[-1].id, with_messages=True)
    )
    assert list(exported.agent_ids) == [a.id for a in first.agents]  # the whole group, in file order
    again = await import_file(stub, exported.agent_file)
    exported_again = await stub.ExportAgentFile(
        api.ExportAgentFileRequest(agent_id=again.agents[0].id, with_messages=True)
    )
    one, two = json.loads(exported.agent_file), json.loads(exported_again.agent_file)
    assert one.pop("created_at")  # the time of each export
    assert two.pop("created_at")
    assert one == two
    original = raw_document(path)

    def blocks(document: dict[str, Any]) -> list[tuple[str, str, int, bool]]:
        return sorted((b["label"], b["value"], b["limit"], b["read_only"]) for b in document["blocks"])

    assert blocks(one) == blocks(original)
    assert one["tools"] == original["tools"]


async def test_attached_files_become_the_agents_files_and_export_as_they_were(stub: Stub) -> None:
    document = with_files(raw_document(next(p for p in SHARED if p.name == "loop.af")))
    imported = await import_file(stub, encoded(document))
    listed = await stub.ListFiles(api.ListFilesRequest(agent_id=imported.agents[0].id))
    contents = {f["id"]: f["content"] for f in document["files"]}
    links = document["agents"][0]["files_agents"]
    assert sorted((f.directory, f.name, f.content, f.is_open) for f in listed.files) == sorted(
        ("handbook", link["file_name"], contents[link["file_id"]], link["is_open"]) for link in links
    )
    prompt = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=imported.agents[0].id))
    assert contents["file-0"] in prompt.text  # the open file is in the compiled prompt
    exported = json.loads(
        (await stub.ExportAgentFile(api.ExportAgentFileRequest(agent_id=imported.agents[0].id))).agent_file
    )
    assert (exported["files"], exported["sources"]) == (document["files"], document["sources"])
    assert exported["agents"][0]["files_agents"] == links


async def test_an_export_without_messages_leaves_them_out(stub: Stub) -> None:
    imported = await import_file(stub, next(p for p in SHARED if p.name == "loop.af").read_bytes())
    exported = await stub.ExportAgentFile(api.ExportAgentFileRequest(agent_id=imported.agents[0].id))
    agent = json.loads(exported.agent_file)["agents"][0]
    assert (agent["messages"], agent["in_context_message_ids"]) == ([], [])


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
async def test_a_broken_file_is_refused_and_creates_nothing(stub: Stub, variant: Variant) -> None:
    error = await expect_error(import_file(stub, variant.build()), grpc.StatusCode.INVALID_ARGUMENT)
    assert variant.names in (error.details() or "")
    assert await everything(stub) == ([], [])


async def test_a_file_over_the_size_limit_is_refused_and_creates_nothing(stub: Stub) -> None:
    document = raw_document(BASE)
    document["metadata"]["padding"] = "x" * (7 * 1024 * 1024)  # the limit: 7 MiB of the 8 MiB request
    data = encoded(document)
    error = await expect_error(import_file(stub, data), grpc.StatusCode.INVALID_ARGUMENT)
    assert (
        error.details() == f"agent_file: is {len(data)} bytes; at most {7 * 1024 * 1024} bytes are accepted"
    )
    assert await everything(stub) == ([], [])


async def test_the_same_request_id_twice_creates_one_set_of_agents(stub: Stub) -> None:
    request_id = str(uuid.uuid4())
    first = await import_file(stub, BASE.read_bytes(), request_id=request_id)
    again = await import_file(stub, BASE.read_bytes(), request_id=request_id)
    assert [a.id for a in again.agents] == [a.id for a in first.agents]
    assert sorted(b.id for b in again.blocks) == sorted(b.id for b in first.blocks)
    assert dict(again.report.ids) == dict(first.report.ids)
    agents, _ = await everything(stub)
    assert sorted(agents) == sorted(a.id for a in first.agents)
    other = next(p for p in SHARED if p.name == "loop.af").read_bytes()
    await expect_error(import_file(stub, other, request_id=request_id), grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_retry_after_an_agent_was_deleted_returns_the_others_and_creates_nothing(stub: Stub) -> None:
    request_id = str(uuid.uuid4())
    first = await import_file(stub, BASE.read_bytes(), request_id=request_id)
    await stub.DeleteAgent(api.DeleteAgentRequest(agent_id=first.agents[1].id))
    again = await import_file(stub, BASE.read_bytes(), request_id=request_id)
    assert [a.id for a in again.agents] == [first.agents[0].id]
    agents, _ = await everything(stub)
    assert agents == [first.agents[0].id]


async def test_an_import_lands_in_the_callers_tenant_only(stub: Stub) -> None:
    imported = await import_file(stub, BASE.read_bytes(), tenant="tenant-a")
    assert {a.tenant_id for a in imported.agents} == {"tenant-a"}
    assert await everything(stub, "tenant-b") == ([], [])
    agents, blocks = await everything(stub, "tenant-a")
    assert sorted(agents) == sorted(a.id for a in imported.agents)
    assert sorted(blocks) == sorted(b.id for b in imported.blocks)
    request = api.ExportAgentFileRequest(agent_id=imported.agents[0].id)
    await expect_error(
        stub.ExportAgentFile(request, metadata=as_tenant("tenant-b")), grpc.StatusCode.NOT_FOUND
    )


async def test_an_agent_made_in_strata_exports_and_imports(stub: Stub) -> None:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name="ada", system="You are Ada.\n{CORE_MEMORY}", timezone="Europe/Paris"),
            blocks=[pb.Block(label="human", value="Name: Bob", limit=500, read_only=True)],
        )
    )
    said = [
        pb.Message(role=pb.MESSAGE_ROLE_USER, content="Hello"),
        pb.Message(
            role=pb.MESSAGE_ROLE_ASSISTANT,
            tool_calls=[pb.ToolCall(id="call-1", name="send_message", arguments='{"message": "Hi"}')],
        ),
        pb.Message(role=pb.MESSAGE_ROLE_TOOL, content="OK", tool_call_id="call-1"),
    ]
    await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=said))
    exported = await stub.ExportAgentFile(api.ExportAgentFileRequest(agent_id=agent.id, with_messages=True))
    document = json.loads(exported.agent_file)
    imported = await import_file(stub, exported.agent_file)
    copy = imported.agents[0]
    assert (copy.name, copy.system, copy.timezone) == ("ada", agent.system, "Europe/Paris")
    block = imported.blocks[0]
    assert (block.label, block.value, block.limit, block.read_only) == ("human", "Name: Bob", 500, True)
    await _messages_match(stub, copy.id, document["agents"][0]["messages"])
