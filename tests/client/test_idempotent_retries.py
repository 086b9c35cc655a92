"""The Python clients retry AppendMessages and CreatePassages on UNAVAILABLE with the same request_id:
behind a proxy that loses the first response after the server committed, the call succeeds and the
server stores the write once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from strata.client import AsyncMemoryClient, MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from tests.lossy_proxy import LossyProxy
from tests.servers import LoopThread

USER = pb.MESSAGE_ROLE_USER


@pytest.fixture
def proxy(server_loop: LoopThread, memory_target: str) -> Iterator[LossyProxy]:
    lossy = LossyProxy(memory_target, ["AppendMessages", "CreatePassages"])
    server_loop.run(lossy.start())
    yield lossy
    server_loop.run(lossy.stop())


async def test_the_async_client_retries_a_lost_append_and_it_is_stored_once(
    proxy: LossyProxy, tenant: str
) -> None:
    async with AsyncMemoryClient(proxy.address, tenant=tenant, timeout=10) as client:
        agent = await client.create_agent(agent=pb.Agent(name="sam"))
        sent = [pb.Message(role=USER, content="hi"), pb.Message(role=USER, content="again")]
        appended = await client.append_messages(agent_id=agent.id, messages=sent)
        listed = await client.list_messages(agent_id=agent.id)
        passages = await client.create_passages(agent_id=agent.id, passages=[pb.Passage(text="tea")])
        kept = await client.list_passages(agent_id=agent.id)
    assert proxy.lost["AppendMessages"] == 1
    assert proxy.forwarded["AppendMessages"] == 2
    assert [(m.id, m.content) for m in listed.messages] == [(m.id, m.content) for m in appended.messages]
    assert proxy.lost["CreatePassages"] == 1
    assert proxy.forwarded["CreatePassages"] == 2
    assert [p.id for p in kept.passages] == [p.id for p in passages.passages]


def test_the_sync_client_retries_a_lost_append_and_it_is_stored_once(proxy: LossyProxy, tenant: str) -> None:
    with MemoryClient(proxy.address, tenant=tenant, timeout=10) as client:
        agent = client.create_agent(agent=pb.Agent(name="sam"))
        appended = client.append_messages(agent_id=agent.id, messages=[pb.Message(role=USER, content="hi")])
        assert [m.id for m in client.list_messages(agent_id=agent.id).messages] == [appended.messages[0].id]
    assert proxy.forwarded["AppendMessages"] == 2


async def test_a_request_id_given_by_the_caller_is_the_one_sent(proxy: LossyProxy, tenant: str) -> None:
    """A caller that keeps its own request_id can retry the write itself, even in another process."""
    request_id = "0b9f8a1e-4c1d-4f7a-9a5e-2f0c6b1d3e7a"
    async with AsyncMemoryClient(proxy.address, tenant=tenant, timeout=10) as client:
        agent = await client.create_agent(agent=pb.Agent(name="sam"))
        sent = [pb.Message(role=USER, content="hi")]
        first = await client.append_messages(agent_id=agent.id, messages=sent, request_id=request_id)
        again = await client.append_messages(agent_id=agent.id, messages=sent, request_id=request_id)
        other = await client.append_messages(agent_id=agent.id, messages=sent)
    assert again.messages[0].id == first.messages[0].id
    assert other.messages[0].id != first.messages[0].id
