"""The servers a fuzz run aims at, the resources seeded in them, and one RPC's fuzzing loop.

Shared by ``test_fuzz.py`` and ``scripts/fault_matrix.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from hypothesis import HealthCheck, given, settings

from strata.admin.v1 import admin_pb2
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings
from tests.client.conftest import LoopThread
from tests.security.conftest import ADMIN_KEY
from tests.security.fuzzing import FuzzReport, Pool, call_once, message_strategy


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
        derandomize=True,
        database=None,
    )


TENANT = (("x-strata-tenant", "fuzz"),)
MEMORY = api.DESCRIPTOR.services_by_name["MemoryService"]
RETRIEVAL = rpb.DESCRIPTOR.services_by_name["RetrievalService"]
ADMIN = admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
_DESTRUCTIVE = ("Delete", "Detach", "Revoke")


def ordered(service: ServiceDescriptor) -> list[MethodDescriptor]:
    """Every method, destructive ones last so earlier ones still find the seeded resources."""
    return sorted(service.methods, key=lambda m: m.name.startswith(_DESTRUCTIVE))


@dataclass
class Fuzzed:
    memory: str
    retrieval: str
    database: Path
    pool: Pool
    report: FuzzReport


def seed(address: str) -> Pool:
    """Resources the fuzzer can aim at: an agent with blocks, an archive, passages, messages, a file."""
    with grpc.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="fuzz")), metadata=TENANT)
        block = stub.GetBlock(
            api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")), metadata=TENANT
        )
        archive = stub.CreateArchive(
            api.CreateArchiveRequest(archive=pb.Archive(name="notes"), agent_id=agent.id), metadata=TENANT
        )
        passages = stub.CreatePassages(
            api.CreatePassagesRequest(
                archive_id=archive.id, passages=[pb.Passage(text="the fuzzer was here", tags=["a"])]
            ),
            metadata=TENANT,
        )
        stub.AppendMessages(
            api.AppendMessagesRequest(
                agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="hello")]
            ),
            metadata=TENANT,
        )
        file = stub.AttachFile(
            api.AttachFileRequest(
                agent_id=agent.id,
                file=pb.File(directory="docs", name="notes.md", content="line one\nline two"),
            ),
            metadata=TENANT,
        )
        tools = stub.ListTools(api.ListToolsRequest(), metadata=TENANT)
    return Pool(
        {
            "agent_id": [agent.id],
            "block_id": [block.id],
            "archive_id": [archive.id],
            "passage_id": [p.id for p in passages.passages],
            "file_id": [file.id],
            "conversation_id": ["default", "c1"],
            "label": ["persona", "human"],
            "tool_name": [tool.name for tool in tools.tools],
            "tenant_id": ["fuzz"],
            "document_id": ["doc-1"],
            "etag": ["1", "2"],
        }
    )


@contextmanager
def running_targets(root: Path, embedder: OnnxSentenceEmbedder) -> Iterator[Fuzzed]:
    """RetrievalService and MemoryService (admin key set, auth otherwise off) on a private loop,
    seeded with resources to aim at."""
    loop = LoopThread()
    retrieval_settings = RetrievalSettings(
        address="127.0.0.1:0", data_dir=root / "retrieval", log_json=False, grace_seconds=0
    )

    async def start_retrieval() -> RetrievalApp:  # grpc.aio servers belong to the loop they are built on
        app = RetrievalApp(retrieval_settings, embedder=embedder)
        await app.start()
        return app

    retrieval = loop.run(start_retrieval())
    database = root / "memory.sqlite3"
    settings_ = MemorySettings(
        address="127.0.0.1:0",
        database_url=f"sqlite:///{database}",
        retrieval_address=retrieval.address,
        admin_api_key=ADMIN_KEY,
        outbox_max_backoff_seconds=0.5,
        log_json=False,
    )
    memory: MemoryServer = loop.run(start_memory_server(settings_))
    try:
        yield Fuzzed(memory.address, retrieval.address, database, seed(memory.address), FuzzReport())
    finally:
        loop.run(memory.stop(0))
        loop.run(retrieval.stop())
        loop.close()


def fuzz_method(
    address: str,
    *,
    service: ServiceDescriptor,
    method: MethodDescriptor,
    pool: Pool,
    metadata: tuple[tuple[str, str | bytes], ...],
    report: FuzzReport,
    examples: int,
) -> None:
    with grpc.insecure_channel(address) as channel:

        @fuzz_settings(examples)
        @given(request=message_strategy(method.input_type, pool))
        def one(request: object) -> None:
            before = len(report.bad)
            call_once(channel, service, method, request, metadata=metadata, report=report)  # type: ignore[arg-type]
            assert len(report.bad) == before, report.bad[-1]

        one()
