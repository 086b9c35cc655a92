"""``wait_searchable`` is bounded by the call's deadline, and the server itself says so.

RetrievalService is unreachable here, so nothing becomes searchable. A client's own timer ends a
call with a bare "Deadline Exceeded" whatever the server does (gRPC also cancels the handler at
the deadline), so only the server's answer shows it read the deadline: it stops waiting early
enough to reply that the write was stored and is not searchable yet.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.archival_servicer import wait_budget
from tests.memory.integration.conftest import Stub, expect_error, new_agent

STORED_NOT_SEARCHABLE = "stored, but not searchable within the call's deadline yet; indexing goes on"


@pytest.mark.parametrize(
    ("remaining", "budget"), [(None, None), (8.0, 7.0), (4.0, 3.0), (2.0, 1.5), (0.4, 0.3), (0.0, 0.0)]
)
def test_the_wait_keeps_a_quarter_of_the_deadline_at_most_a_second_to_answer(
    remaining: float | None, budget: float | None
) -> None:
    assert wait_budget(remaining) == (None if budget is None else pytest.approx(budget))


async def test_the_server_answers_stored_not_searchable_before_the_deadline(stub: Stub) -> None:
    agent = await new_agent(stub)
    passages = api.CreatePassagesRequest(
        agent_id=agent.id, passages=[pb.Passage(text="kept")], wait_searchable=True
    )
    messages = api.AppendMessagesRequest(
        agent_id=agent.id,
        messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="kept too")],
        wait_searchable=True,
    )
    errors = await asyncio.gather(
        expect_error(stub.CreatePassages(passages, timeout=4.0), grpc.StatusCode.DEADLINE_EXCEEDED),
        expect_error(stub.AppendMessages(messages, timeout=4.0), grpc.StatusCode.DEADLINE_EXCEEDED),
    )
    assert [error.details() for error in errors] == [STORED_NOT_SEARCHABLE] * 2
    listed = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
    assert [p.text for p in listed.passages] == ["kept"]
    history = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id))
    assert [m.content for m in history.messages] == ["kept too"]
