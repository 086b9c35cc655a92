"""Recall that understands time, through real servers: a message saying "yesterday" is found by a
query naming that date, a query naming a month searches the messages said from then on, a query
naming "the week before" a day searches from a week before it, a caller's dates win, and a period
nobody spoke in leaves the search unbounded."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from tests.servers import ServicePair

USER = pb.MESSAGE_ROLE_USER


def said(content: str, when: datetime) -> pb.Message:
    """A user message said at ``when``."""
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return pb.Message(role=USER, name="Caroline", content=content, create_time=stamp)


async def agent_with(memory: MemoryStub, messages: list[pb.Message]) -> str:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="caroline")))
    await memory.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=messages, wait_searchable=True)
    )
    return agent.id


async def test_a_message_saying_yesterday_is_found_by_a_query_naming_that_date(memory: MemoryStub) -> None:
    agent_id = await agent_with(
        memory,
        [
            said(
                "The support group meets every week and I love the support group.",
                datetime(2023, 5, 20, tzinfo=UTC),
            ),
            said("I went to a support group yesterday.", datetime(2023, 5, 9, 10, tzinfo=UTC)),
            said("Support group friends are the best support.", datetime(2023, 5, 25, tzinfo=UTC)),
        ],
    )
    for mode in (api.SEARCH_MODE_FTS, api.SEARCH_MODE_HYBRID):
        found = await memory.SearchMessages(
            api.SearchMessagesRequest(agent_id=agent_id, query="support group on 8 May 2023", mode=mode)
        )
        assert found.hits[0].message.content == "I went to a support group yesterday.", mode  # store's text


async def test_a_query_naming_a_month_searches_what_was_said_from_then_on(memory: MemoryStub) -> None:
    agent_id = await agent_with(
        memory,
        [
            said("We went camping at the lake.", datetime(2023, 3, 2, tzinfo=UTC)),
            said("We went camping in the mountains.", datetime(2023, 7, 3, tzinfo=UTC)),
            said("We went camping by the beach.", datetime(2023, 12, 1, tzinfo=UTC)),
        ],
    )
    result = await memory.ExecuteTool(
        api.ExecuteToolRequest(
            agent_id=agent_id,
            tool_name="conversation_search",
            arguments=json.dumps({"query": "Where did we go camping in July 2023?"}),
        )
    )
    contents = [hit["content"] for hit in json.loads(result.text)["results"]]
    assert contents == ["We went camping in the mountains."]
    explicit = await memory.ExecuteTool(
        api.ExecuteToolRequest(
            agent_id=agent_id,
            tool_name="conversation_search",
            arguments=json.dumps(
                {
                    "query": "Where did we go camping in July 2023?",
                    "start_date": "2023-12-01",
                    "end_date": "2023-12-31",
                }
            ),
        )
    )
    assert [hit["content"] for hit in json.loads(explicit.text)["results"]] == [
        "We went camping by the beach."
    ]


async def conversation_search(memory: MemoryStub, agent_id: str, arguments: dict[str, str]) -> list[str]:
    result = await memory.ExecuteTool(
        api.ExecuteToolRequest(
            agent_id=agent_id, tool_name="conversation_search", arguments=json.dumps(arguments)
        )
    )
    assert result.ok, result.text
    return [hit["content"] for hit in json.loads(result.text)["results"]]


async def test_a_query_naming_the_week_before_a_day_searches_from_a_week_before_it(
    memory: MemoryStub,
) -> None:
    agent_id = await agent_with(
        memory,
        [
            said("Tim was in Boston for a conference.", datetime(2023, 11, 5, tzinfo=UTC)),
            said("Tim was in Seattle for a conference.", datetime(2023, 11, 12, tzinfo=UTC)),
            said("Tim was in Denver for a conference.", datetime(2024, 1, 20, tzinfo=UTC)),
        ],
    )
    query = {"query": "Where was Tim for a conference in the week before 16 November 2023?"}
    assert await conversation_search(memory, agent_id, query) == ["Tim was in Seattle for a conference."]


async def test_with_the_reading_turned_off_a_named_month_is_only_words(pair: ServicePair) -> None:
    await pair.stop_memory()
    await pair.start_memory(recall_query_periods=False)
    assert pair.memory is not None
    async with grpc.aio.insecure_channel(pair.memory.address) as channel:
        memory = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent_id = await agent_with(
            memory,
            [
                said("We went camping at the lake.", datetime(2023, 3, 2, tzinfo=UTC)),
                said("We went camping in the mountains.", datetime(2023, 7, 3, tzinfo=UTC)),
            ],
        )
        found = await conversation_search(
            memory, agent_id, {"query": "Where did we go camping in July 2023?"}
        )
    assert sorted(found) == ["We went camping at the lake.", "We went camping in the mountains."]


async def test_a_named_period_nobody_spoke_in_leaves_the_search_unbounded(memory: MemoryStub) -> None:
    agent_id = await agent_with(
        memory,
        [
            said("We went camping at the lake.", datetime(2023, 3, 2, tzinfo=UTC)),
            said("I baked bread all weekend.", datetime(2023, 7, 3, tzinfo=UTC)),
        ],
    )
    query = {"query": "Where did we go camping in January 2021?"}
    assert (await conversation_search(memory, agent_id, query))[0] == "We went camping at the lake."
