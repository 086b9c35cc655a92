"""TLS and mTLS through real servers with throwaway certificates: who gets through and who does not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.client import AsyncMemoryClient, UnavailableError
from strata.client.arguments import tls_credentials
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.probe import main as probe_main
from strata_serving.tls import server_tls
from tests.memory.integration.conftest import expect_error
from tests.security.certificates import Pki
from tests.servers import ServicePair

FAST_FAIL = [("grpc.use_local_subchannel_pool", 1)]


async def healthy(channel: grpc.aio.Channel) -> bool:
    response = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return bool(response.status == health_pb2.HealthCheckResponse.SERVING)


def server_files(pki: Pki, *, mutual: bool) -> dict[str, Path]:
    files = {"tls_cert_file": pki.server_cert, "tls_key_file": pki.server_key}
    if mutual:
        files["tls_client_ca_file"] = pki.ca_cert
    return files


@pytest.fixture
async def mtls_stack(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, pki: Pki
) -> AsyncIterator[ServicePair]:
    """Both services requiring client certificates; MemoryService dials RetrievalService over mTLS."""
    client_side = {
        "retrieval_tls_root_cert": pki.ca_cert,
        "retrieval_tls_client_cert": pki.client_cert,
        "retrieval_tls_client_key": pki.client_key,
    }
    running = ServicePair(
        tmp_path,
        security_embedder,
        retrieval_settings=server_files(pki, mutual=True),
        memory_settings={**server_files(pki, mutual=True), **client_side},
    )
    await running.start()
    yield running
    await running.stop()


async def test_plaintext_is_refused_when_tls_is_required(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, pki: Pki
) -> None:
    running = ServicePair(tmp_path, security_embedder, memory_settings=server_files(pki, mutual=False))
    await running.start()
    try:
        async with grpc.aio.insecure_channel(running.memory_address, options=FAST_FAIL) as plain:
            await expect_error(
                health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest(), timeout=3),
                grpc.StatusCode.UNAVAILABLE,
            )
        credentials = tls_credentials(pki.ca_cert)
        async with grpc.aio.secure_channel(running.memory_address, credentials) as secure:
            assert await healthy(secure)
        # A client that does not trust the server's CA is refused too.
        distrust = tls_credentials(pki.rogue_cert)
        async with grpc.aio.secure_channel(running.memory_address, distrust, options=FAST_FAIL) as wrong:
            await expect_error(
                health_pb2_grpc.HealthStub(wrong).Check(health_pb2.HealthCheckRequest(), timeout=3),
                grpc.StatusCode.UNAVAILABLE,
            )
    finally:
        await running.stop()


async def test_under_mtls_only_clients_with_a_certificate_from_the_ca_get_in(
    mtls_stack: ServicePair, pki: Pki
) -> None:
    refused = {
        "plaintext": None,
        "no client certificate": tls_credentials(pki.ca_cert),
        "certificate from another CA": tls_credentials(pki.ca_cert, pki.rogue_cert, pki.rogue_key),
    }
    for address in (mtls_stack.memory_address, mtls_stack.retrieval_address):
        for name, credentials in refused.items():
            channel = (
                grpc.aio.insecure_channel(address, options=FAST_FAIL)
                if credentials is None
                else grpc.aio.secure_channel(address, credentials, options=FAST_FAIL)
            )
            async with channel:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await healthy(channel)
                assert caught.value.code() == grpc.StatusCode.UNAVAILABLE, name
        proper = tls_credentials(pki.ca_cert, pki.client_cert, pki.client_key)
        async with grpc.aio.secure_channel(address, proper) as channel:
            assert await healthy(channel)


async def test_memory_reaches_retrieval_over_mtls_and_the_client_speaks_tls(
    mtls_stack: ServicePair, pki: Pki
) -> None:
    credentials = tls_credentials(pki.ca_cert, pki.client_cert, pki.client_key)
    async with AsyncMemoryClient(mtls_stack.memory_address, credentials=credentials) as client:
        agent = await client.create_agent(agent=pb.Agent(name="tls"))
        await client.create_passages(
            agent_id=agent.id,
            passages=[pb.Passage(text="The vault code is kept offline.")],
            wait_searchable=True,
        )
        hits = await client.search_archival(agent_id=agent.id, query="vault code", top_k=3)
        assert [hit.passage.text for hit in hits.hits] == ["The vault code is kept offline."]
    async with AsyncMemoryClient(
        mtls_stack.memory_address, credentials=tls_credentials(pki.ca_cert)
    ) as client:
        with pytest.raises(UnavailableError):
            await client.list_agents()


async def test_memory_without_its_client_certificate_cannot_search(mtls_stack: ServicePair, pki: Pki) -> None:
    await mtls_stack.stop_memory()
    await mtls_stack.start_memory(retrieval_tls_client_cert=None, retrieval_tls_client_key=None)
    credentials = tls_credentials(pki.ca_cert, pki.client_cert, pki.client_key)
    async with grpc.aio.secure_channel(mtls_stack.memory_address, credentials) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="x")))
        await stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=[pb.Passage(text="t")])
        )
        await expect_error(
            stub.SearchArchival(api.SearchArchivalRequest(agent_id=agent.id, query="t", top_k=1), timeout=20),
            grpc.StatusCode.UNAVAILABLE,
        )


def test_half_a_tls_configuration_is_an_error(pki: Pki) -> None:
    assert server_tls(None, None, None) is None
    with pytest.raises(ValueError, match="both"):
        server_tls(pki.server_cert, None, None)
    with pytest.raises(ValueError, match="client CA"):
        server_tls(None, None, pki.ca_cert)
    with pytest.raises(ValueError, match="key"):
        tls_credentials(pki.ca_cert, pki.client_cert, None)


async def test_the_container_probe_speaks_tls_when_told_to(
    mtls_stack: ServicePair, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = mtls_stack.memory_address
    assert await asyncio.to_thread(probe_main, [address]) == 1  # plaintext: refused
    monkeypatch.setenv("STRATA_PROBE_TLS_ROOT_CERT", str(pki.ca_cert))
    assert await asyncio.to_thread(probe_main, [address]) == 1  # no client certificate under mTLS
    monkeypatch.setenv("STRATA_PROBE_TLS_CLIENT_CERT", str(pki.client_cert))
    monkeypatch.setenv("STRATA_PROBE_TLS_CLIENT_KEY", str(pki.client_key))
    assert await asyncio.to_thread(probe_main, [address]) == 0
