"""A purge reaches the records other features keep of its target.

* What an Agent File import kept verbatim: a message whose content had several parts keeps them in
  its agent's residue, a block with nested metadata keeps it there; purging the message or the block
  removes that entry (the residue row stays for the rest of the agent).
* What an idempotent write (``request_id``) keeps for a day: a SHA-256 of the request, content
  included, and the ids it stored; purging what it stored deletes the record.
"""

from __future__ import annotations

import json
import uuid

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.servers import ServicePair
from tests.system.purge_world import read_tables, receipt_counts, rows_holding

WORD = "glimmerfax"
DOCUMENT = {
    "agents": [
        {
            "id": "agent-0",
            "name": "imported",
            "system": "You are imported.",
            "block_ids": ["block-0"],
            "messages": [
                {
                    "id": "message-0",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"The {WORD} password is teal."},
                        {"type": "image", "source": {"url": f"https://example.com/{WORD}.png"}},
                    ],
                },
                {"id": "message-1", "role": "assistant", "content": "Noted."},
            ],
        }
    ],
    "blocks": [
        {
            "id": "block-0",
            "label": "human",
            "value": "likes tea",
            "limit": 2000,
            "metadata": {"source": {"said": f"{WORD} in a nested value"}},
        }
    ],
}


async def imported(memory: MemoryStub) -> api.ImportAgentFileResponse:
    request = api.ImportAgentFileRequest(agent_file=json.dumps(DOCUMENT).encode(), wait_searchable=True)
    return await memory.ImportAgentFile(request, timeout=60)


def store_url(pair: ServicePair) -> str:
    return f"sqlite:///{pair.root}/memory.sqlite3"


async def test_purging_an_imported_message_removes_its_parts_from_the_residue(
    pair: ServicePair, memory: MemoryStub
) -> None:
    agent = (await imported(memory)).agents[0]
    listed = await memory.ListMessages(api.ListMessagesRequest(agent_id=agent.id))
    said = next(m for m in listed.messages if WORD in m.content)
    assert set(rows_holding(read_tables(store_url(pair)), f"{WORD}.png")) == {"agent_file_residues"}

    receipt = await memory.Purge(api.PurgeRequest(message_id=said.id), timeout=60)

    after = read_tables(store_url(pair))
    assert rows_holding(after, "password is teal") == rows_holding(after, f"{WORD}.png") == {}
    assert receipt_counts(receipt)["agent_file_residues"] == 1
    exported = await memory.ExportAgentFile(api.ExportAgentFileRequest(agent_id=agent.id, with_messages=True))
    assert "password" not in exported.agent_file.decode()


async def test_purging_an_imported_block_removes_its_metadata_from_the_residue(
    pair: ServicePair, memory: MemoryStub
) -> None:
    agent = (await imported(memory)).agents[0]
    listed = await memory.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    human = next(b for b in listed.blocks if b.label == "human")
    assert "agent_file_residues" in rows_holding(read_tables(store_url(pair)), "nested value")

    receipt = await memory.Purge(api.PurgeRequest(block_id=human.id), timeout=60)

    assert rows_holding(read_tables(store_url(pair)), "nested value") == {}
    assert receipt_counts(receipt)["agent_file_residues"] == 1


async def test_purging_messages_written_with_a_request_id_deletes_the_writes_record(
    pair: ServicePair, memory: MemoryStub
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="sam")))
    appended = await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="My PIN is 1234.")],
            request_id=str(uuid.uuid4()),
        )
    )
    assert len(read_tables(store_url(pair))["write_requests"]) == 1

    receipt = await memory.Purge(api.PurgeRequest(message_id=appended.messages[0].id), timeout=60)

    assert read_tables(store_url(pair))["write_requests"] == set()
    assert receipt_counts(receipt)["write_requests"] == 1
