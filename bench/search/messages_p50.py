"""Search latency through SearchMessages at LoCoMo scale, and where it goes (issue 32 item 5).

RetrievalService and MemoryService run as child processes (``bench.perf.serve``: the real services,
ONNX MiniLM, edge shard, Tantivy, SQLite) with their default settings plus ``--env`` (e.g.
``STRATA_RETRIEVAL_QUERY_EMBEDDING_CACHE=0``). The LoCoMo conversations (``../shared/data/locomo``,
2,760 turns) are appended as one agent each, as ``make bench-locomo`` does. Then, one call in flight,
each over gRPC from this process:

* **first ask**: every sampled question through hybrid ``SearchMessages`` (limit 10), each followed
  by RetrievalService ``Search`` with the same request MemoryService sends but a text never asked
  before (the question with a space appended: the same tokens, another cache key), so neither reuses
  a query vector;
* **asked again**: the same questions once more, each through ``SearchMessages`` and ``Search``
  (hybrid, vector-only, text-only) and, call by call beside them, ``SearchMessages`` and ``Search``
  with a text never asked (spaces appended), so a kept query vector and a fresh embedding meet the
  same load; the median of their per-question ratios is reported (below 1: reuse paid);
* **floor**: a health check on each service (a gRPC round trip and nothing else);
* **embedding alone**: the same model in this process embedding each question (``embed_query``).

p50/p90 in ms of each are written under ``--label`` into ``bench/results/search_messages.json``
(``make bench`` runs it as ``served``), beside the 4 ms target for SearchMessages.

    .venv/bin/python -m bench.search.messages_p50 --label served
    .venv/bin/python -m bench.search.messages_p50 --label no_cache \
        --env STRATA_RETRIEVAL_QUERY_EMBEDDING_CACHE=0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.locomo.selection import scored
from bench.locomo.services import conversations, load_conversation, load_questions, message_filter
from bench.perf.processes import ServerProcess
from bench.perf.serve import MODEL_CACHE, bench_precision
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

RESULTS = Path(__file__).resolve().parents[1] / "results" / "search_messages.json"
TARGET_P50_MS = 4.0
LIMIT = 10
WARMUP = 20
SERVER_ENV = {"STRATA_MEMORY_OUTBOX_BATCH_SIZE": "32"}
"""Small outbox batches: one UpsertDocuments stays inside its deadline on a busy 2-core machine."""


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 3),
        "p90_ms": round(statistics.quantiles(values, n=10)[-1], 3),
        "calls": len(values),
    }


def timed(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


async def load(address: str) -> dict[str, str]:
    """Every conversation appended as one agent; returns conversation -> agent id."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        return {conv: (await load_conversation(stub, conv)).agent_id for conv in conversations()}


def direct_request(text: str, agent_id: str, mode: rpb.SearchMode.ValueType) -> rpb.SearchRequest:
    """The Search MemoryService sends for a hybrid recall of ``text`` (its default weights)."""
    s = MemorySettings()
    request = rpb.SearchRequest(
        query=text,
        mode=mode,
        filter=message_filter(agent_id),
        top_k=LIMIT,
        rrf_k=s.recall_rrf_k,
        vector_weight=s.recall_vector_weight,
        fts_weight=s.recall_fts_weight,
    )
    if mode == rpb.SEARCH_MODE_HYBRID:
        request.vector_depth = request.fts_depth = max(s.recall_candidate_depth, LIMIT)
    return request


def measure(memory_address: str, retrieval_address: str, asked: list[tuple[str, str]]) -> dict[str, Any]:
    """``asked``: (agent id, question) pairs. The passes described in the module docstring."""
    with (
        grpc.insecure_channel(memory_address) as memory_channel,
        grpc.insecure_channel(retrieval_address) as retrieval_channel,
    ):
        memory = memory_service_pb2_grpc.MemoryServiceStub(memory_channel)
        retrieval = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)

        def messages(agent_id: str, text: str) -> float:
            request = mpb.SearchMessagesRequest(
                agent_id=agent_id, query=text, mode=mpb.SEARCH_MODE_HYBRID, limit=LIMIT
            )
            return timed(lambda: memory.SearchMessages(request))

        def search(
            agent_id: str, text: str, mode: rpb.SearchMode.ValueType = rpb.SEARCH_MODE_HYBRID
        ) -> float:
            request = direct_request(text, agent_id, mode)
            return timed(lambda: retrieval.Search(request))

        for i in range(WARMUP):
            messages(asked[0][0], f"warm-up question number {i}")
            search(asked[0][0], f"warm-up query number {i}")
        first: dict[str, list[float]] = {"search_messages": [], "retrieval_search": []}
        for agent_id, text in asked:
            first["search_messages"].append(messages(agent_id, text))
            first["retrieval_search"].append(search(agent_id, f"{text} "))
        again: dict[str, list[float]] = {
            "search_messages": [],
            "search_messages_new_text": [],
            "retrieval_search": [],
            "retrieval_search_new_text": [],
            "retrieval_vector_only": [],
            "retrieval_text_only": [],
        }
        for agent_id, text in asked:  # each kept vector beside a text never asked, call by call
            again["search_messages"].append(messages(agent_id, text))
            again["search_messages_new_text"].append(messages(agent_id, f"{text}  "))
            again["retrieval_search"].append(search(agent_id, text))
            again["retrieval_search_new_text"].append(search(agent_id, f"{text}   "))
            again["retrieval_vector_only"].append(search(agent_id, text, rpb.SEARCH_MODE_VECTOR))
            again["retrieval_text_only"].append(search(agent_id, text, rpb.SEARCH_MODE_FTS))
        floor: dict[str, list[float]] = {"memory_health": [], "retrieval_health": []}
        check = health_pb2.HealthCheckRequest()
        memory_health = health_pb2_grpc.HealthStub(memory_channel)
        retrieval_health = health_pb2_grpc.HealthStub(retrieval_channel)
        for _ in asked:
            floor["memory_health"].append(timed(lambda: memory_health.Check(check)))
            floor["retrieval_health"].append(timed(lambda: retrieval_health.Check(check)))
    paired = {
        name: round(
            statistics.median(a / b for a, b in zip(again[name], again[f"{name}_new_text"], strict=True)), 3
        )
        for name in ("search_messages", "retrieval_search")
    }
    return {
        "asked_again_over_new_text_median_ratio": paired,
        "first_ask": {name: summary(v) for name, v in first.items()},
        "asked_again": {name: summary(v) for name, v in again.items()},
        "floor": {name: summary(v) for name, v in floor.items()},
    }


def embedding_alone(texts: Sequence[str]) -> dict[str, float]:
    model = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=bench_precision(), threads=2)
    for text in texts[:WARMUP]:
        model.embed_query(text)
    times = []
    for text in texts:
        began = time.perf_counter()
        model.embed_query(text)
        times.append((time.perf_counter() - began) * 1000)
    return summary(times)


def run(work: Path, *, questions: int = 400, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start both services under ``work``, load LoCoMo, and measure; returns the figures."""
    started = time.perf_counter()
    env = SERVER_ENV | (env or {})
    retrieval = ServerProcess(["retrieval", "--data-dir", str(work / "retrieval")], work / "r.log", env=env)
    with retrieval:
        database = f"sqlite:///{work}/memory.sqlite3"
        memory_args = ["memory", "--database-url", database, "--retrieval-address", retrieval.address]
        with ServerProcess(memory_args, work / "m.log", env=env) as memory:
            agents = asyncio.run(load(memory.address))
            everything, _ = scored(q for conv in agents for q in load_questions(conv))
            step = max(1, len(everything) // questions)
            asked = [(agents[q.conv], q.text) for q in everything[::step][:questions]]
            figures = measure(memory.address, retrieval.address, asked)
    figures["embedding_alone"] = summary([]) if not asked else embedding_alone([t for _, t in asked])
    figures |= {
        "target_p50_ms": TARGET_P50_MS,
        "questions": len(asked),
        "conversations": sorted(agents),
        "env": env,
        "load_average": os.getloadavg(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search.messages_p50")
    parser.add_argument("--label", default="served", help="where the figures go in the results file")
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--env", nargs="*", default=[], help="NAME=VALUE settings for both services")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="messages-p50-") as scratch:
        figures = run(Path(scratch), questions=args.questions, env=env)
    write(args.label, figures)
    print(json.dumps({args.label: figures}, indent=1))


def write(label: str, figures: dict[str, Any]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[label] = figures
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
