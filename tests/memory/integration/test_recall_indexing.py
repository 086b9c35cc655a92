"""Recall indexing and search settings, through a real MemoryService store (no RetrievalService):
preceding turns read from the store at delivery time, and the recall fusion sent with each search."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.domain.model import SearchMode
from strata_memory.indexing.delivery import current_documents
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.main import MemoryServer, build_operations
from strata_memory.operations.search import SearchWindow
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub, new_agent

USER, ASSISTANT, TOOL = pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT, pb.MESSAGE_ROLE_TOOL


class RecordingRetrieval(RetrievalConnection):
    """Answers every search with no hits and keeps the requests."""

    def __init__(self) -> None:
        super().__init__(unreachable_address())
        self.requests: list[rpb.SearchRequest] = []

    async def search(self, request: rpb.SearchRequest) -> rpb.SearchResponse:
        self.requests.append(request)
        return rpb.SearchResponse()


async def append(stub: Stub, agent_id: str, conversation: str, messages: Sequence[pb.Message]) -> list[str]:
    response = await stub.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent_id, conversation_id=conversation, messages=list(messages))
    )
    return [m.id for m in response.messages]


async def test_messages_are_indexed_with_the_preceding_turns_of_their_conversation(
    stub: Stub, memory_server: MemoryServer
) -> None:
    agent = await new_agent(stub)
    for conversation in ("a", "b"):
        await stub.CreateConversation(
            api.CreateConversationRequest(agent_id=agent.id, conversation_id=conversation)
        )
    first = await append(
        stub,
        agent.id,
        "a",
        [
            pb.Message(role=USER, name="Caroline", content="Did you go hiking?"),
            pb.Message(role=TOOL, name="lookup", content='{"weather": "sunny"}', tool_call_id="c1"),
        ],
    )
    await append(stub, agent.id, "b", [pb.Message(role=USER, content="another conversation")])
    reply = await append(
        stub, agent.id, "a", [pb.Message(role=ASSISTANT, name="Mel", content="Yes, it was lovely!")]
    )
    ids = [*first, *reply]

    async def texts(context_turns: int) -> dict[str, str]:
        documents = await memory_server.database.read(
            lambda conn: current_documents(conn, agent.tenant_id, ids, context_turns=context_turns)
        )
        return {d.id: "\n".join(part for part in (d.text, d.context) if part) for d in documents}

    assert (await texts(0))[reply[0]] == "Mel: Yes, it was lovely!"
    with_context = await texts(2)
    # The tool message and the other conversation are not dialogue context of this reply.
    assert with_context[reply[0]] == "Mel: Yes, it was lovely!\nCaroline: Did you go hiking?"
    assert with_context[first[0]] == "Caroline: Did you go hiking?"


async def test_recall_search_sends_the_configured_fusion_and_depth(
    stub: Stub, memory_server: MemoryServer
) -> None:
    agent = await new_agent(stub)
    retrieval = RecordingRetrieval()
    settings = MemorySettings(
        recall_vector_weight=0.3, recall_fts_weight=1.0, recall_rrf_k=10.0, recall_candidate_depth=40
    )
    ops = build_operations(
        memory_server.database, retrieval, memory_server.outbox, settings, lambda: datetime.now(UTC)
    )
    for mode, limit in ((SearchMode.HYBRID, 5), (SearchMode.HYBRID, 60), (SearchMode.FTS, 5)):
        await ops.search.recall(
            agent.tenant_id,
            agent.id,
            SearchWindow("hiking", mode=mode, limit=limit),
            roles=(),
            conversation_id="",
        )
    hybrid, wide, fts = retrieval.requests
    assert (hybrid.vector_weight, hybrid.fts_weight, hybrid.rrf_k) == (0.3, 1.0, 10.0)
    assert (hybrid.vector_depth, hybrid.fts_depth) == (40, 40)
    assert (wide.vector_depth, wide.fts_depth) == (60, 60)  # never below the limit
    assert not fts.HasField("vector_depth")
    await ops.search.archival(agent.tenant_id, agent.id, SearchWindow("x"), tags=(), match_all=False)
    assert len(retrieval.requests) == 3  # no archive yet: archival does not search


async def test_the_defaults_leave_depth_to_retrieval_service(stub: Stub, memory_server: MemoryServer) -> None:
    agent = await new_agent(stub)
    retrieval = RecordingRetrieval()
    settings = MemorySettings(recall_candidate_depth=0)
    ops = build_operations(
        memory_server.database, retrieval, memory_server.outbox, settings, lambda: datetime.now(UTC)
    )
    await ops.search.recall(agent.tenant_id, agent.id, SearchWindow("hiking"), roles=(), conversation_id="")
    assert not retrieval.requests[0].HasField("vector_depth")
