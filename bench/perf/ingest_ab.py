"""Paired, interleaved A/B of the import scenario (``ingest_e2e``) between RetrievalService variants.

    python -m bench.perf.ingest_ab --messages 3000 --rounds 3 \\
        old=/path/to/old/sources new=services/retrieval [--env new:STRATA_MEMORY_X=1]

Each variant is a directory holding ``strata_retrieval`` (e.g. a copy of another commit's
``services/retrieval``), put ahead of the installed packages for the variant's RetrievalService.
Each round first runs the encoder alone on the import's texts (as ``ingest_e2e`` does), then imports
the same LoCoMo messages through each variant's fresh MemoryService + RetrievalService pair, in an
order shuffled per round. Per variant it reports the medians over rounds of: the rate (messages
searchable per second), the rate over that round's encoder-alone rate, each server's CPU per
message, and the RetrievalService's CPU per message split into Python threads and named native ones
(Tantivy's, Qdrant's, gRPC's); CPU per message holds up better than rates on a loaded machine.
After each import it searches for a sample of the messages and checks that every variant returns
the same hybrid top 10 (texts and RRF scores; ids differ between imports) as the first, and the
same legs (each leg's top 50 by score, up to the order of equal scores: the import repeats
conversations, and equal texts rank by storage order, which moves their RRF scores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.ingest_e2e import (
    Servers,
    Turn,
    conversations,
    embedded_texts,
    encoder_rate,
    run_import,
)
from bench.perf.serve import MODEL_CACHE, bench_precision
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.config import MemorySettings
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings
from strata_serving.tenancy import DEFAULT_TENANT

if TYPE_CHECKING:
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceAsyncStub
else:
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub

WORK = Path(".cache/bench/work/ingest_ab")
SAMPLE_QUERIES = 40
Top = list[tuple[float, str]]


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of each thread of ``pid``: {tid: (name, seconds)}."""
    ticks = os.sysconf("SC_CLK_TCK")
    threads: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    return threads


def cpu_by_group(
    before: Mapping[int, tuple[str, float]], after: Mapping[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds between two :func:`thread_cpu` readings, by thread name with its number dropped
    (``merge_thread_3`` -> ``merge_thread``); Python threads all bear the interpreter's name."""
    groups: dict[str, float] = {}
    for tid, (name, seconds) in after.items():
        group = name.rstrip("0123456789").rstrip("-_") or name
        groups[group] = groups.get(group, 0.0) + seconds - before.get(tid, (name, 0.0))[1]
    return groups


def queries(convs: Sequence[Sequence[Turn]], count: int) -> list[str]:
    turns = [turn for conv in convs for turn in conv]
    step = max(1, len(turns) // count)
    return [" ".join(turn.content.split()[:8]) for turn in turns[::step][:count]]


def _scored(hits: Sequence[rpb.SearchHit], score: Callable[[rpb.SearchHit], float]) -> Top:
    """(score, text) pairs, best first, the texts of those tied at the lowest score left out: which of
    them make the cut depends on storage order and ids, and ids differ between two imports."""
    scored = [(round(score(hit), 9), hit.document.text) for hit in hits]
    lowest = min((value for value, _ in scored), default=0.0)
    return sorted(((value, text if value > lowest else "") for value, text in scored), reverse=True)


async def hybrid_tops(address: str, texts: Sequence[str]) -> list[tuple[Top, Top, Top]]:
    """Each query's hybrid top 10 by RRF score, its vector leg's top 50 by cosine and its text leg's
    top 50 by BM25, as :func:`_scored` pairs. Equal texts (the import repeats conversations) score
    alike in each leg, but their ranks, and so their RRF scores, follow storage order; the legs are
    the part that must not change."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        flt = rpb.DocumentFilter(tenant_id=DEFAULT_TENANT)
        tops = []
        for text in texts:
            found = {}
            for mode, top_k in (
                (rpb.SEARCH_MODE_HYBRID, 10),
                (rpb.SEARCH_MODE_VECTOR, 50),
                (rpb.SEARCH_MODE_FTS, 50),
            ):
                request = rpb.SearchRequest(query=text, mode=mode, filter=flt, top_k=top_k)
                found[mode] = (await stub.Search(request)).hits
            tops.append(
                (
                    _scored(found[rpb.SEARCH_MODE_HYBRID], lambda hit: hit.rrf_score),
                    _scored(found[rpb.SEARCH_MODE_VECTOR], lambda hit: hit.vector_score),
                    _scored(found[rpb.SEARCH_MODE_FTS], lambda hit: hit.fts_score),
                )
            )
        return tops


def import_once(
    name: str, source: Path, env: Mapping[str, str], convs: list[list[Turn]], texts: Sequence[str]
) -> tuple[dict[str, Any], list[tuple[Top, Top, Top]]]:
    path = f"{source.resolve()}:{Path.cwd()}"
    servers = Servers(WORK / name, env, {**env, "PYTHONPATH": path})
    try:
        before = thread_cpu(servers.retrieval.pid)
        result = asyncio.run(run_import(servers, convs))
        groups = cpu_by_group(before, thread_cpu(servers.retrieval.pid))
        tops = asyncio.run(hybrid_tops(servers.retrieval.address, texts))
    finally:
        servers.stop()
    result["retrieval_threads_ms_per_message"] = {
        group: round(1000 * seconds / result["messages"], 3)
        for group, seconds in groups.items()
        if seconds > 0
    }
    return result, tops


def run(
    variants: list[tuple[str, Path]], env: Mapping[str, dict[str, str]], messages: int, rounds: int
) -> None:
    memory_settings, retrieval_settings = MemorySettings(), RetrievalSettings()
    embedder = OnnxSentenceEmbedder.load(
        MODEL_CACHE,
        precision=bench_precision(),
        threads=retrieval_settings.embedder_threads,
        batch_size=retrieval_settings.embedder_batch_size,
    )
    convs = conversations(messages)
    texts = [
        text
        for conv in convs
        for text in embedded_texts(
            conv, memory_settings.recall_context_turns, memory_settings.recall_context_legs
        )
    ]
    sample = queries(convs, SAMPLE_QUERIES)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
    encoder: list[dict[str, float]] = []
    ticks, began = cpu_ticks(), time.monotonic()
    for round_number in range(1, rounds + 1):
        encoder.append(encoder_rate(embedder, texts, memory_settings.outbox_batch_size))
        tops: dict[str, list[tuple[Top, Top, Top]]] = {}
        for name, source in random.sample(variants, len(variants)):
            result, tops[name] = import_once(name, source, env.get(name, {}), convs, sample)
            result["vs_encoder"] = result["rate_per_s"] / encoder[-1]["texts_per_s"]
            result["cpu_vs_encoder"] = (
                sum(result["cpu_ms_per_message"].values()) / encoder[-1]["cpu_ms_per_text"]
            )
            rows[name].append(result)
            print(
                f"round {round_number} {name}: {result['rate_per_s']} msgs/s "
                f"({result['vs_encoder']:.3f}x the encoder's {encoder[-1]['texts_per_s']}), CPU ms/msg "
                f"{result['cpu_ms_per_message']} vs encoder {encoder[-1]['cpu_ms_per_text']}; "
                f"retrieval threads {result['retrieval_threads_ms_per_message']}; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        reference = variants[0][0]
        for name, _ in variants[1:]:
            pairs = list(zip(tops[reference], tops[name], strict=True))
            hybrid = sum(a[0] == b[0] for a, b in pairs)
            legs = sum(a[1:] == b[1:] for a, b in pairs)
            print(
                f"round {round_number}: {name} has {reference}'s hybrid top 10 for {hybrid} of {len(sample)} "
                f"queries, and its legs (top 50 each, up to the order of equal scores) for {legs}"
            )
    print(
        f"{rounds} rounds of {messages} messages in {time.monotonic() - began:.0f} s; steal "
        f"{steal_percent(ticks, cpu_ticks())} %; "
        f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(
        f"  encoder alone: {statistics.median(e['texts_per_s'] for e in encoder):.1f} texts/s, "
        f"{statistics.median(e['cpu_ms_per_text'] for e in encoder):.3f} ms CPU per text (medians)"
    )
    first = rows[variants[0][0]]
    for name, _ in variants:
        mine = rows[name]

        def median(key: str, service: str | None = None, runs: list[dict[str, Any]] = mine) -> float:
            return float(statistics.median(r[key][service] if service else r[key] for r in runs))

        groups = sorted({g for r in mine for g in r["retrieval_threads_ms_per_message"]})
        threads = {
            g: round(statistics.median(r["retrieval_threads_ms_per_message"].get(g, 0.0) for r in mine), 3)
            for g in groups
        }
        rate_ratio = statistics.median(
            r["rate_per_s"] / f["rate_per_s"] for r, f in zip(mine, first, strict=True)
        )
        cpu_ratio = statistics.median(
            sum(r["cpu_ms_per_message"].values()) / sum(f["cpu_ms_per_message"].values())
            for r, f in zip(mine, first, strict=True)
        )
        print(
            f"  {name:<10} {median('rate_per_s'):.1f} msgs/s ({rate_ratio:.3f}x {variants[0][0]}'s, paired), "
            f"{median('vs_encoder'):.3f}x the encoder; CPU ms/msg "
            f"retrieval {median('cpu_ms_per_message', 'retrieval'):.3f} memory "
            f"{median('cpu_ms_per_message', 'memory'):.3f} ({median('cpu_vs_encoder'):.3f}x the encoder's; "
            f"{cpu_ratio:.3f}x {variants[0][0]}'s, paired); retrieval threads {threads}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.ingest_ab", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--messages", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="NAME:KEY=VALUE for one variant's servers")
    parser.add_argument(
        "variants", nargs="+", help="NAME=SOURCE_DIR holding strata_retrieval (the first is the reference)"
    )
    args = parser.parse_args()
    env: dict[str, dict[str, str]] = {}
    for item in args.env:
        name, assignment = item.split(":", 1)
        key, value = assignment.split("=", 1)
        env.setdefault(name, {})[key] = value
    variants = [(spec.split("=", 1)[0], Path(spec.split("=", 1)[1])) for spec in args.variants]
    run(variants, env, args.messages, args.rounds)


if __name__ == "__main__":
    main()
