"""How much a message's own words should count beside its previous turn in the full-text leg
(issue 32 item 2).

The full-text leg indexes a message with its context (its previous turn) as one text, and the message
alone again; a query word found in the message alone adds ``text_own_weight`` of its BM25 score there
(Tantivy's ``own_text`` field, :mod:`strata_retrieval.text_index`; the server engine's ``bm25_own``).
Weight 0 is the text and its context scored as one (the design before). The weight is read at search
time, so one index answers for every weight: RetrievalService is restarted over the same data folder
with each weight in turn.

Two corpora, both loaded through MemoryService's public API with its default indexing:

1. LoCoMo as ``bench.locomo.recall`` loads it (one agent per conversation): the text leg (top 100)
   of every question at each weight, the vector leg once; fused here as RetrievalService fuses them
   over ``bench.locomo.recall``'s fusion grid, and each weight scored by leave-one-conversation-out
   (any@10; the fusion setting chosen on the other four conversations), and the weight chosen the
   same way.
2. The long haystack of ``bench.locomo.haystack`` (all five conversations in one agent): text-only
   and hybrid ``SearchMessages`` at each weight (plain BM25, the turn without context, is
   ``bench.locomo.haystack``'s reference).

    nice -n 19 .venv/bin/python -m bench.locomo.context_field

Writes ``bench/results/locomo_context_field.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.locomo import haystack
from bench.locomo.recall import DEPTHS, LEG_LIMIT, RRF_KS, VECTOR_WEIGHTS
from bench.locomo.selection import (
    OBJECTIVE,
    Grid,
    Question,
    Ranks,
    Setting,
    evidence_ranks,
    fuse,
    scored,
    table,
)
from bench.locomo.services import (
    BENCH_SETTINGS,
    Services,
    conversations,
    load_conversation,
    load_questions,
    search,
    start_services,
)
from bench.perf.serve import bench_precision
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.model import DEFAULT_OWN_TEXT_WEIGHT

RESULTS = Path(__file__).parents[1] / "results" / "locomo_context_field.json"
WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5, 1.0]


async def with_weight(services: Services, weight: float) -> None:
    """RetrievalService restarted over the same data folder, its text leg weighing own words ``weight``."""
    await services.pair.stop_retrieval()
    await services.pair.start_retrieval(text_own_weight=weight)


async def locomo_legs(
    embedder: OnnxSentenceEmbedder, questions: list[Question]
) -> tuple[dict[float, dict[tuple[str, int], list[str]]], dict[tuple[str, int], list[str]], dict[str, Any]]:
    """Per weight, each question's text-leg ranking (message ids); the vector leg's; dia of each id."""
    with tempfile.TemporaryDirectory(prefix="context-field-") as tmp:
        services = await start_services(Path(tmp), embedder, dict(BENCH_SETTINGS))
        try:
            corpora = {conv: await load_conversation(services.stub, conv) for conv in conversations()}
            print("  locomo: indexed", flush=True)
            vector = {
                q.key: await search(services.stub, corpora[q.conv].agent_id, q.text, "vector", LEG_LIMIT)
                for q in questions
            }
            fts: dict[float, dict[tuple[str, int], list[str]]] = {}
            for weight in WEIGHTS:
                await with_weight(services, weight)
                fts[weight] = {
                    q.key: await search(services.stub, corpora[q.conv].agent_id, q.text, "fts", LEG_LIMIT)
                    for q in questions
                }
                print(f"  locomo: text leg at weight {weight}", flush=True)
            dia_of = {conv: corpus.dia_of for conv, corpus in corpora.items()}
            return fts, vector, dia_of
        finally:
            await services.close()


def locomo_scores(
    questions: list[Question],
    fts: dict[float, dict[tuple[str, int], list[str]]],
    vector: dict[tuple[str, int], list[str]],
    dia_of: dict[str, Any],
) -> dict[str, Any]:
    """Leave-one-conversation-out any@10 per weight (fusion chosen per fold), and with the weight
    chosen per fold too; the text leg alone and the served fusion at each weight."""

    def ranks_of(ids: list[str], q: Question) -> Ranks:
        return evidence_ranks(q, [dia_of[q.conv][i] for i in ids])

    ranks: dict[Setting, dict[tuple[str, int], Ranks]] = {}
    for weight in WEIGHTS:
        for vector_weight in VECTOR_WEIGHTS:
            for k in RRF_KS:
                for depth in DEPTHS:
                    setting = Setting(f"text@{weight:g}", vector_weight, k, depth)
                    ranks[setting] = {
                        q.key: ranks_of(fuse(vector[q.key], fts[weight][q.key], setting)[:20], q)
                        for q in questions
                    }
    grid = Grid(questions, ranks)
    memory = MemorySettings()
    out: dict[str, Any] = {"per_weight": {}}
    for weight in WEIGHTS:
        among = [s for s in grid.settings if s.context == f"text@{weight:g}"]
        label = f"text@{weight:g}"
        fusion = (memory.recall_vector_weight, memory.recall_rrf_k, memory.recall_candidate_depth)
        served = Setting(label, *fusion)
        loco = grid.leave_one_out(served, among)
        chosen = {fold["held_out"]: Setting(**fold["chosen"]) for fold in loco["folds"]}
        text_leg = {q.key: ranks_of(fts[weight][q.key], q) for q in questions}
        out["per_weight"][f"{weight:g}"] = {
            "loco_held_out": loco["held_out_pooled"][OBJECTIVE],
            "loco_per_category": table(questions, {q.key: ranks[chosen[q.conv]][q.key] for q in questions}),
            "served_fusion": table(questions, ranks[served])["overall"],
            "text_leg": table(questions, text_leg)["overall"],
        }
        print(f"  weight {weight:g}: LOCO {OBJECTIVE} {loco['held_out_pooled'][OBJECTIVE]}", flush=True)
    both = grid.leave_one_out(Setting(f"text@{DEFAULT_OWN_TEXT_WEIGHT:g}", 0.35, 30.0, 100))
    out["loco_weight_chosen_per_fold"] = {
        "held_out": both["held_out_pooled"],
        "chosen": [fold["chosen"] for fold in both["folds"]],
    }
    return out


async def haystack_scores(embedder: OnnxSentenceEmbedder, questions: list[Question]) -> dict[str, Any]:
    """Text-only and hybrid any@10 on the one-agent haystack at each weight (0: as one text)."""
    with tempfile.TemporaryDirectory(prefix="context-field-haystack-") as tmp:
        services = await start_services(Path(tmp), embedder, dict(BENCH_SETTINGS))
        try:
            agent_id, turn_of = await haystack.load_haystack(services.stub)
            out: dict[str, Any] = {"turns": len(turn_of)}
            for weight in WEIGHTS:
                await with_weight(services, weight)
                row: dict[str, Any] = {}
                for mode in ("fts", "hybrid"):
                    ranks = {
                        q.key: haystack.ranks_of(
                            q, await search(services.stub, agent_id, q.text, mode, haystack.LIMIT), turn_of
                        )
                        for q in questions
                    }
                    row[mode] = table(questions, ranks)
                out[f"{weight:g}"] = row
                print(
                    f"  haystack weight {weight:g}: fts {row['fts']['overall'][OBJECTIVE]} "
                    f"hybrid {row['hybrid']['overall'][OBJECTIVE]}",
                    flush=True,
                )
            return out
        finally:
            await services.close()


async def run() -> dict[str, Any]:
    started = time.perf_counter()
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    questions, _ = scored(q for conv in conversations() for q in load_questions(conv))
    fts, vector, dia_of = await locomo_legs(embedder, questions)
    result: dict[str, Any] = {
        "benchmark": "own words beside the previous turn in the full-text leg (LoCoMo LOCO, long haystack)",
        "weights": WEIGHTS,
        "objective": OBJECTIVE,
        "locomo": locomo_scores(questions, fts, vector, dia_of),
        "haystack": await haystack_scores(embedder, questions),
    }
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
