"""One SearchArchival traced across both services: one trace id, the caller's traceparent honoured,
RetrievalService's Search a child of MemoryService's call, and the search legs children of it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_serving.server_tracing import tracer_provider

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


class _WhileTesting(InMemorySpanExporter):
    """Keeps spans only while a test of this module runs (the provider stays for the whole process)."""

    active = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return super().export(spans) if self.active else SpanExportResult.SUCCESS


_exporter = _WhileTesting()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider records into memory (installed once: OpenTelemetry allows one)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = tracer_provider("strata-test")
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    _exporter.active = True
    yield _exporter
    _exporter.active = False
    _exporter.clear()


def _named(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    """The one span called ``name`` (of a hop's CLIENT and SERVER spans, both so named: the SERVER one)."""
    matching = [span for span in spans if span.name == name and span.kind is not SpanKind.CLIENT]
    assert len(matching) == 1, f"{name}: {[s.name for s in spans]}"
    return matching[0]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_search_archival_is_one_trace_across_both_services(
    memory: MemoryStub, spans: InMemorySpanExporter
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="traced")))
    await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id, passages=[pb.Passage(text="Lanterns glow by the river.")], wait_searchable=True
        )
    )
    spans.clear()
    await memory.SearchArchival(
        api.SearchArchivalRequest(agent_id=agent.id, query="river lights"),
        metadata=(("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01"),),
    )
    finished = spans.get_finished_spans()
    outer = _named(finished, "strata.memory.v1.MemoryService/SearchArchival")
    inner = _named(finished, "strata.retrieval.v1.RetrievalService/Search")
    legs = [_named(finished, name) for name in ("search.vector_leg", "search.fts_leg", "search.fusion")]
    embed = _named(finished, "embed.query")
    assert {format(span.context.trace_id, "032x") for span in (outer, inner, *legs, embed)} == {TRACE_ID}
    assert format(_parent_id(outer) or 0, "016x") == CALLER_SPAN
    assert [_parent_id(leg) for leg in legs] == [inner.context.span_id] * 3
    assert _parent_id(embed) == legs[0].context.span_id
    chain = {span.context.span_id: span for span in finished}
    ancestor = chain.get(_parent_id(inner) or 0)
    while ancestor is not None and ancestor is not outer:
        ancestor = chain.get(_parent_id(ancestor) or 0)
    assert ancestor is outer, "RetrievalService's Search is not under MemoryService's call"
    # the call's own store reads (the outbox's background transactions are traces of their own)
    assert any(s.name == "store.transaction" and _parent_id(s) == outer.context.span_id for s in finished)


async def test_prompt_reads_and_appends_carry_the_prompt_receipt_id(
    memory: MemoryStub, spans: InMemorySpanExporter
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="receipts")))
    spans.clear()
    prompt = await memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
    await memory.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_ASSISTANT, content="Hello!")],
            prompt_receipt_id=prompt.receipt.id,
        )
    )
    finished = spans.get_finished_spans()
    for method in ("GetSystemPrompt", "AppendMessages"):
        span = _named(finished, f"strata.memory.v1.MemoryService/{method}")
        assert span.attributes is not None
        assert span.attributes["strata.prompt_receipt_id"] == prompt.receipt.id
