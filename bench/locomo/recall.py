"""LoCoMo evidence recall through MemoryService's public gRPC API (issue 4 item 7, issue 18 item 4).

Run: ``make bench-locomo`` (``python -m bench.locomo.recall``). Steps, each bounded:

1. Index every conversation in ``../shared/data/locomo`` twice, each time through a fresh
   RetrievalService + MemoryService pair in this process (free loopback ports, temporary folder),
   with the previous turn as context (``recall_context_turns=1``) read by the text leg only, then by
   the vector leg only (``recall_context_legs``): between them they hold each leg with and without
   context (a third index when MemoryService's default is neither). One agent per conversation;
   every turn is a user message (``name`` = speaker, ``create_time`` = session date, content = text
   plus the shared image's caption), appended in batches, the last with ``wait_searchable``.
2. For every question of categories 1-4 fetch each leg's ranking (``SearchMessages`` vector and fts,
   limit 100) from each index. The grid fuses them here exactly as RetrievalService does
   (bench/locomo/selection.py): context mode (which index each leg comes from: none, vector only, text
   only, both) x vector weight x RRF k x depth. Defaults are chosen by leave-one-conversation-out.
3. On the served index, every question also goes through hybrid ``SearchMessages`` (limit 20); the
   local fusion of the default setting must reproduce its top 20 for every question, and the local
   fusion of a few other settings must reproduce RetrievalService ``Search`` with those weights sent
   per request. A sample goes through the ``conversation_search`` tool (ExecuteTool).
4. Temporal questions: the session date written into the indexed text (one more index), and the
   questions in which MemoryService reads a period (``recall_query_periods``) searched as served
   and with that reading overridden by a caller's range covering every session.
5. Latency: hybrid ``SearchMessages`` (limit 10) against a direct RetrievalService ``Search`` with the
   same request, interleaved, each with a text not asked before (one or two spaces appended), so
   neither reuses a query vector kept from an earlier search.

Questions that name no evidence turn are excluded from scoring (counted). Results are printed and
written to ``bench/results/locomo_recall.json`` and ``bench/LOCOMO.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from bench.locomo import report as locomo_report
from bench.locomo import temporal as locomo_temporal
from bench.locomo.selection import (
    Grid,
    Question,
    Ranks,
    Setting,
    evidence_ranks,
    fuse_scored,
    scored,
    served_fusion,
    table,
)
from bench.locomo.served_checks import LIMIT, fusion_checks, latency, tool_check
from bench.locomo.services import (
    BENCH_SETTINGS,
    IndexRun,
    conversations,
    load_conversation,
    load_questions,
    search_leg,
    start_services,
)
from bench.perf.serve import bench_precision
from strata_memory.indexing import documents
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.model import Fusion

RESULTS = Path(__file__).parents[1] / "results"
LEG_LIMIT = 100
# Search-time grid: vector weight (fts weight 1), RRF k, candidate depth per leg.
VECTOR_WEIGHTS = [1.0, 0.75, 0.5, 0.35, 0.25, 0.0]
RRF_KS = [5.0, 10.0, 20.0, 30.0, 60.0]
DEPTHS = [20, 50, 100]


def served_setting(context: str) -> Setting:
    s = MemorySettings()
    return Setting(
        context,
        s.recall_vector_weight,
        s.recall_rrf_k,
        s.recall_candidate_depth,
        s.recall_fts_weight,
        method=served_fusion().method.value,
    )


def served_context() -> str:
    s = MemorySettings()
    return s.recall_context_legs if s.recall_context_turns else "none"


INDEXINGS: dict[str, dict[str, Any]] = {
    "none": {"recall_context_turns": 0},
    "text": {"recall_context_turns": 1, "recall_context_legs": "text"},
    "vector": {"recall_context_turns": 1, "recall_context_legs": "vector"},
    "both": {"recall_context_turns": 1, "recall_context_legs": "both"},
}
"""MemoryService settings of each context mode (the previous turn as context)."""
LEG_SOURCES = {"none": ("text", "vector"), "text": ("text", "text"), "vector": ("vector", "vector")}
LEG_SOURCES["both"] = ("vector", "text")
"""Where each context mode's (vector leg, text leg) come from when it has no index of its own: the
text-only index has the vector leg without context, the vector-only one the text leg without."""


# ---------------------------------------------------------------------------- one index


async def run_index(
    embedder: OnnxSentenceEmbedder,
    label: str,
    settings: dict[str, Any],
    questions: Sequence[Question],
    *,
    served: Setting | None = None,
    dated: bool = False,
) -> IndexRun:
    """Index every conversation, fetch each leg's top 100 per question; when ``served`` is the setting
    this index serves by default, also check the local fusion against the service (step 3)."""
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        services = await start_services(Path(tmp), embedder, {**BENCH_SETTINGS, **settings})
        try:
            stub = services.stub
            started = time.perf_counter()
            corpora = {}
            for conv in conversations():
                corpora[conv] = await load_conversation(stub, conv, dated=dated)
                print(f"  [{label}] indexed {conv}: {len(corpora[conv].dia_of)} turns", flush=True)
            run = IndexRun(label, corpora, {"vector": {}, "fts": {}}, time.perf_counter() - started)
            for q in questions:
                for leg in ("vector", "fts"):
                    run.legs[leg][q.key] = await search_leg(
                        stub, corpora[q.conv].agent_id, q.text, leg, LEG_LIMIT
                    )
            if served is not None:
                run.checks = await fusion_checks(services, run, questions, served)
                run.checks["conversation_search"] = await tool_check(stub, corpora, questions)
                run.temporal = await locomo_temporal.date_filters(stub, corpora, questions, run.legs)
                run.latency = await latency(services, corpora, questions)
            return run
        finally:
            await services.close()


# ---------------------------------------------------------------------------- the grid


def leg_in(run: IndexRun, into: IndexRun, leg: str, key: tuple[str, int]) -> list[tuple[str, float]]:
    """``run``'s ranking of ``leg`` for a question, with message ids of ``into`` (same turns)."""
    if run is into:
        return run.legs[leg][key]
    dia_of, id_of = run.corpora[key[0]].dia_of, into.corpora[key[0]].id_of
    return [(id_of[dia_of[i]], score) for i, score in run.legs[leg][key]]


def grid_settings(mode: str) -> list[Setting]:
    """Every fusion the grid tries for one context mode: RRF over vector weight x k x depth, and the
    service's blend (its own alpha and rank k) over vector weight x depth."""
    rrf = [Setting(mode, w, k, depth) for w in VECTOR_WEIGHTS for k in RRF_KS for depth in DEPTHS]
    k = MemorySettings().recall_rrf_k  # under the blend k sets only each hit's rrf_score
    blend = Fusion.BLEND.value
    return rrf + [Setting(mode, w, k, depth, method=blend) for w in VECTOR_WEIGHTS for depth in DEPTHS]


def grid_ranks(
    runs: Mapping[str, IndexRun], questions: Sequence[Question]
) -> tuple[dict[Setting, dict[tuple[str, int], Ranks]], dict[str, dict[tuple[str, int], Ranks]]]:
    """Evidence ranks of every question under every setting (context mode x fusion), and under each
    leg alone with and without context."""
    out: dict[Setting, dict[tuple[str, int], Ranks]] = {}
    for mode in INDEXINGS:
        vector_from, fts_from = (mode, mode) if mode in runs else LEG_SOURCES[mode]
        vrun, frun = runs[vector_from], runs[fts_from]
        legs = {q.key: (vrun.legs["vector"][q.key], leg_in(frun, vrun, "fts", q.key)) for q in questions}
        dia_of = {conv: c.dia_of for conv, c in vrun.corpora.items()}
        for setting in grid_settings(mode):
            out[setting] = {
                q.key: evidence_ranks(
                    q, [dia_of[q.conv][i] for i in fuse_scored(*legs[q.key], setting)[:LIMIT]]
                )
                for q in questions
            }
    alone = {
        f"{leg} leg, {'with' if with_context else 'without'} context": {
            q.key: evidence_ranks(q, [run.corpora[q.conv].dia_of[i] for i, _ in run.legs[leg][q.key]])
            for q in questions
        }
        for leg, source in (("vector", 0), ("fts", 1))
        for with_context in (False, True)
        for run in [runs[LEG_SOURCES["none" if not with_context else "both"][source]]]
    }
    return out, alone


def loco_by_category(
    loco: Mapping[str, Any],
    ranks: Mapping[Setting, Mapping[tuple[str, int], Ranks]],
    questions: Sequence[Question],
) -> dict[str, Any]:
    """Held-out recall per category: each question ranked under the setting its fold chose."""
    chosen = {fold["held_out"]: Setting(**fold["chosen"]) for fold in loco["folds"]}
    return table(questions, {q.key: ranks[chosen[q.conv]][q.key] for q in questions})


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=RESULTS / "locomo_recall.json")
    parser.add_argument("--report", type=Path, default=Path(__file__).parents[1] / "LOCOMO.md")
    parser.add_argument("--no-dated", action="store_true", help="skip the index with dates in the text")
    parser.add_argument(
        "--without-query-periods",
        action="store_true",
        help="serve with recall_query_periods off (a period named in a question is only words)",
    )
    parser.add_argument(
        "--without-date-notes",
        action="store_true",
        help="index without the dates of time phrases (strata_memory.indexing.documents.date_notes "
        "replaced in this process): recall as before the notes",
    )
    args = parser.parse_args()
    if args.without_query_periods:
        BENCH_SETTINGS["recall_query_periods"] = False
    if args.without_date_notes:
        cast(Any, documents).date_notes = lambda text, said_at: ""
    result = asyncio.run(run(dated=not args.no_dated))
    result["variant"] = {
        "query_periods": not args.without_query_periods,
        "date_notes": not args.without_date_notes,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    args.report.write_text(locomo_report.markdown(result))
    print(f"\nwrote {args.output} and {args.report}")


async def run(*, dated: bool) -> dict[str, Any]:
    started = time.perf_counter()
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    everything = [q for conv in conversations() for q in load_questions(conv)]
    questions, excluded = scored(everything)
    context = served_context()
    served = served_setting(context)
    runs: dict[str, IndexRun] = {}
    for mode in dict.fromkeys(["text", "vector", context]):
        print(f"indexing with {INDEXINGS[mode]}", flush=True)
        runs[mode] = await run_index(
            embedder, mode, INDEXINGS[mode], questions, served=served if mode == context else None
        )
    served_run = runs[context]
    served_legs = {"vector": context in ("vector", "both"), "fts": context in ("text", "both")}
    ranks, alone = grid_ranks(runs, questions)
    grid = Grid(questions, ranks)
    loco = grid.leave_one_out(served)
    loco["held_out_per_category"] = loco_by_category(loco, ranks, questions)
    chosen = grid.best(grid.convs)
    dated_block: dict[str, Any] = {}
    if dated:
        print("indexing with the session date in the text", flush=True)
        dated_run = await run_index(embedder, "dated", INDEXINGS[context], questions, dated=True)
        dated_block = locomo_temporal.dated_text(
            questions,
            plain_run=served_run,
            dated_run=dated_run,
            setting=served,
            fuse=fuse_scored,
            evidence_ranks=evidence_ranks,
        )
    result = locomo_report.assemble(
        questions=questions,
        excluded=excluded,
        runs=runs,
        served_run=served_run,
        served=served,
        chosen=chosen,
        grid=grid,
        ranks=ranks,
        loco=loco,
        tables={
            "vector": table(
                questions, alone[f"vector leg, {'with' if served_legs['vector'] else 'without'} context"]
            ),
            "fts": table(questions, alone[f"fts leg, {'with' if served_legs['fts'] else 'without'} context"]),
            "hybrid": table(questions, served_run.served_ranks),
            "hybrid, LOCO-chosen setting": table(questions, ranks[chosen]),
        },
        alone={name: table(questions, r)["overall"] for name, r in alone.items()},
        temporal={"date_filters": served_run.temporal, "date_in_text": dated_block},
        embedder=embedder.name,
        settings=BENCH_SETTINGS,
        seconds=time.perf_counter() - started,
    )
    locomo_report.print_summary(result)
    return result


if __name__ == "__main__":
    main()
