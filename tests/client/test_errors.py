"""Failed calls raise the StrataClientError subclass of their status, with the server's details."""

from __future__ import annotations

import socket

import grpc
import pytest

from strata.client import (
    AbortedError,
    AsyncMemoryClient,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    StrataClientError,
    UnavailableError,
)
from strata.memory.v1 import resources_pb2 as pb


async def test_unknown_agent_is_not_found_with_reason_and_metadata(client: AsyncMemoryClient) -> None:
    with pytest.raises(NotFoundError) as caught:
        await client.get_agent(agent_id="agent-missing")
    error = caught.value
    assert isinstance(error, StrataClientError)
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert (error.reason, error.domain) == ("AGENT_NOT_FOUND", "strata.dev")
    assert error.metadata == {"agent_id": "agent-missing"}
    assert "agent-missing" in error.message
    assert str(error).startswith("NOT_FOUND: ")


async def test_bad_fields_are_invalid_argument_with_field_violations(client: AsyncMemoryClient) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        await client.create_block(block=pb.Block(label="notes", limit=-1))
    assert caught.value.field_violations == (FieldViolation("block.limit", "must be positive (got -1)"),)

    with pytest.raises(InvalidArgumentError) as negative:
        await client.list_agents(page_size=-1)
    assert [v.field for v in negative.value.field_violations] == ["page_size"]


async def test_budget_overflow_is_failed_precondition_with_lengths(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"), blocks=[pb.Block(label="tiny", limit=10)])
    with pytest.raises(FailedPreconditionError) as caught:
        await client.update_block(
            agent_id=agent.id, label="tiny", block=pb.Block(value="x" * 11), update_mask=["value"]
        )
    error = caught.value
    assert error.reason == "CHAR_LIMIT_EXCEEDED"
    assert {k: error.metadata[k] for k in ("limit", "current", "requested")} == {
        "limit": "10",
        "current": "0",
        "requested": "11",
    }


async def test_stale_etag_is_aborted_and_changes_nothing(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(
        agent=pb.Agent(name="sam"), blocks=[pb.Block(label="notes", value="v1")]
    )
    read = await client.get_block(agent_id=agent.id, label="notes")
    await client.update_block(
        block_id=read.id, block=pb.Block(value="v2"), update_mask=["value"], etag=read.etag
    )
    with pytest.raises(AbortedError) as caught:
        await client.update_block(
            block_id=read.id, block=pb.Block(value="v3"), update_mask=["value"], etag=read.etag
        )
    assert caught.value.reason == "ETAG_MISMATCH"
    assert caught.value.metadata["expected_etag"] == read.etag
    assert (await client.get_block(block_id=read.id)).value == "v2"


async def test_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:  # a port nothing listens on once the socket closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with AsyncMemoryClient(f"127.0.0.1:{port}", timeout=5) as client:
        with pytest.raises(UnavailableError) as caught:
            await client.list_agents()
    assert caught.value.reason == ""
    assert caught.value.field_violations == ()
