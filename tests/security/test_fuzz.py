"""Hypothesis-driven requests against every RPC of both services through real servers.

No request may be answered INTERNAL or UNKNOWN, the servers must stay up, and the store must be
intact afterwards. MemoryService is fuzzed as two tenants with both tenants' ids in reach; neither
may ever be shown the other's ids or text. ``STRATA_FUZZ_EXAMPLES`` (default 6) sets the examples
per RPC; ``make fuzz`` runs many more with a fresh seed (see ``fuzz_targets``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import message_factory, text_format
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given
from hypothesis import strategies as st

from strata.admin.v1 import admin_pb2
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security.conftest import ADMIN_KEY, bearer
from tests.security.fuzz_targets import (
    ADMIN,
    MEMORY,
    RETRIEVAL,
    TENANT,
    Fuzzed,
    fuzz_method,
    fuzz_settings,
    ordered,
    running_targets,
)
from tests.security.fuzzing import BAD_CODES, Pool
from tests.security.integrity import store_problems

EXAMPLES = int(os.environ.get("STRATA_FUZZ_EXAMPLES", "6"))
FUZZ = fuzz_settings(EXAMPLES)


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory, security_embedder: OnnxSentenceEmbedder
) -> Iterator[Fuzzed]:
    with running_targets(tmp_path_factory.mktemp("fuzz"), security_embedder) as targets:
        yield targets


@pytest.mark.parametrize("method", ordered(MEMORY), ids=lambda m: m.name)
def test_memory_service_answers_every_request_with_a_clear_status(
    fuzzed: Fuzzed, method: MethodDescriptor
) -> None:
    fuzz_method(
        fuzzed.memory,
        service=MEMORY,
        method=method,
        pool=fuzzed.pool,
        callers=fuzzed.callers,
        report=fuzzed.report,
        examples=EXAMPLES,
    )


HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"]


@pytest.mark.parametrize("server", ["memory", "retrieval"])
@pytest.mark.parametrize("method", list(HEALTH.methods), ids=lambda m: m.name)
def test_health_answers_every_request_with_a_clear_status(
    fuzzed: Fuzzed, server: str, method: MethodDescriptor
) -> None:
    """Health is open (no key); Watch streams until the deadline, which ends it here."""
    fuzz_method(
        getattr(fuzzed, server),
        service=HEALTH,
        method=method,
        pool=Pool(
            {"service": ["", "strata.memory.v1.MemoryService", "strata.retrieval.v1.RetrievalService"]}
        ),
        report=fuzzed.report,
        examples=EXAMPLES,
        # Watch ends only at its deadline: 0.2 s each keeps `make fuzz`'s 150 examples (30 s) inside
        # the test's 120 s timeout, which 1 s each (150 s) overran
        timeout=0.2 if method.server_streaming else 30.0,
        patient=method.server_streaming,
    )


@pytest.mark.parametrize("method", ordered(ADMIN), ids=lambda m: m.name)
def test_admin_service_answers_every_request_with_a_clear_status(
    fuzzed: Fuzzed, method: MethodDescriptor
) -> None:
    fuzz_method(
        fuzzed.memory,
        service=ADMIN,
        method=method,
        pool=fuzzed.pool,
        metadata=bearer(ADMIN_KEY),
        report=fuzzed.report,
        examples=EXAMPLES,
    )


@pytest.mark.parametrize("method", ordered(RETRIEVAL), ids=lambda m: m.name)
def test_retrieval_service_answers_every_request_with_a_clear_status(
    fuzzed: Fuzzed, method: MethodDescriptor
) -> None:
    fuzz_method(
        fuzzed.retrieval,
        service=RETRIEVAL,
        method=method,
        pool=fuzzed.pool,
        metadata=(),
        report=fuzzed.report,
        examples=EXAMPLES,
    )


def test_after_fuzzing_both_servers_serve_and_the_store_is_intact(fuzzed: Fuzzed) -> None:
    assert fuzzed.report.calls >= EXAMPLES * (len(MEMORY.methods) + len(RETRIEVAL.methods))
    assert not [code for code in fuzzed.report.codes if grpc.StatusCode[code] in BAD_CODES]
    assert fuzzed.report.leaks == []
    for address in (fuzzed.memory, fuzzed.retrieval):
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
    with sqlite3.connect(fuzzed.database) as conn:
        assert store_problems(conn) == []


def test_after_fuzzing_neither_tenant_sees_the_other_s_data(fuzzed: Fuzzed) -> None:
    """Everything each tenant can list or search, read back after the fuzzing: none of it is the
    other tenant's (ids, or the text only the other stored)."""
    with grpc.insecure_channel(fuzzed.memory, options=[("grpc.max_receive_message_length", -1)]) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        for caller in fuzzed.callers:
            seen = [str(stub.ListAgents(api.ListAgentsRequest(page_size=1000), metadata=caller.metadata))]
            seen.append(
                str(stub.ListArchives(api.ListArchivesRequest(page_size=1000), metadata=caller.metadata))
            )
            agents = stub.ListAgents(api.ListAgentsRequest(page_size=1000), metadata=caller.metadata).agents
            for agent in agents[:20]:
                for request in (
                    api.ListBlocksRequest(agent_id=agent.id, page_size=1000),
                    api.ListMessagesRequest(agent_id=agent.id, page_size=1000),
                    api.ListPassagesRequest(agent_id=agent.id, page_size=1000),
                    api.ListFilesRequest(agent_id=agent.id, page_size=1000),
                    api.RenderMemoryRequest(agent_id=agent.id),
                    api.SearchArchivalRequest(agent_id=agent.id, query="secret fuzzer", top_k=100),
                    api.SearchMessagesRequest(agent_id=agent.id, query="secret", limit=100),
                ):
                    method = getattr(stub, type(request).__name__.removesuffix("Request"))
                    seen.append(str(method(request, metadata=caller.metadata, timeout=60)))
            said = "\n".join(seen)
            assert [marker for marker in caller.forbidden if marker in said] == []


@FUZZ
@given(token=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=200))
def test_random_bearer_tokens_are_unauthenticated(token: str, fuzzed: Fuzzed) -> None:
    with grpc.insecure_channel(fuzzed.memory) as channel:
        admin = channel.unary_unary(
            "/strata.admin.v1.AdminService/ListApiKeys",
            request_serializer=admin_pb2.ListApiKeysRequest.SerializeToString,
            response_deserializer=admin_pb2.ListApiKeysResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as refused:
            admin(admin_pb2.ListApiKeysRequest(), metadata=bearer(token), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


REGRESSIONS = [
    # Found by fuzzing: each was answered INTERNAL before the fix.
    (MEMORY, "CreateAgent", "agent { timezone: '" + "x" * 1000 + "' }"),
    (MEMORY, "CreatePassages", "passages { text: 't' create_time { seconds: -1099511627776 } }"),
    (MEMORY, "SearchMessages", "query: 'q' end_time { nanos: -1 }"),
    (MEMORY, "SearchArchival", "query: 'q' tags: ''"),  # RetrievalService's refusal passed on raw
    (RETRIEVAL, "UpsertDocuments", "documents { id: 'd' text: 't' created_at { nanos: -1 } }"),
    (
        RETRIEVAL,
        "Search",
        "query: 'q' filter { tenant_id: 't' created_at { start { seconds: 1099511627776 } } }",
    ),
]


def agent_with_a_passage(address: str) -> str:
    with grpc.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="regression")), metadata=TENANT)
        passages = [pb.Passage(text="a passage to search")]
        stub.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=passages), metadata=TENANT)
    return str(agent.id)


@pytest.mark.parametrize(("service", "name", "text"), REGRESSIONS, ids=[r[1] for r in REGRESSIONS])
def test_requests_fuzzing_broke_are_invalid_argument(
    fuzzed: Fuzzed, service: ServiceDescriptor, name: str, text: str
) -> None:
    method = service.methods_by_name[name]
    request = message_factory.GetMessageClass(method.input_type)()
    text_format.Parse(text.replace("'", '"'), request)
    if (
        "agent_id" in method.input_type.fields_by_name
    ):  # a fresh agent: fuzzing may have deleted the seeded one
        request.agent_id = agent_with_a_passage(fuzzed.memory)  # type: ignore[attr-defined]
    address = fuzzed.memory if service is MEMORY else fuzzed.retrieval
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/{service.full_name}/{name}",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=message_factory.GetMessageClass(method.output_type).FromString,
        )
        with pytest.raises(grpc.RpcError) as refused:
            call(request, metadata=TENANT, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
