"""The generated MemoryClient against the same real server: same surface, blocking calls."""

from __future__ import annotations

import inspect
import re

import pytest
from google.protobuf.descriptor import ServiceDescriptor

from strata.client import (
    AbortedError,
    AsyncMemoryClient,
    AsyncRetrievalClient,
    MemoryClient,
    NotFoundError,
    RetrievalClient,
)
from strata.memory.v1 import memory_service_pb2
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2


def test_sync_round_trip_pagination_and_errors(sync_client: MemoryClient) -> None:
    agent = sync_client.create_agent(agent=pb.Agent(name="sync"))
    block = sync_client.get_block(agent_id=agent.id, label="persona")
    edited = sync_client.update_block(
        block_id=block.id, block=pb.Block(value="I am terse."), update_mask=["value"], etag=block.etag
    )
    assert edited.value == "I am terse."

    sync_client.append_messages(
        agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=str(i)) for i in range(5)]
    )
    assert [m.content for m in sync_client.iter_messages(agent_id=agent.id, page_size=2)] == list("01234")

    with pytest.raises(AbortedError):
        sync_client.update_block(
            block_id=block.id, block=pb.Block(value="x"), update_mask=["value"], etag=block.etag
        )
    with pytest.raises(NotFoundError):
        sync_client.get_block(agent_id=agent.id, label="missing")

    result = sync_client.execute_tool(
        agent_id=agent.id,
        tool_name="memory_replace",
        arguments={"label": "persona", "old_string": "terse", "new_string": "brief"},
    )
    assert result.ok, result.text
    assert sync_client.get_block(block_id=block.id).value == "I am brief."


@pytest.mark.parametrize(
    ("sync_class", "async_class", "service"),
    [
        (MemoryClient, AsyncMemoryClient, memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"]),
        (
            RetrievalClient,
            AsyncRetrievalClient,
            retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"],
        ),
    ],
)
def test_each_rpc_has_a_method_and_the_sync_twin_has_them_all(
    sync_class: type, async_class: type, service: ServiceDescriptor
) -> None:
    assert _public(sync_class) == _public(async_class)
    missing = [m.name for m in service.methods if _snake(m.name) not in _public(async_class)]
    assert missing == [], "RPCs without a client method"


def _public(cls: type) -> dict[str, list[str]]:
    """Public methods and their parameter names."""
    return {
        name: list(inspect.signature(member).parameters)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
