"""The servers a fuzz run aims at, the resources seeded in them, and one RPC's fuzzing loop.

Two tenants are seeded, and each fuzzed request goes out as one of them with ids of both in reach:
an answer to one tenant that holds the other's ids or text is a leak. Shared by ``test_fuzz.py`` and
``scripts/fault_matrix.py``.

Budget and seed: ``STRATA_FUZZ_SEED`` unset (CI) fixes the seed, so every run sends the same
requests, and replays the failures saved in ``tests/security/fuzz-examples`` first (read only);
``make fuzz`` sets a fresh seed and ``STRATA_FUZZ_SAVE=1``, so a failure it finds is saved there
(commit it: CI replays it from then on).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, ReadOnlyDatabase

from strata.admin.v1 import admin_pb2
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security.conftest import ADMIN_KEY
from tests.security.fuzzing import FuzzReport, Pool, call_once, message_strategy
from tests.servers import BackgroundPair, ServicePair

EXAMPLES_DIR = Path(__file__).resolve().parent / "fuzz-examples"
FIXED_SEED = 20261203


def fuzz_seed() -> int | None:
    """``STRATA_FUZZ_SEED``: a number, or "random" for a fresh one per test; unset: the fixed seed."""
    chosen = os.environ.get("STRATA_FUZZ_SEED", "")
    if chosen == "random":
        return None
    return int(chosen) if chosen else FIXED_SEED


def example_database() -> ExampleDatabase:
    """Saved failures: replayed first on every run, written only when ``STRATA_FUZZ_SAVE=1``."""
    directory = DirectoryBasedExampleDatabase(EXAMPLES_DIR)
    return directory if os.environ.get("STRATA_FUZZ_SAVE") == "1" else ReadOnlyDatabase(directory)


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
        database=example_database(),
    )


Metadata = tuple[tuple[str, str | bytes], ...]
TENANT: Metadata = (("x-strata-tenant", "fuzz"),)
OTHER_TENANT: Metadata = (("x-strata-tenant", "fuzz-other"),)
MEMORY = api.DESCRIPTOR.services_by_name["MemoryService"]
RETRIEVAL = rpb.DESCRIPTOR.services_by_name["RetrievalService"]
ADMIN = admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
_DESTRUCTIVE = ("Delete", "Detach", "Revoke")


def ordered(service: ServiceDescriptor) -> list[MethodDescriptor]:
    """Every method, destructive ones last so earlier ones still find the seeded resources."""
    return sorted(service.methods, key=lambda m: m.name.startswith(_DESTRUCTIVE))


@dataclass(frozen=True)
class Caller:
    """Who a fuzzed request is sent as, and what its answers must never hold."""

    metadata: Metadata
    forbidden: frozenset[str] = frozenset()


@dataclass
class Fuzzed:
    memory: str
    retrieval: str
    database: Path
    pool: Pool
    report: FuzzReport
    tenants: dict[str, Caller] = field(default_factory=dict)
    """Each seeded tenant's caller; its ``forbidden`` markers are the other tenant's ids and text."""

    @property
    def callers(self) -> list[Caller]:
        return list(self.tenants.values())


@dataclass(frozen=True)
class Seeded:
    ids: dict[str, list[str]]
    page_tokens: list[str]
    secret: str
    """Text only this tenant stored (in a block, a passage, a message and a file)."""

    def markers(self) -> frozenset[str]:
        return frozenset(
            {self.secret, *(i for key, values in self.ids.items() if key != "etag" for i in values)}
        )


def seed_tenant(stub: memory_service_pb2_grpc.MemoryServiceStub, metadata: Metadata, name: str) -> Seeded:
    """One tenant's resources: two agents with blocks, an archive, passages, messages, a file."""
    secret = f"secret-of-{name}-7f3a"
    agent = stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name=name),
            blocks=[pb.Block(label="human", value=secret), pb.Block(label="persona")],
        ),
        metadata=metadata,
    )
    stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"{name}-2")), metadata=metadata)
    block = stub.GetBlock(
        api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")), metadata=metadata
    )
    archive = stub.CreateArchive(
        api.CreateArchiveRequest(archive=pb.Archive(name="notes"), agent_id=agent.id), metadata=metadata
    )
    passages = stub.CreatePassages(
        api.CreatePassagesRequest(
            archive_id=archive.id,
            passages=[pb.Passage(text=f"the fuzzer was here {secret}", tags=["a"]), pb.Passage(text="two")],
        ),
        metadata=metadata,
    )
    stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=text) for text in ("hello", secret)],
        ),
        metadata=metadata,
    )
    file = stub.AttachFile(
        api.AttachFileRequest(
            agent_id=agent.id,
            file=pb.File(directory="docs", name="notes.md", content=f"line one\n{secret}"),
        ),
        metadata=metadata,
    )
    tokens = [
        stub.ListAgents(api.ListAgentsRequest(page_size=1), metadata=metadata).next_page_token,
        stub.ListMessages(
            api.ListMessagesRequest(agent_id=agent.id, page_size=1), metadata=metadata
        ).next_page_token,
        stub.ListPassages(
            api.ListPassagesRequest(archive_id=archive.id, page_size=1), metadata=metadata
        ).next_page_token,
    ]
    ids = {
        "agent_id": [agent.id],
        "block_id": [block.id],
        "archive_id": [archive.id],
        "passage_id": [p.id for p in passages.passages],
        "file_id": [file.id],
        "etag": [block.etag, agent.etag],
    }
    return Seeded(ids, [t for t in tokens if t], secret)


def seed(address: str) -> tuple[Pool, dict[str, Caller]]:
    """Both tenants' resources, all in reach of every request, and each tenant's caller."""
    with grpc.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        mine = seed_tenant(stub, TENANT, "fuzz")
        theirs = seed_tenant(stub, OTHER_TENANT, "fuzz-other")
        tools = stub.ListTools(api.ListToolsRequest(), metadata=TENANT)
    strings: dict[str, list[str]] = {key: [*mine.ids[key], *theirs.ids[key]] for key in mine.ids}
    pool = Pool(
        {
            **strings,
            "page_token": [*mine.page_tokens, *theirs.page_tokens],
            "conversation_id": ["default", "c1"],
            "label": ["persona", "human"],
            "tool_name": [tool.name for tool in tools.tools],
            "tenant_id": ["fuzz", "fuzz-other"],
            "document_id": ["doc-1"],
        }
    )
    callers = {
        "fuzz": Caller(TENANT, theirs.markers()),
        "fuzz-other": Caller(OTHER_TENANT, mine.markers()),
    }
    return pool, callers


@contextmanager
def running_targets(root: Path, embedder: OnnxSentenceEmbedder) -> Iterator[Fuzzed]:
    """RetrievalService and MemoryService (admin key set, auth otherwise off) on a private loop,
    seeded with resources to aim at."""
    servers = BackgroundPair(
        ServicePair(
            root,
            embedder=embedder,
            retrieval_settings={"grace_seconds": 0},
            memory_settings={
                "admin_api_key": ADMIN_KEY,
                "outbox_max_backoff_seconds": 0.5,
                "log_json": False,
            },
            quick_retries=False,
        ),
        timeout=120,
    )
    memory_address = servers.start()
    try:
        pool, tenants = seed(memory_address)
        database = root / "memory.sqlite3"
        yield Fuzzed(memory_address, servers.pair.retrieval_address, database, pool, FuzzReport(), tenants)
    finally:
        servers.stop()


def fuzz_method(
    address: str,
    *,
    service: ServiceDescriptor,
    method: MethodDescriptor,
    pool: Pool,
    metadata: Metadata = (),
    report: FuzzReport,
    examples: int,
    callers: Sequence[Caller] = (),
    timeout: float = 30.0,
    patient: bool = False,
) -> None:
    """``examples`` requests to ``method``, each sent as one of ``callers`` (or with ``metadata``);
    fails on the first INTERNAL/UNKNOWN answer or leak (both are also kept in ``report``)."""
    who = list(callers) or [Caller(metadata)]
    with grpc.insecure_channel(address) as channel:

        def one(caller: Caller, request: object) -> None:
            bad, leaks = len(report.bad), len(report.leaks)
            call_once(
                channel,
                service,
                method,
                request,  # type: ignore[arg-type]
                metadata=caller.metadata,
                report=report,
                timeout=timeout,
                forbidden=caller.forbidden,
                patient=patient,
            )
            assert len(report.bad) == bad, report.bad[-1]
            assert len(report.leaks) == leaks, report.leaks[-1]

        # One database key per method (the function's source is the same for all of them).
        one._hypothesis_internal_add_digest = method.full_name.encode()  # type: ignore[attr-defined]
        test = given(caller=st.sampled_from(who), request=message_strategy(method.input_type, pool))(one)
        chosen = fuzz_seed()
        if chosen is not None:
            test = hypothesis_seed(chosen)(test)
        fuzz_settings(examples)(test)()
