"""The LoCoMo benchmark's checks against the running services (bench/locomo/recall.py, step 3 and 5).

- :func:`fusion_checks`: the local fusion of the served setting must reproduce hybrid
  ``SearchMessages``' top 20 for every question; other settings, sent per request to RetrievalService
  ``Search``, must be reproduced too (questions in which MemoryService reads a period are left out of
  those: a direct Search has no such window).
- :func:`tool_check`: ``conversation_search`` (ExecuteTool) returns what ``SearchMessages`` does.
- :func:`latency`: hybrid ``SearchMessages`` against a direct ``Search`` with the same request.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.locomo import temporal as locomo_temporal
from bench.locomo.selection import Question, Setting, evidence_ranks, fuse_scored
from bench.locomo.services import BENCH_SETTINGS, Corpus, IndexRun, Services, message_filter, search
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.settings import MemorySettings

LIMIT = 20  # the hybrid top the checks and the grid compare
TOOL_CHECKS = 25
LATENCY_QUERIES = 200
# Other settings checked against RetrievalService Search with per-request weights.
DIRECT_CHECKS = [(1.0, 60.0, 20), (0.25, 30.0, 50)]


async def fusion_checks(
    services: Services, run: IndexRun, questions: Sequence[Question], served: Setting
) -> dict[str, Any]:
    """Local fusion against the service: the default setting against hybrid SearchMessages, other
    settings against RetrievalService Search with their weights sent per request."""
    checks: dict[str, Any] = {}
    same = 0
    for q in questions:
        got = await search(services.stub, run.corpora[q.conv].agent_id, q.text, "hybrid", LIMIT)
        run.served_ranks[q.key] = evidence_ranks(q, [run.corpora[q.conv].dia_of[i] for i in got])
        same += fuse_scored(run.legs["vector"][q.key], run.legs["fts"][q.key], served)[:LIMIT] == got
    checks["served_hybrid"] = {
        "setting": served.as_dict(),
        "questions": len(questions),
        "identical_top20": same,
    }
    direct = []
    # MemoryService searches a question naming a period within it (recall_query_periods); a direct
    # Search has no such window, so those questions are left out of this comparison
    periods = BENCH_SETTINGS.get("recall_query_periods", MemorySettings().recall_query_periods)
    plain = [q for q in questions if not (periods and locomo_temporal.names_a_period(q))]
    for weight, k, depth in DIRECT_CHECKS:
        setting = Setting(served.context, weight, k, depth, method=served.method)
        same = 0
        for q in plain:
            response = await services.retrieval_stub.Search(
                rpb.SearchRequest(
                    query=q.text,
                    mode=rpb.SEARCH_MODE_HYBRID,
                    filter=message_filter(run.corpora[q.conv].agent_id),
                    top_k=LIMIT,
                    rrf_k=k,
                    vector_weight=weight,
                    fts_weight=setting.fts_weight,
                    vector_depth=depth,
                    fts_depth=depth,
                )
            )
            got = [hit.document.id for hit in response.hits]
            same += fuse_scored(run.legs["vector"][q.key], run.legs["fts"][q.key], setting)[:LIMIT] == got
        direct.append(
            {
                "setting": setting.as_dict(),
                "questions": len(plain),
                "left_out_naming_a_period": len(questions) - len(plain),
                "identical_top20": same,
            }
        )
    checks["direct_search"] = direct
    return checks


async def tool_check(
    stub: MemoryStub, corpora: Mapping[str, Corpus], questions: Sequence[Question]
) -> dict[str, Any]:
    """``conversation_search`` (ExecuteTool) returns the same top hits as SearchMessages hybrid."""
    step = max(1, len(questions) // TOOL_CHECKS)
    sample = list(questions)[::step][:TOOL_CHECKS]
    same = 0
    for q in sample:
        corpus = corpora[q.conv]
        response = await stub.SearchMessages(
            mpb.SearchMessagesRequest(
                agent_id=corpus.agent_id, query=q.text, mode=mpb.SEARCH_MODE_HYBRID, limit=10
            )
        )
        expected = [hit.message.content for hit in response.hits]
        tool = await stub.ExecuteTool(
            mpb.ExecuteToolRequest(
                agent_id=corpus.agent_id,
                tool_name="conversation_search",
                arguments=json.dumps({"query": q.text, "limit": 10}),
            )
        )
        got = [r["content"] for r in json.loads(tool.text)["results"]] if tool.ok else []
        same += got == expected
    return {"questions": len(sample), "identical_top10": same}


async def latency(
    services: Services, corpora: Mapping[str, Corpus], questions: Sequence[Question]
) -> dict[str, Any]:
    """Hybrid SearchMessages (limit 10) vs a direct RetrievalService Search with the same request, each
    with a text not asked before (the question with one or two spaces appended: the same words, but
    no query vector kept from the legs' searches), so both pay for embedding the query."""
    stub, direct = services.stub, services.retrieval_stub
    step = max(1, len(questions) // LATENCY_QUERIES)
    sample = list(questions)[::step][:LATENCY_QUERIES]
    through: list[float] = []
    straight: list[float] = []
    s = MemorySettings()
    for i, q in enumerate(sample + sample[:10]):  # the first 10 warm up
        corpus = corpora[q.conv]
        memory_request = mpb.SearchMessagesRequest(
            agent_id=corpus.agent_id, query=f"{q.text}  ", mode=mpb.SEARCH_MODE_HYBRID, limit=10
        )
        direct_request = rpb.SearchRequest(
            query=f"{q.text} ",
            mode=rpb.SEARCH_MODE_HYBRID,
            filter=message_filter(corpus.agent_id),
            top_k=10,
            rrf_k=s.recall_rrf_k,
            vector_weight=s.recall_vector_weight,
            fts_weight=s.recall_fts_weight,
            vector_depth=max(s.recall_candidate_depth, 10),
            fts_depth=max(s.recall_candidate_depth, 10),
        )
        t0 = time.perf_counter()
        await stub.SearchMessages(memory_request)
        t1 = time.perf_counter()
        await direct.Search(direct_request)
        t2 = time.perf_counter()
        if i >= 10 or len(sample) <= 10:
            through.append((t1 - t0) * 1000)
            straight.append((t2 - t1) * 1000)
    p50_memory, p50_direct = statistics.median(through), statistics.median(straight)
    return {
        "queries": len(through),
        "memory_search_messages_ms": {"p50": round(p50_memory, 2), "p95": round(percentile(through, 95), 2)},
        "direct_retrieval_search_ms": {
            "p50": round(p50_direct, 2),
            "p95": round(percentile(straight, 95), 2),
        },
        "ratio_p50": round(p50_memory / p50_direct, 2),
        "target_ratio_p50": 2.0,
    }


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
