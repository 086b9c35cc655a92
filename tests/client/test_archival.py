"""Archives, passages, search and Reindex through the client, MemoryService and RetrievalService."""

from __future__ import annotations

import pytest

from strata.client import AsyncMemoryClient, MemoryClient, NotFoundError
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

FACTS = ["Ada drinks green tea every morning.", "Ada commutes by bicycle.", "Ada's cat is called Turing."]


async def test_archives_passages_and_search(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    archive = await client.create_archive(archive=pb.Archive(name="facts"), agent_id=agent.id)
    assert list(archive.agent_ids) == [agent.id]
    assert [a.id for a in (await client.list_archives(agent_id=agent.id)).archives] == [archive.id]

    created = await client.create_passages(
        archive_id=archive.id,
        passages=[pb.Passage(text=text, tags=["ada"]) for text in FACTS],
        wait_searchable=True,
    )
    assert [p.text for p in created.passages] == FACTS
    listed = [p.text async for p in client.iter_passages(archive_id=archive.id, page_size=2)]
    assert sorted(listed) == sorted(FACTS)  # one insert: the same create_time for all three

    found = await client.search_archival(agent_id=agent.id, query="what does Ada drink?", top_k=2)
    assert found.hits[0].passage.text == FACTS[0]
    assert found.hits[0].relevance.search_mode == "hybrid"
    fts = await client.search_archival(agent_id=agent.id, query="bicycle", mode=api.SEARCH_MODE_FTS)
    assert [hit.passage.text for hit in fts.hits] == [FACTS[1]]

    await client.delete_passage(passage_id=created.passages[2].id)
    assert (await client.list_passages(agent_id=agent.id)).total_size == 2
    detached = await client.detach_archive(agent_id=agent.id, archive_id=archive.id)
    assert list(detached.agent_ids) == []
    await client.delete_archive(archive_id=archive.id)
    with pytest.raises(NotFoundError):
        await client.get_archive(archive_id=archive.id)


async def test_message_search_and_reindex_progress(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    await client.append_messages(
        agent_id=agent.id,
        messages=[
            pb.Message(role=pb.MESSAGE_ROLE_USER, content="My sister lives in Lisbon."),
            pb.Message(role=pb.MESSAGE_ROLE_ASSISTANT, content="Lisbon is lovely in spring."),
        ],
        wait_searchable=True,
    )
    found = await client.search_messages(agent_id=agent.id, query="where does my sister live", limit=1)
    assert [hit.message.content for hit in found.hits] == ["My sister lives in Lisbon."]

    progress = [step async for step in client.reindex(agent_id=agent.id, batch_size=1)]
    assert progress[-1].done
    assert progress[-1].documents_done == progress[-1].documents_total == 2


def test_sync_reindex_streams(sync_client: MemoryClient) -> None:
    agent = sync_client.create_agent(agent=pb.Agent(name="sync"))
    sync_client.create_passages(agent_id=agent.id, passages=[pb.Passage(text=t) for t in FACTS])
    steps = list(sync_client.reindex(agent_id=agent.id))
    assert steps[-1].done
    assert steps[-1].documents_total == 3
