"""LoCoMo as bench/locomo/recall.py serves it: the data, and a RetrievalService + MemoryService pair.

The conversations and questions are read from ``../shared/data/locomo`` (``STRATA_LOCOMO_DIR``;
``STRATA_LOCOMO_CONVS=conv-26,...`` limits a smoke run). ``start_services`` starts both services in
this process on free loopback ports over a temporary folder (:class:`bench.servers.ServicePair`);
``load_conversation`` appends one
conversation as one agent's messages through the public gRPC API, and ``search`` asks
``SearchMessages``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from bench.locomo.selection import CATEGORIES, Question, Ranks
from bench.servers import ServicePair
from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as rpb_mem
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

DATA = Path(os.environ.get("STRATA_LOCOMO_DIR", "/work/shared/data/locomo"))
CONVERSATIONS = [c for c in os.environ.get("STRATA_LOCOMO_CONVS", "").split(",") if c]  # smoke runs
APPEND_BATCH = 100
TENANT = "default"
MODES = {"vector": mpb.SEARCH_MODE_VECTOR, "fts": mpb.SEARCH_MODE_FTS, "hybrid": mpb.SEARCH_MODE_HYBRID}
# Small outbox batches: one UpsertDocuments stays well inside its deadline on a busy 2-core machine.
BENCH_SETTINGS: dict[str, Any] = {"outbox_batch_size": 32}


@dataclass
class Corpus:
    """One conversation loaded as one agent's recall."""

    conv: str
    agent_id: str
    dia_of: dict[str, str] = field(default_factory=dict)  # message id -> dia_id
    id_of: dict[str, str] = field(default_factory=dict)  # dia_id -> message id


def session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(turn: Mapping[str, Any], *, dated: bool = False) -> str:
    text = str(turn["text"]).strip()
    caption = str(turn.get("blip_caption") or "").strip()
    text = f"{text} [image: {caption}]" if caption else text
    if dated:
        when = session_time(turn["session_date_time"])
        text = f"{text} [said on {when.day} {when:%B %Y}]"
    return text


def conversations() -> list[str]:
    return CONVERSATIONS or sorted(p.stem for p in (DATA / "turns").glob("*.jsonl"))


def load_turns(conv: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "turns" / f"{conv}.jsonl").open()]


def load_questions(conv: str) -> list[Question]:
    questions = []
    for line in (DATA / "questions" / f"{conv}.jsonl").open():
        q = json.loads(line)
        if q["category"] in CATEGORIES:
            evidence = tuple(dict.fromkeys(str(e).strip() for e in q["evidence"] if str(e).strip()))
            questions.append(Question(conv, q["qa_index"], q["question"], q["category"], evidence))
    return questions


@dataclass
class Services:
    pair: ServicePair
    memory_channel: grpc.aio.Channel
    retrieval_channel: grpc.aio.Channel

    @property
    def stub(self) -> MemoryStub:
        return memory_service_pb2_grpc.MemoryServiceStub(self.memory_channel)

    @property
    def retrieval_stub(self) -> RetrievalStub:
        return retrieval_pb2_grpc.RetrievalServiceStub(self.retrieval_channel)

    async def close(self) -> None:
        await self.memory_channel.close(None)
        await self.retrieval_channel.close(None)
        await self.pair.stop()


async def start_services(root: Path, embedder: OnnxSentenceEmbedder, settings: dict[str, Any]) -> Services:
    memory_settings = {"log_json": False, **settings}
    pair = ServicePair(root, embedder=embedder, memory_settings=memory_settings, quick_retries=False)
    await pair.start()
    return Services(
        pair,
        grpc.aio.insecure_channel(pair.memory_address),
        grpc.aio.insecure_channel(pair.retrieval_address),
    )


async def load_conversation(stub: MemoryStub, conv: str, *, dated: bool = False) -> Corpus:
    agent = await stub.CreateAgent(mpb.CreateAgentRequest(agent=rpb_mem.Agent(name=f"locomo-{conv}")))
    corpus = Corpus(conv, agent.id)
    turns = load_turns(conv)
    for start in range(0, len(turns), APPEND_BATCH):
        batch = turns[start : start + APPEND_BATCH]
        messages = []
        for turn in batch:
            stamp = Timestamp()
            stamp.FromDatetime(session_time(turn["session_date_time"]))
            messages.append(
                rpb_mem.Message(
                    role=rpb_mem.MESSAGE_ROLE_USER,
                    name=turn["speaker"],
                    content=turn_content(turn, dated=dated),
                    create_time=stamp,
                )
            )
        last = start + APPEND_BATCH >= len(turns)
        response = await stub.AppendMessages(
            mpb.AppendMessagesRequest(agent_id=agent.id, messages=messages, wait_searchable=last),
            timeout=600 if last else 60,
        )
        for turn, message in zip(batch, response.messages, strict=True):
            corpus.dia_of[message.id] = turn["dia_id"]
            corpus.id_of[turn["dia_id"]] = message.id
    return corpus


async def search(
    stub: MemoryStub,
    agent_id: str,
    query: str,
    mode: str,
    limit: int,
    *,
    window: tuple[Timestamp, Timestamp] | None = None,
) -> list[str]:
    request = mpb.SearchMessagesRequest(agent_id=agent_id, query=query, mode=MODES[mode], limit=limit)
    if window:
        request.start_time.CopyFrom(window[0])
        request.end_time.CopyFrom(window[1])
    response = await stub.SearchMessages(request)
    return [hit.message.id for hit in response.hits]


async def search_leg(
    stub: MemoryStub, agent_id: str, query: str, leg: str, limit: int
) -> list[tuple[str, float]]:
    """One leg's ranking through SearchMessages (``leg`` "vector" or "fts"): (message id, the leg's own
    score), what a local fusion needs to reproduce the service's."""
    request = mpb.SearchMessagesRequest(agent_id=agent_id, query=query, mode=MODES[leg], limit=limit)
    response = await stub.SearchMessages(request)
    own = "vector_score" if leg == "vector" else "fts_score"
    return [(hit.message.id, getattr(hit.relevance, own)) for hit in response.hits]


def message_filter(agent_id: str) -> rpb.DocumentFilter:
    return rpb.DocumentFilter(tenant_id=TENANT, agent_ids=[agent_id], kinds=[rpb.DOCUMENT_KIND_MESSAGE])


@dataclass
class IndexRun:
    """One indexing of every conversation, and what was asked of it."""

    label: str
    corpora: dict[str, Corpus]
    legs: dict[str, dict[tuple[str, int], list[tuple[str, float]]]]  # leg -> question -> (id, score)
    index_seconds: float
    checks: dict[str, Any] = field(default_factory=dict)
    served_ranks: dict[tuple[str, int], Ranks] = field(default_factory=dict)  # hybrid SearchMessages
    temporal: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] | None = None
