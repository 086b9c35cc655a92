"""Both real services close TCP connections that never send the HTTP/2 preface once the handshake
timeout passes, and keep serving a new client meanwhile (issue 26 item 3)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair
from tests.serving.test_connections import closed_by_server, health_status


async def test_both_services_close_silent_connections(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> None:
    quick = {"handshake_timeout_seconds": 1.0}
    async with ServicePair(
        tmp_path, system_embedder, retrieval_settings=quick, memory_settings=quick
    ) as pair:
        ports = [int(address.rsplit(":", 1)[1]) for address in (pair.memory_address, pair.retrieval_address)]
        raw = [socket.create_connection(("127.0.0.1", port), timeout=5) for port in ports for _ in range(30)]
        try:
            await asyncio.sleep(0.3)
            assert not any(closed_by_server(sock) for sock in raw)
            async with grpc.aio.insecure_channel(pair.memory_address) as channel:
                stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
                await stub.ListAgents(api.ListAgentsRequest(), timeout=5)
            await health_status(pair.retrieval_address)
            await asyncio.sleep(2.0)
            assert all(closed_by_server(sock) for sock in raw)
        finally:
            for sock in raw:
                sock.close()
