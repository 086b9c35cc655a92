"""An agent's external memory end to end: tools and RPCs through MemoryService into RetrievalService."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

USER, ASSISTANT = pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT


def stamp(text: str) -> Timestamp:
    moment = Timestamp()
    moment.FromDatetime(datetime.fromisoformat(text).replace(tzinfo=UTC))
    return moment


async def tool(memory: MemoryStub, agent_id: str, name: str, **arguments: object) -> api.ExecuteToolResponse:
    return await memory.ExecuteTool(
        api.ExecuteToolRequest(agent_id=agent_id, tool_name=name, arguments=json.dumps(arguments))
    )


async def test_a_full_agent_session(memory: MemoryStub) -> None:
    """Blocks, edit tools, archival insert and search, recall search and a recompile, as an agent runs."""
    agent = await memory.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="sam", system="You are Sam."))
    )
    assert (await tool(memory, agent.id, "core_memory_append", label="human", content="Name: Bob")).ok
    inserted = await tool(
        memory,
        agent.id,
        "archival_memory_insert",
        content="Bob's sister Alice lives in Lisbon.",
        tags=["family"],
    )
    assert inserted.ok, inserted.text
    assert "passage-" in inserted.text
    assert "becomes searchable" not in inserted.text
    found = json.loads(
        (await tool(memory, agent.id, "archival_memory_search", query="where does Alice live")).text
    )
    assert found[0]["content"] == "Bob's sister Alice lives in Lisbon."
    assert found[0]["tags"] == ["family"]
    assert set(found[0]["relevance"]) >= {"rrf_score", "search_mode"}
    turns = [
        pb.Message(role=USER, content="I just adopted a beagle named Max."),
        pb.Message(
            role=ASSISTANT,
            tool_calls=[
                pb.ToolCall(
                    id="c1",
                    name="send_message",
                    arguments=json.dumps({"message": "Congratulations on Max the beagle!"}),
                )
            ],
        ),
    ]
    await memory.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=turns, wait_searchable=True)
    )
    recall = json.loads(
        (
            await tool(
                memory, agent.id, "conversation_search", query="beagle congratulations", roles=["assistant"]
            )
        ).text
    )
    assert recall["message"] == "Showing 1 results:"
    assert recall["results"][0]["role"] == "assistant"
    assert "Congratulations on Max" in recall["results"][0]["content"]
    stored = await memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    assert stored.stale  # new messages change the counts; appending is not a memory edit, so no recompile
    prompt = (
        await memory.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    ).prompt.text
    assert "- 1 total memories you created are stored in archival memory (use tools to access them)" in prompt
    assert "- Available archival memory tags: family" in prompt
    assert "- 2 previous messages between you and the user" in prompt


async def test_tag_filters_apply_before_the_top_k_cut(memory: MemoryStub) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="t")))
    untagged = [pb.Passage(text=f"Note {i} about the garden and tomatoes.") for i in range(12)]
    tagged = [pb.Passage(text=f"Tagged note {i} about tomatoes.", tags=["garden", f"n{i}"]) for i in range(3)]
    await memory.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=untagged + tagged, wait_searchable=True)
    )
    hits = (
        await memory.SearchArchival(
            api.SearchArchivalRequest(agent_id=agent.id, query="tomatoes", tags=["garden"], top_k=3)
        )
    ).hits
    assert sorted(h.passage.text for h in hits) == sorted(p.text for p in tagged)
    both = await memory.SearchArchival(
        api.SearchArchivalRequest(
            agent_id=agent.id, query="tomatoes", tags=["garden", "n1"], tag_match=api.TAG_MATCH_ALL
        )
    )
    assert [h.passage.text for h in both.hits] == ["Tagged note 1 about tomatoes."]


async def test_date_ranges_are_inclusive_and_date_only_covers_the_day(memory: MemoryStub) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="d")))
    days = ["2026-03-01T09:00:00", "2026-03-02T23:59:59", "2026-03-03T00:00:00"]
    messages = [
        pb.Message(role=USER, content=f"hiking trip day {i}", create_time=stamp(day))
        for i, day in enumerate(days)
    ]
    await memory.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=messages, wait_searchable=True)
    )
    result = json.loads(
        (
            await tool(
                memory,
                agent.id,
                "conversation_search",
                query="hiking trip",
                start_date="2026-03-01",
                end_date="2026-03-02",
                limit=10,
            )
        ).text
    )
    assert sorted(r["content"] for r in result["results"]) == ["hiking trip day 0", "hiking trip day 1"]
    bad = await tool(memory, agent.id, "conversation_search", query="x", start_date="March 1st")
    assert not bad.ok
    assert "Invalid start_date format" in bad.text


async def test_archives_are_shared_between_agents(memory: MemoryStub) -> None:
    one = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="one")))
    two = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="two")))
    archive = await memory.CreateArchive(
        api.CreateArchiveRequest(archive=pb.Archive(name="team facts"), agent_id=one.id)
    )
    await memory.AttachArchive(api.AttachArchiveRequest(agent_id=two.id, archive_id=archive.id))
    again = await memory.AttachArchive(api.AttachArchiveRequest(agent_id=two.id, archive_id=archive.id))
    assert sorted(again.agent_ids) == sorted([one.id, two.id])
    await memory.CreatePassages(
        api.CreatePassagesRequest(
            archive_id=archive.id,
            passages=[pb.Passage(text="The deploy window is Friday 6pm.")],
            wait_searchable=True,
        )
    )
    hits = (
        await memory.SearchArchival(api.SearchArchivalRequest(agent_id=two.id, query="when can we deploy"))
    ).hits
    assert [h.passage.text for h in hits] == ["The deploy window is Friday 6pm."]
    await memory.DetachArchive(api.DetachArchiveRequest(agent_id=two.id, archive_id=archive.id))
    assert not (await memory.SearchArchival(api.SearchArchivalRequest(agent_id=two.id, query="deploy"))).hits


async def test_deleted_passages_disappear_from_search(memory: MemoryStub) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="x")))
    created = await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id,
            passages=[pb.Passage(text="The wifi password is hunter2.")],
            wait_searchable=True,
        )
    )
    await memory.DeletePassage(api.DeletePassageRequest(passage_id=created.passages[0].id))
    assert not (
        await memory.SearchArchival(api.SearchArchivalRequest(agent_id=agent.id, query="wifi password"))
    ).hits


async def test_a_reply_is_found_through_its_previous_turn_by_words_not_by_meaning(memory: MemoryStub) -> None:
    """By default the turn before a message is context for the full-text leg only: a reply is found by
    the words of what it answers, but it does not embed like that turn and compete with it."""
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="kim")))
    turns = [
        pb.Message(role=USER, name="Ann", content="I just adopted a beagle named Max."),
        pb.Message(role=ASSISTANT, name="Bo", content="That is wonderful news, congratulations!"),
        pb.Message(role=USER, name="Ann", content="Dogs need long walks every day."),
        pb.Message(role=ASSISTANT, name="Bo", content="The weather is nice today."),
    ]
    appended = await memory.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=turns, wait_searchable=True)
    )
    adopted, reply, walks, _ = (m.id for m in appended.messages)

    async def ranked(mode: api.SearchMode.ValueType, query: str) -> list[str]:
        request = api.SearchMessagesRequest(agent_id=agent.id, query=query, mode=mode, limit=4)
        return [hit.message.id for hit in (await memory.SearchMessages(request)).hits]

    by_meaning = await ranked(api.SEARCH_MODE_VECTOR, "adopted a beagle named Max")
    assert by_meaning[:2] == [adopted, walks]  # with the turn embedded too, the reply came second
    assert reply in await ranked(api.SEARCH_MODE_FTS, "adopted Max")


async def test_hits_carry_the_score_they_are_ordered_by_and_each_legs_own_score(memory: MemoryStub) -> None:
    """Under the default fusion hits are not ordered by rrf_score: each hit also carries the fused
    score it is ordered by and the leg scores behind it, and the tools report the same score."""
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="lee")))
    texts = [
        "Lee's sister Mia moved to Porto last spring.",
        "Porto's old town sits on the river Douro.",
        "Mia teaches chemistry at a school in Porto.",
        "The cat sleeps on the warm windowsill all afternoon.",
        "Lee plans to visit Mia in Porto in June.",
    ]
    appended = await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=USER, content=text) for text in texts],
            wait_searchable=True,
        )
    )
    assert len(appended.messages) == len(texts)
    for mode in (api.SEARCH_MODE_HYBRID, api.SEARCH_MODE_VECTOR, api.SEARCH_MODE_FTS):
        found = await memory.SearchMessages(
            api.SearchMessagesRequest(agent_id=agent.id, query="where does Mia live", mode=mode, limit=5)
        )
        assert found.hits, mode
        scores = [hit.relevance.score for hit in found.hits]
        assert scores == sorted(scores, reverse=True), (mode, scores)
        assert all(score > 0 for score in scores), (mode, scores)
        for hit in found.hits:
            relevance = hit.relevance
            assert relevance.HasField("vector_score") == relevance.HasField("vector_rank"), relevance
            assert relevance.HasField("fts_score") == relevance.HasField("fts_rank"), relevance
            if mode != api.SEARCH_MODE_HYBRID:
                assert relevance.score == relevance.rrf_score  # one leg: its RRF score orders it

    served = await memory.SearchMessages(
        api.SearchMessagesRequest(
            agent_id=agent.id, query="Mia in Porto", mode=api.SEARCH_MODE_HYBRID, limit=5
        )
    )
    shown = json.loads(
        (await tool(memory, agent.id, "conversation_search", query="Mia in Porto", limit=5)).text
    )
    assert [r["relevance"]["score"] for r in shown["results"]] == [
        round(hit.relevance.score, 6) for hit in served.hits
    ]
