"""LoCoMo evidence recall through MemoryService's public gRPC API (issue 4, item 7).

Run: ``make bench-locomo`` (``python -m bench.locomo_recall``). Steps, each bounded:

1. Start RetrievalService and MemoryService in this process on free loopback ports, data in a
   temporary folder. For each of the five conversations in ``../shared/data/locomo`` create one
   agent and append every turn as a user message (``name`` = speaker, ``create_time`` = session
   date, content = turn text plus the shared image's caption) in batches, the last batch with
   ``wait_searchable``. Hits are mapped back to ``dia_id`` through AppendMessages' response.
2. Ask every question of categories 1-4 through ``SearchMessages`` in modes vector, fts and hybrid
   (limit 20) and report evidence recall@5/10/20: "any" (at least one evidence turn in the top k)
   and "all" (every evidence turn in the top k), overall and per category. A sample of questions
   also goes through the ``conversation_search`` tool (ExecuteTool), which must return the same hits.
3. The grid that chose the recall defaults: each leg's ranking (vector and fts, limit 100, through
   ``SearchMessages``) is fused here with RRF for several leg weights, k and candidate depths
   (exactly what RetrievalService computes from the same two lists), once per indexing variant
   (``recall_context_turns``: how many preceding turns of the conversation are indexed with a
   message). The chosen row is the one MemoryService serves by default, measured in step 2.
4. Latency: sequential hybrid ``SearchMessages`` (limit 10) against a direct RetrievalService
   ``Search`` with the same filter, weights and depth, interleaved in the same run; p50 and p95.

Results are printed and written to ``bench/results/locomo_recall.json``; ``bench/LOCOMO.md``
summarises them. The default indexing variant always runs in full; ``--variants 0 2`` adds the grid
of other variants (each re-embeds ~2.8k turns, several minutes) and ``--reuse-grid 0`` includes the
saved grid of a variant not run this time (``bench/results/locomo_grid_ctx<N>.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from bench.perf.serve import bench_precision
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as rpb_mem
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings

if TYPE_CHECKING:
    MemoryStub = memory_service_pb2_grpc.MemoryServiceAsyncStub
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceAsyncStub
else:
    MemoryStub = memory_service_pb2_grpc.MemoryServiceStub
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub

DATA = Path(os.environ.get("STRATA_LOCOMO_DIR", "/work/shared/data/locomo"))
CONVERSATIONS = [c for c in os.environ.get("STRATA_LOCOMO_CONVS", "").split(",") if c]  # smoke runs
RESULTS = Path(__file__).parent / "results"
REPO = Path(__file__).resolve().parent.parent
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
LIMIT = 20
LEG_LIMIT = 100
APPEND_BATCH = 100
TOOL_CHECKS = 25
LATENCY_QUERIES = 200
MODES = {"vector": mpb.SEARCH_MODE_VECTOR, "fts": mpb.SEARCH_MODE_FTS, "hybrid": mpb.SEARCH_MODE_HYBRID}
# Search-time grid, fused locally from the two legs' rankings: (vector weight, fts weight), k, depth.
WEIGHTS = [(1.0, 1.0), (0.75, 1.0), (0.5, 1.0), (0.4, 1.0), (0.3, 1.0), (0.2, 1.0), (0.0, 1.0)]
RRF_KS = [10.0, 30.0, 60.0, 100.0]
DEPTHS = [20, 50, 100]
# Small outbox batches: one UpsertDocuments stays well inside its deadline on a busy 2-core machine.
BENCH_SETTINGS: dict[str, Any] = {"outbox_batch_size": 32}


@dataclass(frozen=True)
class Question:
    conv: str
    index: int
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Corpus:
    """One conversation loaded as one agent's recall."""

    conv: str
    agent_id: str
    dia_of: dict[str, str] = field(default_factory=dict)  # message id -> dia_id


def session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_content(turn: Mapping[str, Any]) -> str:
    text = str(turn["text"]).strip()
    caption = str(turn.get("blip_caption") or "").strip()
    return f"{text} [image: {caption}]" if caption else text


def load_turns(conv: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "turns" / f"{conv}.jsonl").open()]


def load_questions(conv: str) -> list[Question]:
    questions = []
    for line in (DATA / "questions" / f"{conv}.jsonl").open():
        q = json.loads(line)
        if q["category"] in CATEGORIES:
            evidence = tuple(dict.fromkeys(str(e).strip() for e in q["evidence"]))
            questions.append(Question(conv, q["qa_index"], q["question"], q["category"], evidence))
    return questions


# ---------------------------------------------------------------------------- services


@dataclass
class Services:
    retrieval: RetrievalApp
    memory: MemoryServer
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
        await self.memory.close()
        await self.retrieval.stop()


async def start_services(root: Path, embedder: OnnxSentenceEmbedder, settings: dict[str, Any]) -> Services:
    retrieval = RetrievalApp(
        RetrievalSettings(address="127.0.0.1:0", data_dir=root / "retrieval", log_json=False),
        embedder=embedder,
    )
    await retrieval.start()
    retrieval_address = f"127.0.0.1:{retrieval.server.port}"
    memory = await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{root}/memory.sqlite3",
            retrieval_address=retrieval_address,
            log_json=False,
            **settings,
        )
    )
    return Services(
        retrieval,
        memory,
        grpc.aio.insecure_channel(memory.address),
        grpc.aio.insecure_channel(retrieval_address),
    )


async def load_conversation(stub: MemoryStub, conv: str) -> Corpus:
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
                    content=turn_content(turn),
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
    return corpus


async def search(stub: MemoryStub, agent_id: str, query: str, mode: str, limit: int) -> list[str]:
    response = await stub.SearchMessages(
        mpb.SearchMessagesRequest(agent_id=agent_id, query=query, mode=MODES[mode], limit=limit)
    )
    return [hit.message.id for hit in response.hits]


# ---------------------------------------------------------------------------- scoring


def rrf_fuse(
    vector: Sequence[str], fts: Sequence[str], *, weights: tuple[float, float], k: float, depth: int
) -> list[str]:
    """RetrievalService's weighted RRF over each leg's top ``depth`` (ties by id)."""
    scores: dict[str, float] = defaultdict(float)
    for leg, weight in ((vector, weights[0]), (fts, weights[1])):
        for rank, key in enumerate(leg[:depth], start=1):
            scores[key] += weight / (k + rank)
    return sorted(scores, key=lambda key: (-scores[key], key))


def recall_table(
    questions: Sequence[Question], ranked: Mapping[tuple[str, int], Sequence[str]]
) -> dict[str, Any]:
    """Evidence recall@k, any and all, overall and per category, from dia_id rankings."""

    def block(subset: Sequence[Question]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(subset)}
        for k in KS:
            anys = alls = 0
            for q in subset:
                top = set(ranked[(q.conv, q.index)][:k])
                hits = [e in top for e in q.evidence]
                anys += any(hits)
                alls += all(hits)
            out[f"any@{k}"] = round(anys / len(subset), 4) if subset else 0.0
            out[f"all@{k}"] = round(alls / len(subset), 4) if subset else 0.0
        return out

    table = {"overall": block(questions)}
    for category, name in CATEGORIES.items():
        table[f"{category}-{name}"] = block([q for q in questions if q.category == category])
    return table


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# ---------------------------------------------------------------------------- one variant


@dataclass
class VariantRun:
    context_turns: int
    questions: list[Question]
    corpora: dict[str, Corpus]
    modes: dict[str, dict[str, Any]]
    legs: dict[str, dict[tuple[str, int], list[str]]]
    index_seconds: float
    search_seconds: float
    unmapped_evidence: int
    tool_check: dict[str, Any] | None = None
    fusion_check: dict[str, Any] | None = None
    latency: dict[str, Any] | None = None


async def run_variant(
    embedder: OnnxSentenceEmbedder,
    context_turns: int,
    settings: dict[str, Any],
    *,
    full: bool,
) -> VariantRun:
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        services = await start_services(
            Path(tmp), embedder, {"recall_context_turns": context_turns, **settings}
        )
        try:
            stub = services.stub
            convs = CONVERSATIONS or sorted(p.stem for p in (DATA / "turns").glob("*.jsonl"))
            started = time.perf_counter()
            corpora = {}
            for conv in convs:
                corpora[conv] = await load_conversation(stub, conv)
                print(f"  [{context_turns}] indexed {conv}: {len(corpora[conv].dia_of)} turns", flush=True)
            index_seconds = time.perf_counter() - started

            questions = [q for conv in convs for q in load_questions(conv)]
            known = {dia for c in corpora.values() for dia in c.dia_of.values()}
            unmapped = sum(1 for q in questions for e in q.evidence if e not in known)
            started = time.perf_counter()
            legs: dict[str, dict[tuple[str, int], list[str]]] = {"vector": {}, "fts": {}}
            modes: dict[str, dict[str, Any]] = {}
            ranked_by_mode: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(dict)
            for q in questions:
                corpus = corpora[q.conv]
                for leg in ("vector", "fts"):
                    ids = await search(stub, corpus.agent_id, q.text, leg, LEG_LIMIT)
                    legs[leg][(q.conv, q.index)] = [corpus.dia_of[i] for i in ids]
                if full:
                    for mode in MODES:
                        ids = await search(stub, corpus.agent_id, q.text, mode, LIMIT)
                        ranked_by_mode[mode][(q.conv, q.index)] = [corpus.dia_of[i] for i in ids]
            search_seconds = time.perf_counter() - started
            for mode, ranked in ranked_by_mode.items():
                modes[mode] = recall_table(questions, ranked)
            run = VariantRun(
                context_turns, questions, corpora, modes, legs, index_seconds, search_seconds, unmapped
            )
            if full:
                run.fusion_check = fusion_check(legs, ranked_by_mode["hybrid"])
                run.tool_check = await tool_check(stub, corpora, questions)
                run.latency = await latency(services, corpora, questions)
            return run
        finally:
            await services.close()


def fusion_check(
    legs: Mapping[str, Mapping[tuple[str, int], Sequence[str]]],
    served: Mapping[tuple[str, int], Sequence[str]],
) -> dict[str, Any]:
    """How often the local fusion of the two legs reproduces the served hybrid top 20 exactly."""
    fusion = current_weights()
    depth = fusion.get("vector_depth", max(4 * LIMIT, 50))
    weights = (fusion["vector_weight"], fusion["fts_weight"])
    same = sum(
        rrf_fuse(legs["vector"][key], legs["fts"][key], weights=weights, k=fusion["rrf_k"], depth=depth)[
            :LIMIT
        ]
        == list(served[key])
        for key in served
    )
    return {"questions": len(served), "identical_top20": same}


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
    """Hybrid SearchMessages (limit 10) vs a direct RetrievalService Search with the same request."""
    stub, direct = services.stub, services.retrieval_stub
    step = max(1, len(questions) // LATENCY_QUERIES)
    sample = list(questions)[::step][:LATENCY_QUERIES]
    tenant = "default"
    through: list[float] = []
    straight: list[float] = []
    weights = current_weights()
    for i, q in enumerate(sample + sample[:10]):  # the first 10 warm up
        corpus = corpora[q.conv]
        memory_request = mpb.SearchMessagesRequest(
            agent_id=corpus.agent_id, query=q.text, mode=mpb.SEARCH_MODE_HYBRID, limit=10
        )
        direct_request = rpb.SearchRequest(
            query=q.text,
            mode=rpb.SEARCH_MODE_HYBRID,
            filter=rpb.DocumentFilter(
                tenant_id=tenant, agent_ids=[corpus.agent_id], kinds=[rpb.DOCUMENT_KIND_MESSAGE]
            ),
            top_k=10,
            **weights,
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
        "memory_search_messages_ms": {
            "p50": round(p50_memory, 2),
            "p95": round(percentile(through, 95), 2),
        },
        "direct_retrieval_search_ms": {
            "p50": round(p50_direct, 2),
            "p95": round(percentile(straight, 95), 2),
        },
        "ratio_p50": round(p50_memory / p50_direct, 2),
        "target_ratio_p50": 2.0,
    }


def current_weights() -> dict[str, Any]:
    """The recall fusion MemoryService sends by default, for the direct Search to match."""
    s = MemorySettings()
    out: dict[str, Any] = {
        "rrf_k": s.recall_rrf_k,
        "vector_weight": s.recall_vector_weight,
        "fts_weight": s.recall_fts_weight,
    }
    if s.recall_candidate_depth:
        out["vector_depth"] = out["fts_depth"] = max(s.recall_candidate_depth, 10)
    return out


def grid_file(context: int) -> Path:
    return RESULTS / f"locomo_grid_ctx{context}.json"


def save_grid(context: int, rows: Sequence[dict[str, Any]]) -> None:
    """Each variant's grid rows as soon as they exist (a later run can reuse them)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    saved = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "rows": rows,
    }
    grid_file(context).write_text(json.dumps(saved, indent=1) + "\n")


def grid(run: VariantRun) -> list[dict[str, Any]]:
    rows = []
    for weights in WEIGHTS:
        for k in RRF_KS:
            for depth in DEPTHS:
                ranked = {
                    key: rrf_fuse(
                        run.legs["vector"][key], run.legs["fts"][key], weights=weights, k=k, depth=depth
                    )
                    for key in run.legs["vector"]
                }
                table = recall_table(run.questions, ranked)
                rows.append(
                    {
                        "context_turns": run.context_turns,
                        "vector_weight": weights[0],
                        "fts_weight": weights[1],
                        "rrf_k": k,
                        "depth": depth,
                        **{key: table["overall"][key] for key in table["overall"] if key != "questions"},
                    }
                )
    for leg in ("vector", "fts"):
        table = recall_table(run.questions, run.legs[leg])
        rows.append(
            {
                "context_turns": run.context_turns,
                "leg_alone": leg,
                **{key: table["overall"][key] for key in table["overall"] if key != "questions"},
            }
        )
    return rows


# ---------------------------------------------------------------------------- report


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "bench", "services/memory"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def print_modes(modes: Mapping[str, Mapping[str, Any]]) -> None:
    header = f"{'mode':7} {'category':16} {'n':>4} " + " ".join(
        f"{kind}@{k:<3}" for kind in ("any", "all") for k in KS
    )
    print(header)
    for mode, table in modes.items():
        for name, row in table.items():
            cells = " ".join(f"{row[f'{kind}@{k}']:.3f} " for kind in ("any", "all") for k in KS)
            print(f"{mode:7} {name:16} {row['questions']:>4} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument(
        "--variants",
        type=int,
        nargs="*",
        default=[],
        help="more recall_context_turns values for the grid (the default one always runs in full)",
    )
    parser.add_argument(
        "--reuse-grid",
        type=int,
        nargs="*",
        default=[],
        help="include the saved grid rows (bench/results/locomo_grid_ctx<N>.json) of variants not run now",
    )
    parser.add_argument("--output", type=Path, default=RESULTS / "locomo_recall.json")
    args = parser.parse_args()
    result = asyncio.run(run(args.variants, args.reuse_grid))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.output}")


async def run(variants: Sequence[int], reuse: Sequence[int]) -> dict[str, Any]:
    started = time.perf_counter()
    defaults = MemorySettings()
    default_context = defaults.recall_context_turns
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = OnnxSentenceEmbedder.load(models, precision=bench_precision(), threads=2, batch_size=32)
    order = [default_context] + [v for v in dict.fromkeys(variants) if v != default_context]
    runs = []
    rows: list[dict[str, Any]] = []
    for context in order:
        print(f"indexing variant recall_context_turns={context}", flush=True)
        variant = await run_variant(embedder, context, BENCH_SETTINGS, full=context == default_context)
        runs.append(variant)
        variant_rows = grid(variant)
        rows.extend(variant_rows)
        save_grid(context, variant_rows)
        best = max(variant_rows, key=lambda r: r["any@10"])
        print(f"  [{context}] best any@10 row: {best}", flush=True)
    for context in reuse:
        if context not in order:
            saved = json.loads(grid_file(context).read_text())
            print(f"reusing grid rows of recall_context_turns={context} from {saved['date']}", flush=True)
            rows.extend(
                {**row, "from_run": saved["date"], "from_commit": saved["git_commit"]}
                for row in saved["rows"]
            )
    main_run = runs[0]
    assert main_run.latency is not None
    assert main_run.tool_check is not None

    print(f"\nLoCoMo evidence recall, defaults (recall_context_turns={default_context}, {current_weights()})")
    print_modes(main_run.modes)
    print("\nGrid (overall, hybrid fused from the legs' top-100 rankings), best any@10 first:")
    for row in sorted(rows, key=lambda r: -r["any@10"])[:15]:
        print("  ", row)
    print("\nLatency:", json.dumps(main_run.latency))
    print("conversation_search spot check:", main_run.tool_check)
    print("local fusion reproduces served hybrid:", main_run.fusion_check)

    return {
        "benchmark": "LoCoMo evidence recall through MemoryService SearchMessages (gRPC)",
        "data": str(DATA),
        "conversations": sorted(main_run.corpora),
        "turns": sum(len(c.dia_of) for c in main_run.corpora.values()),
        "questions": len(main_run.questions),
        "questions_per_category": {
            CATEGORIES[c]: sum(q.category == c for q in main_run.questions) for c in CATEGORIES
        },
        "evidence_ids_not_in_turns": main_run.unmapped_evidence,
        "config": {
            "embedding_model": f"{embedder.name} (ONNX)",
            "message": "role user, name = speaker, content = text [+ ' [image: <blip_caption>]'], "
            "create_time = session date",
            "limit": LIMIT,
            "recall_context_turns": default_context,
            "search_defaults": current_weights(),
            "append_batch": APPEND_BATCH,
            "memory_settings": BENCH_SETTINGS,
        },
        "modes": main_run.modes,
        "grid_note": "hybrid rows fused locally with RetrievalService's weighted RRF over each leg's top "
        "`depth` of a limit-100 SearchMessages ranking (vector and fts); ties by message id",
        "grid": rows,
        "conversation_search_check": main_run.tool_check,
        "local_fusion_check": main_run.fusion_check,
        "latency": main_run.latency,
        "index_seconds": {str(r.context_turns): round(r.index_seconds, 1) for r in runs},
        "search_seconds": {str(r.context_turns): round(r.search_seconds, 1) for r in runs},
        "run_seconds": round(time.perf_counter() - started, 1),
        "git_commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
    }


if __name__ == "__main__":
    main()
