"""The generated MemoryClient against the same real server: same surface, blocking calls."""

from __future__ import annotations

import inspect
import re

import pytest

from strata.client import AbortedError, AsyncMemoryClient, MemoryClient, NotFoundError
from strata.memory.v1 import memory_service_pb2
from strata.memory.v1 import resources_pb2 as pb


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


def test_sync_client_has_every_public_method_of_the_async_one() -> None:
    def public(cls: type) -> dict[str, list[str]]:
        return {
            name: list(inspect.signature(member).parameters)
            for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")
        }

    assert public(MemoryClient) == public(AsyncMemoryClient)
    rpcs = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods
    missing = [m.name for m in rpcs if _snake(m.name) not in public(AsyncMemoryClient)]
    assert missing == [], "RPCs without a client method"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
