"""A long haystack from LoCoMo: every conversation as one agent's recall (issue 32 item 2's check).

LongMemEval asks each question of ~500 turns of one user's history, where plain BM25 was measured
above Strata's hybrid with the previous turn indexed as context. This builds the nearest haystack
from the data at hand: the five LoCoMo conversations (2,760 turns) appended to ONE agent, each as a
conversation of its own (so a turn's context is the turn before it in its own conversation), and
every question asked of all of them. A hit counts only if it is an evidence turn of the question's
own conversation. Each question is asked through ``SearchMessages`` in text-only (BM25), vector-only
and hybrid mode (the served fusion), once with MemoryService's default indexing and once without the
previous turn as context (``recall_context_turns=0``, whose text-only mode is plain BM25 on each
turn); any@k per mode and category is written to ``bench/results/locomo_haystack.json`` with the
served hybrid's margin over plain BM25.

    .venv/bin/python -m bench.locomo.haystack        # make bench-locomo runs it last
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from bench.locomo.selection import OBJECTIVE, Question, Ranks, evidence_ranks, scored, table
from bench.locomo.services import (
    APPEND_BATCH,
    BENCH_SETTINGS,
    conversations,
    load_questions,
    load_turns,
    search,
    session_time,
    start_services,
    turn_content,
)
from bench.perf.serve import bench_precision
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import resources_pb2 as rpb_mem
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

RESULTS = Path(__file__).parents[1] / "results" / "locomo_haystack.json"
LIMIT = 20
MODES = ("fts", "vector", "hybrid")
INDEXINGS: dict[str, dict[str, Any]] = {"served": {}, "no context": {"recall_context_turns": 0}}
"""MemoryService settings of each haystack: its defaults, and the same without the previous turn."""


async def load_haystack(stub: MemoryStub) -> tuple[str, dict[str, tuple[str, str]]]:
    """Every conversation appended to one agent; returns its id and message id -> (conversation, dia)."""
    agent = await stub.CreateAgent(mpb.CreateAgentRequest(agent=rpb_mem.Agent(name="locomo-haystack")))
    turn_of: dict[str, tuple[str, str]] = {}
    convs = conversations()
    for conv in convs:
        await stub.CreateConversation(mpb.CreateConversationRequest(agent_id=agent.id, conversation_id=conv))
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
                        content=turn_content(turn),
                        create_time=stamp,
                    )
                )
            last = conv == convs[-1] and start + APPEND_BATCH >= len(turns)
            response = await stub.AppendMessages(
                mpb.AppendMessagesRequest(
                    agent_id=agent.id, conversation_id=conv, messages=messages, wait_searchable=last
                ),
                timeout=900 if last else 60,
            )
            for turn, message in zip(batch, response.messages, strict=True):
                turn_of[message.id] = (conv, turn["dia_id"])
        print(f"  haystack: appended {conv}", flush=True)
    return agent.id, turn_of


def ranks_of(question: Question, ids: list[str], turn_of: dict[str, tuple[str, str]]) -> Ranks:
    """Where the question's evidence came; a turn of another conversation is never evidence."""
    return evidence_ranks(
        question,
        [dia if conv == question.conv else f"{conv}:{dia}" for conv, dia in (turn_of[i] for i in ids)],
    )


async def one_haystack(
    embedder: OnnxSentenceEmbedder, settings: dict[str, Any], questions: list[Question]
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="haystack-") as tmp:
        services = await start_services(Path(tmp), embedder, BENCH_SETTINGS | settings)
        try:
            started = time.perf_counter()
            agent_id, turn_of = await load_haystack(services.stub)
            indexed = time.perf_counter() - started
            out: dict[str, Any] = {"turns": len(turn_of), "index_seconds": round(indexed, 1)}
            for mode in MODES:
                ranks = {
                    q.key: ranks_of(q, await search(services.stub, agent_id, q.text, mode, LIMIT), turn_of)
                    for q in questions
                }
                out[mode] = table(questions, ranks)
            hybrid, bm25 = out["hybrid"]["overall"][OBJECTIVE], out["fts"]["overall"][OBJECTIVE]
            out[f"hybrid_minus_bm25_{OBJECTIVE}"] = round(hybrid - bm25, 4)
            return out
        finally:
            await services.close()


async def run() -> dict[str, Any]:
    started = time.perf_counter()
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    questions, excluded = scored(q for conv in conversations() for q in load_questions(conv))
    result: dict[str, Any] = {
        "benchmark": "LoCoMo as one long haystack: every conversation in one agent (SearchMessages)",
        "conversations": conversations(),
        "questions_scored": len(questions),
        "questions_excluded_no_evidence": len(excluded),
        "served_recall": {k: v for k, v in MemorySettings().model_dump().items() if k.startswith("recall_")},
    }
    for name, settings in INDEXINGS.items():
        print(f"haystack indexed {name}: {settings}", flush=True)
        result[name] = await one_haystack(embedder, settings, questions)
        at10 = {mode: result[name][mode]["overall"][OBJECTIVE] for mode in MODES}
        print(f"  {name}: {OBJECTIVE} {at10}", flush=True)
    plain_bm25 = result["no context"]["fts"]["overall"][OBJECTIVE]  # the text leg on the turn alone
    result[f"served_hybrid_minus_plain_bm25_{OBJECTIVE}"] = round(
        result["served"]["hybrid"]["overall"][OBJECTIVE] - plain_bm25, 4
    )
    result["run_seconds"] = round(time.perf_counter() - started, 1)
    result["load_average"] = os.getloadavg()
    return result


def main() -> None:
    result = asyncio.run(run())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
