"""The counts ``<memory_metadata>`` shows stay exact through every change of what they count, through a real
MemoryService on each backend: appends (a refused one and a retried one count nothing), passages added to
and deleted from an agent's archives (and their tags), archives attached, detached and deleted, and
appends and passages racing on two servers over one store (two replicas). The store keeps the counts
beside the rows instead of counting the rows at each compile (tests/memory/store/test_memory_counts.py
pins that).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub, expect_error, new_agent, run_tool

_RECALL = re.compile(r"- (\d+) previous messages between you and the user")
_ARCHIVAL = re.compile(r"- (\d+) total memories you created are stored in archival memory")
_TAGS = re.compile(r"- Available archival memory tags: (.*)")


async def shown(stub: Stub, agent_id: str) -> tuple[int, int, str]:
    """The messages, passages and tags the agent's prompt reports after a tool edit recompiled it."""
    run = await run_tool(stub, agent_id, "core_memory_append", json.dumps({"label": "human", "content": "+"}))
    assert run.ok, run.text
    text = (await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))).text
    recall, archival, tags = _RECALL.search(text), _ARCHIVAL.search(text), _TAGS.search(text)
    assert recall is not None, text
    return int(recall.group(1)), int(archival.group(1)) if archival else 0, tags.group(1) if tags else ""


async def stored(stub: Stub, agent_id: str) -> tuple[int, int]:
    """The agent's messages and passages as the listings count them."""
    messages = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent_id, page_size=1))
    passages = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent_id, page_size=1))
    return messages.total_size, passages.total_size


async def append(
    stub: Stub, agent_id: str, count: int, *, conversation_id: str = "", request_id: str = ""
) -> None:
    messages = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"hello {i}") for i in range(count)]
    request = api.AppendMessagesRequest(
        agent_id=agent_id, conversation_id=conversation_id, messages=messages, request_id=request_id
    )
    await stub.AppendMessages(request)


async def add_passages(
    stub: Stub, count: int, tag: str, *, agent_id: str = "", archive_id: str = ""
) -> list[pb.Passage]:
    """``count`` passages tagged ``tag`` and each with a tag of its own (``tag`` + its index)."""
    passages = [pb.Passage(text=f"fact {i}", tags=[tag, f"{tag}{i}"]) for i in range(count)]
    request = api.CreatePassagesRequest(agent_id=agent_id, archive_id=archive_id, passages=passages)
    return list((await stub.CreatePassages(request)).passages)


async def test_the_counts_follow_every_change_of_messages_and_passages(stub: Stub) -> None:
    sam = (await new_agent(stub, pb.Block(label="human", value="Name: Bob"))).id
    ann = (await new_agent(stub, pb.Block(label="human", value="Name: Ann"))).id

    async def both() -> tuple[tuple[int, int, str], tuple[int, int, str]]:
        sam_shows, ann_shows = await shown(stub, sam), await shown(stub, ann)
        assert (sam_shows[:2], ann_shows[:2]) == (await stored(stub, sam), await stored(stub, ann))
        return sam_shows, ann_shows

    await append(stub, sam, 3)
    once = str(uuid.uuid4())
    await append(stub, sam, 2, request_id=once)
    await append(stub, sam, 2, request_id=once)  # a retry stores nothing
    refused = append(stub, sam, 4, conversation_id="no-such-conversation")
    await expect_error(refused, grpc.StatusCode.NOT_FOUND)
    assert await both() == ((5, 0, ""), (0, 0, ""))

    await add_passages(stub, 2, "own", agent_id=sam)  # the default archive, created now
    shared = await stub.CreateArchive(
        api.CreateArchiveRequest(archive=pb.Archive(name="shared"), agent_id=ann)
    )
    kept = await add_passages(stub, 3, "s", archive_id=shared.id)
    assert await both() == ((5, 2, "own, own0, own1"), (0, 3, "s, s0, s1, s2"))

    await stub.AttachArchive(api.AttachArchiveRequest(agent_id=sam, archive_id=shared.id))
    await stub.AttachArchive(api.AttachArchiveRequest(agent_id=sam, archive_id=shared.id))  # already attached
    assert await both() == ((5, 5, "own, own0, own1, s, s0, s1, s2"), (0, 3, "s, s0, s1, s2"))

    await stub.DeletePassage(api.DeletePassageRequest(passage_id=kept[0].id))
    assert await both() == ((5, 4, "own, own0, own1, s, s1, s2"), (0, 2, "s, s1, s2"))

    await stub.DetachArchive(api.DetachArchiveRequest(agent_id=sam, archive_id=shared.id))
    assert await both() == ((5, 2, "own, own0, own1"), (0, 2, "s, s1, s2"))

    await stub.AttachArchive(api.AttachArchiveRequest(agent_id=sam, archive_id=shared.id))
    await stub.DeleteArchive(api.DeleteArchiveRequest(archive_id=shared.id))
    assert await both() == ((5, 2, "own, own0, own1"), (0, 0, ""))


async def test_writes_racing_on_two_servers_over_one_store_are_all_counted(
    stub: Stub, store_url: str
) -> None:
    """Appends, and passages added to one archive and deleted from it, spread over two servers."""
    settings = MemorySettings(
        address="127.0.0.1:0", database_url=store_url, retrieval_address=unreachable_address()
    )
    other = await start_memory_server(settings)
    try:
        async with grpc.aio.insecure_channel(other.address) as channel:
            replicas = [stub, memory_service_pb2_grpc.MemoryServiceStub(channel)]
            sam = (await new_agent(stub, pb.Block(label="human", value="Name: Bob"))).id
            early = await add_passages(stub, 6, "early", agent_id=sam)  # its default archive
            await asyncio.gather(
                *(append(replicas[i % 2], sam, 1 + i % 3) for i in range(40)),
                *(add_passages(replicas[i % 2], 1 + i % 2, "t", agent_id=sam) for i in range(20)),
                *(
                    replicas[i % 2].DeletePassage(api.DeletePassageRequest(passage_id=p.id))
                    for i, p in enumerate(early)
                ),
            )
            counted = await shown(replicas[1], sam)
    finally:
        await other.stop(0)
    assert counted == (sum(1 + i % 3 for i in range(40)), sum(1 + i % 2 for i in range(20)), "t, t0, t1")
    assert counted[:2] == await stored(stub, sam)
