"""LoCoMo evidence recall beside other tenants' conversations (issue 26 item 5).

Run: ``python -m bench.locomo.tenant_scoring [--engine embedded|server|both]``. Every LoCoMo
conversation is one agent's messages, appended through MemoryService exactly as ``bench.locomo``
does, laid out three ways on each engine:

- ``alone``: each conversation in a service pair of its own (nothing else in the index);
- ``one_tenant``: every conversation in one service pair and one tenant (as ``make bench-locomo``);
- ``tenant_each``: every conversation in one service pair, each in a tenant of its own
  (``x-strata-tenant``; MemoryService runs with auth off).

Every question of categories 1-4 with evidence goes through ``SearchMessages`` (fts and hybrid,
MemoryService's defaults, limit 20), and through RetrievalService ``Search`` in FTS mode (the same
filter) for the text leg's own BM25 scores of the top 20. Tenant-scoped BM25 means ``tenant_each``
scores exactly as ``alone`` (reported: questions whose top-20 BM25 scores differ), whatever the
other tenants hold, while ``one_tenant`` shares the statistics of the tenant's agents. Rankings
(``questions_ranked_unlike_alone``) also differ where scores tie: ties are broken by storage key
(a hash of tenant and message id) and fused ties by message id, which every run draws anew. The
server engine is qdrant-client's local mode (brute force: its durations say nothing about a Qdrant
server).

Writes ``bench/results/locomo_tenant_scoring.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc

from bench.locomo import engines as by_engine
from bench.locomo import served_checks
from bench.locomo import services as served
from bench.perf.serve import bench_precision
from bench.scifact.quality import EmbeddedOnce
from strata.memory.v1 import memory_service_pb2_grpc
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings
from strata_serving.tenancy import TENANT_KEY

RESULTS = Path(__file__).parents[1] / "results" / "locomo_tenant_scoring.json"
MODES = ("fts", "hybrid")
Ranked = dict[str, dict[tuple[str, int], list[str]]]  # mode -> question -> dia ids, best first
BM25 = "bm25_scores"  # RetrievalService's own FTS scores of the top 20, rounded to 5 places


class AsTenant:
    """A MemoryService stub whose every call names ``tenant`` (auth off: any name is a tenant)."""

    def __init__(self, stub: Any, tenant: str) -> None:
        self._stub, self._metadata = stub, ((TENANT_KEY, tenant),)

    def __getattr__(self, name: str) -> Any:
        return functools.partial(getattr(self._stub, name), metadata=self._metadata)


async def index_and_ask(
    engine: str, embedder: EmbeddedOnce, convs: Sequence[str], questions: Sequence[Any], tenant_each: bool
) -> Ranked:
    """One service pair holding ``convs`` (each in its own tenant if ``tenant_each``); the rankings
    of the questions about them."""
    settings = by_engine.ENGINES[engine]
    ranked: Ranked = {mode: {} for mode in (*MODES, BM25)}
    with tempfile.TemporaryDirectory(prefix=f"locomo-tenants-{engine}-") as tmp:
        retrieval = RetrievalApp(
            RetrievalSettings(address="127.0.0.1:0", data_dir=Path(tmp) / "r", log_json=False, **settings),
            embedder=embedder,
        )
        await retrieval.start()
        memory = await start_memory_server(
            MemorySettings(
                address="127.0.0.1:0",
                database_url=f"sqlite:///{tmp}/memory.sqlite3",
                retrieval_address=f"127.0.0.1:{retrieval.server.port}",
                log_json=False,
                **served.BENCH_SETTINGS,
            )
        )
        try:
            async with grpc.aio.insecure_channel(memory.address) as channel:
                stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
                stubs: dict[str, Any] = {
                    conv: AsTenant(stub, f"locomo-{conv}" if tenant_each else "default") for conv in convs
                }
                corpora = {conv: await served.load_conversation(stubs[conv], conv) for conv in convs}
                for q in questions:
                    if q.conv in corpora:
                        corpus = corpora[q.conv]
                        for mode in MODES:
                            ids = await served.search(
                                stubs[q.conv], corpus.agent_id, q.text, mode, served_checks.LIMIT
                            )
                            ranked[mode][(q.conv, q.index)] = [corpus.dia_of[i] for i in ids]
                        ranked[BM25][(q.conv, q.index)] = await _bm25_scores(
                            retrieval, stubs[q.conv], corpus, q.text
                        )
        finally:
            await memory.close()
            await retrieval.stop()
    return ranked


async def _bm25_scores(retrieval: RetrievalApp, stub: AsTenant, corpus: Any, text: str) -> list[str]:
    """The text leg's own scores of the agent's best 20 messages for ``text`` (RetrievalService
    ``Search`` in FTS mode, the tenant's filter as MemoryService sends it)."""
    tenant = dict(stub._metadata)[TENANT_KEY]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{retrieval.server.port}") as channel:
        found = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Search(
            rpb.SearchRequest(
                query=text,
                mode=rpb.SEARCH_MODE_FTS,
                top_k=served_checks.LIMIT,
                filter=rpb.DocumentFilter(
                    tenant_id=tenant, agent_ids=[corpus.agent_id], kinds=[rpb.DOCUMENT_KIND_MESSAGE]
                ),
            )
        )
    return [f"{hit.fts_score:.5f}" for hit in found.hits]


async def run_engine(
    engine: str, embedder: EmbeddedOnce, convs: Sequence[str], questions: Sequence[Any]
) -> Any:
    started = time.perf_counter()
    layouts: dict[str, Ranked] = {"alone": {mode: {} for mode in (*MODES, BM25)}}
    for conv in convs:
        alone = await index_and_ask(engine, embedder, [conv], questions, tenant_each=False)
        for mode in (*MODES, BM25):
            layouts["alone"][mode].update(alone[mode])
    layouts["one_tenant"] = await index_and_ask(engine, embedder, convs, questions, tenant_each=False)
    layouts["tenant_each"] = await index_and_ask(engine, embedder, convs, questions, tenant_each=True)
    result: dict[str, Any] = {"seconds": round(time.perf_counter() - started, 1), "layouts": {}}
    for name, ranked in layouts.items():
        result["layouts"][name] = {
            mode: {
                **by_engine.recall(questions, ranked[mode])["overall"],
                "questions_ranked_unlike_alone": sum(
                    ranked[mode][key] != layouts["alone"][mode][key] for key in ranked[mode]
                ),
            }
            for mode in MODES
        } | {
            "questions_with_bm25_scores_unlike_alone": sum(
                ranked[BM25][key] != layouts["alone"][BM25][key] for key in ranked[BM25]
            )
        }
    return result


async def run(engines: Sequence[str], command: str) -> dict[str, Any]:
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = EmbeddedOnce(
        OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    )
    convs = by_engine.conversations()
    questions = [q for conv in convs for q in served.load_questions(conv) if q.evidence]
    report: dict[str, Any] = {
        "benchmark": "LoCoMo evidence recall alone, beside the tenant's other agents, beside other tenants",
        "command": command,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg(),
        "conversations": len(convs),
        "questions": len(questions),
        "engines": {},
    }
    for engine in engines:
        report["engines"][engine] = await run_engine(engine, embedder, convs, questions)
        print(engine, json.dumps(report["engines"][engine]), flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--engine", choices=[*by_engine.ENGINES, "both"], default="both")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    engines = list(by_engine.ENGINES) if args.engine == "both" else [args.engine]
    command = "python -m bench.locomo.tenant_scoring" + (
        f" --engine {args.engine}" if args.engine != "both" else ""
    )
    report = asyncio.run(run(engines, command))
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
