"""``strata purge …`` in-process and ``purge`` of the Python clients, against the real pair: the
command asks first (``--yes`` skips it; without a terminal it must be given), prints the receipt,
and exits 0 only for a verified one."""

from __future__ import annotations

import io
import json

import grpc
import pytest

from strata.client import AsyncMemoryClient, MemoryClient, StrataClientError
from strata.client.arguments import purge_request
from strata.memory.v1 import resources_pb2 as pb
from tests.client.conftest import Strata, new_agent


class Terminal(io.StringIO):
    """Standard input as a person's terminal, with their answer typed in."""

    def isatty(self) -> bool:
        return True


def test_purge_asks_first_and_prints_the_receipt(strata: Strata, monkeypatch: pytest.MonkeyPatch) -> None:
    agent_id = new_agent(strata)
    code, _, err = strata("purge", "agent", agent_id)
    assert code == 2
    assert "--yes" in err
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, _, err = strata("purge", "agent", agent_id)
    assert code == 1
    assert "was not purged" in err
    assert strata("agents", "get", agent_id)[0] == 0

    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    code, out, _ = strata("purge", "agent", agent_id)

    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"purged agent/{agent_id} at ")
    assert lines[1].split() == ["STORE", "DELETED"]
    assert ["agents", "1"] in [line.split() for line in lines]
    assert lines[-1].startswith("verified: ")
    assert "NOT_FOUND" in strata("agents", "get", agent_id)[2]


def test_purge_conversation_with_yes_as_json(strata: Strata, sync_client: MemoryClient) -> None:
    agent_id = new_agent(strata)
    sync_client.create_conversation(agent_id=agent_id, conversation_id="trip")
    strata("messages", "append", "--agent", agent_id, "--conversation", "trip", "--content", "Bring the map.")

    code, out, err = strata("--json", "purge", "conversation", agent_id, "trip", "--yes")

    assert code == 0, (out, err)
    receipt = json.loads(out)
    assert receipt["target"] == f"conversation/{agent_id}/trip"
    assert receipt["verified"] is True
    counts = {count["store"]: int(count.get("deleted", 0)) for count in receipt["counts"]}
    assert (counts["messages"], counts["conversations"]) == (1, 1)


def test_purge_of_an_unknown_id_exits_1_with_not_found(strata: Strata) -> None:
    code, _, err = strata("purge", "message", "message-nope", "--yes")
    assert code == 1
    assert "NOT_FOUND" in err


async def test_the_async_client_purges_a_message(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    appended = await client.append_messages(
        agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="My PIN is 1234.")]
    )
    receipt = await client.purge(kind="message", target_id=appended.messages[0].id)
    assert receipt.target == f"message/{appended.messages[0].id}"
    assert list(receipt.document_ids) == [appended.messages[0].id]
    with pytest.raises(StrataClientError) as gone:
        await client.purge(kind="message", target_id=appended.messages[0].id)
    assert gone.value.code == grpc.StatusCode.NOT_FOUND


def test_the_sync_client_purges_a_block(sync_client: MemoryClient) -> None:
    agent = sync_client.create_agent(agent=pb.Agent(name="sam"))
    block = sync_client.get_block(agent_id=agent.id, label="human")
    receipt = sync_client.purge(kind="block", target_id=block.id)
    assert receipt.verified
    assert {c.store: c.deleted for c in receipt.counts}["blocks"] == 1


def test_a_purge_request_names_one_target() -> None:
    assert purge_request("passage", "passage-1").passage_id == "passage-1"
    assert purge_request("conversation", "c", "agent-1").conversation.agent_id == "agent-1"
    with pytest.raises(ValueError, match="agent_id"):
        purge_request("conversation", "c")
    with pytest.raises(ValueError, match="kind"):
        purge_request("archive", "archive-1")
