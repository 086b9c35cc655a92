"""LoCoMo evidence recall on both retrieval engines, side by side (issue 15, item 4).

Run: ``python -m bench.locomo.engines [--engine embedded|server|both]`` (``make bench-locomo`` runs it
after ``bench.locomo.recall``, which chooses and measures the recall defaults on the embedded engine).
For each engine: RetrievalService and MemoryService in this process on free loopback ports, every
LoCoMo conversation appended as one agent's messages exactly as ``bench.locomo.recall`` does (its
helpers), then every question of categories 1-4 with evidence through ``SearchMessages`` in modes
vector, fts and hybrid (MemoryService's defaults, limit 20): evidence recall any@5/10/20 and
all@5/10/20, overall and per category.

``embedded`` is the default engine (Qdrant's engine in-process + Tantivy). ``server`` keeps both legs
in one Qdrant collection (BM25 sparse vectors with the IDF modifier), here through qdrant-client's
local mode, as no Qdrant server can be installed; its collection is rebuilt once after ingest (a new
generation behind the alias), which measures the mean message length for BM25's ``avg_len`` as the
service's rebuild does. Texts are embedded once per run: the second engine reuses the first one's
vectors. Local mode searches by brute force in Python, so the server engine's durations say nothing
about a Qdrant server; its recall is what a server computes.

Writes ``bench/results/locomo_engines.json`` and ``bench/results/locomo_engines.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc

from bench.locomo import served_checks
from bench.locomo import services as served
from bench.perf.serve import bench_precision
from bench.scifact.quality import EmbeddedOnce
from bench.servers import ServicePair
from strata.memory.v1 import memory_service_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex

ENGINES: dict[str, dict[str, Any]] = {
    "embedded": {},
    "server": {"vector_backend": "server", "qdrant_url": ":memory:", "qdrant_collection": "locomo"},
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
MODES = ("vector", "fts", "hybrid")
RESULTS = Path(__file__).parents[1] / "results"


def conversations() -> list[str]:
    return served.CONVERSATIONS or sorted(p.stem for p in (served.DATA / "turns").glob("*.jsonl"))


def recall(questions: Sequence[Any], ranked: Mapping[tuple[str, int], list[str]]) -> dict[str, Any]:
    """any@k (an evidence turn in the top k) and all@k (every one), overall and per category."""

    def block(subset: Sequence[Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"questions": len(subset)}
        for k in KS:
            top = [set(ranked[(q.conv, q.index)][:k]) for q in subset]
            row[f"any@{k}"] = round(
                statistics.fmean(bool(t & set(q.evidence)) for q, t in zip(subset, top, strict=True)), 4
            )
            row[f"all@{k}"] = round(
                statistics.fmean(set(q.evidence) <= t for q, t in zip(subset, top, strict=True)), 4
            )
        return row

    table = {"overall": block(questions)}
    for number, name in CATEGORIES.items():
        if subset := [q for q in questions if q.category == number]:
            table[name] = block(subset)
    return table


async def run_engine(name: str, embedder: EmbeddedOnce, questions: Sequence[Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"locomo-{name}-") as tmp:
        pair = ServicePair(
            Path(tmp),
            embedder=embedder,
            retrieval_settings=ENGINES[name],
            memory_settings={"log_json": False, **served.BENCH_SETTINGS},
            quick_retries=False,
        )
        await pair.start()
        try:
            async with grpc.aio.insecure_channel(pair.memory_address) as channel:
                stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
                started = time.perf_counter()
                corpora = {conv: await served.load_conversation(stub, conv) for conv in conversations()}
                result: dict[str, Any] = {"index_seconds": round(time.perf_counter() - started, 1)}
                assert pair.retrieval is not None
                engine = pair.retrieval.engine
                assert engine is not None
                if name == "server":
                    started = time.perf_counter()
                    generation = await asyncio.to_thread(engine.rebuild)
                    index = engine._vectors  # the benchmark reports the avg_len the rebuild pinned
                    assert isinstance(index, QdrantJointIndex)
                    result["rebuild"] = {
                        "generation": generation,
                        "seconds": round(time.perf_counter() - started, 1),
                        "bm25_avg_len": round(index.bm25_params.avg_len or 0.0, 2),
                    }
                started = time.perf_counter()
                ranked: dict[str, dict[tuple[str, int], list[str]]] = {mode: {} for mode in MODES}
                for q in questions:
                    corpus = corpora[q.conv]
                    for mode in MODES:
                        ids = await served.search(stub, corpus.agent_id, q.text, mode, served_checks.LIMIT)
                        ranked[mode][(q.conv, q.index)] = [corpus.dia_of[i] for i in ids]
                result["search_seconds"] = round(time.perf_counter() - started, 1)
                result["modes"] = {mode: recall(questions, ranked[mode]) for mode in MODES}
                return result
        finally:
            await pair.stop()


def markdown(report: Mapping[str, Any]) -> str:
    engines = list(report["engines"])
    lines = [
        f"# LoCoMo evidence recall, engines side by side ({report['date']})",
        "",
        f"`{report['command']}`: {report['questions']} questions (categories 1-4 with evidence) over "
        f"{report['conversations']} conversations, SearchMessages limit 20 with MemoryService's defaults; "
        f"load average at start {report['load_average_at_start']}. `server` is qdrant-client's local "
        "mode (a Qdrant server's scoring; brute force, so its durations say nothing about a server).",
        "",
        "| mode | category | " + " | ".join(f"{e} any@10 | {e} all@10" for e in engines) + " |",
        "|---|---|" + "---|---|" * len(engines),
    ]
    first = report["engines"][engines[0]]["modes"]
    for mode, table in first.items():
        for category in table:
            cells = [
                f"{report['engines'][e]['modes'][mode][category]['any@10']} | "
                f"{report['engines'][e]['modes'][mode][category]['all@10']}"
                for e in engines
            ]
            lines.append(f"| {mode} | {category} | " + " | ".join(cells) + " |")
    lines += ["", "| engine | index s | rebuild s (avg_len) | search s |", "|---|---|---|---|"]
    for e in engines:
        result = report["engines"][e]
        rebuild = result.get("rebuild")
        rebuilt = f"{rebuild['seconds']} ({rebuild['bm25_avg_len']})" if rebuild else "-"
        lines.append(f"| {e} | {result['index_seconds']} | {rebuilt} | {result['search_seconds']} |")
    return "\n".join(lines) + "\n"


async def run(engines: Sequence[str], command: str) -> dict[str, Any]:
    started = time.perf_counter()
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = EmbeddedOnce(
        OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    )
    convs = conversations()
    questions = [q for conv in convs for q in served.load_questions(conv) if q.evidence]
    report: dict[str, Any] = {
        "benchmark": "LoCoMo evidence recall per retrieval engine, through MemoryService SearchMessages",
        "command": command,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg(),
        "conversations": len(convs),
        "questions": len(questions),
        "engines": {},
    }
    for name in engines:
        print(f"engine {name}", flush=True)
        report["engines"][name] = await run_engine(name, embedder, questions)
        print(json.dumps(report["engines"][name]["modes"]["hybrid"]["overall"]), flush=True)
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--engine", choices=[*ENGINES, "both"], default="both")
    args = parser.parse_args()
    engines = list(ENGINES) if args.engine == "both" else [args.engine]
    command = "python -m bench.locomo.engines" + (f" --engine {args.engine}" if args.engine != "both" else "")
    report = asyncio.run(run(engines, command))
    suffix = ("" if args.engine == "both" else f"_{args.engine}") + (
        "_sample" if served.CONVERSATIONS else ""
    )
    out = RESULTS / f"locomo_engines{suffix}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
