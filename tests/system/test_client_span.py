"""The memory -> retrieval hop is a CLIENT span (issue 31 item 5): a trace shows the time
MemoryService spent waiting on the network apart from RetrievalService's own SERVER span, with the
OpenTelemetry RPC semantic-convention attributes of the call."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.system.test_tracing import spans

__all__ = ["spans"]


async def test_memoryservice_calls_retrievalservice_under_a_client_span(
    memory: MemoryStub, spans: InMemorySpanExporter
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="client-span")))
    passages = [pb.Passage(text="Herons wait in the shallows.")]
    await memory.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True)
    )
    spans.clear()
    await memory.SearchArchival(api.SearchArchivalRequest(agent_id=agent.id, query="anything"))
    finished = {span.context.span_id: span for span in spans.get_finished_spans()}
    (server,) = [
        s
        for s in finished.values()
        if s.name == "strata.retrieval.v1.RetrievalService/Search" and s.kind is SpanKind.SERVER
    ]
    assert server.kind is SpanKind.SERVER
    assert server.parent is not None
    client = finished[server.parent.span_id]
    assert client.kind is SpanKind.CLIENT
    assert client.name == "strata.retrieval.v1.RetrievalService/Search"
    assert (
        dict(client.attributes or {}).items()
        >= {
            "rpc.system": "grpc",
            "rpc.service": "strata.retrieval.v1.RetrievalService",
            "rpc.method": "Search",
            "rpc.grpc.status_code": 0,
        }.items()
    )
    assert client.parent is not None  # inside MemoryService's call
    assert finished[client.parent.span_id].kind is not SpanKind.CLIENT
