"""Paired, interleaved A/B of RetrievalService code variants: hybrid search over gRPC at 100k.

    python -m bench.perf.search_ab build --data .cache/ab/data100k          # once (~6 min here)
    python -m bench.perf.search_ab run --data .cache/ab/data100k \\
        old=/path/to/old/sources new=services/retrieval [--env new:STRATA_RETRIEVAL_WORKERS=2]

``build`` writes a 100k data directory the way ``make bench`` fills its own (the same chat-length
texts, one tenant and agent), but without embedding every text: the first ``--base`` texts are
embedded by the real model and every later one gets base text ``i mod base``'s vector plus noise
(as ``bench-large`` does), so BM25 sees ``make bench``'s texts and HNSW clusters of near neighbours.

``run`` starts one server per variant, each with ``PYTHONPATH=SRC`` ahead of the installed packages
(a directory holding ``strata_retrieval``, e.g. a copy of another commit's sources) and on its own
copy of the data directory. Round after round, each variant answers the same block of queries, in
an order shuffled per round, with one call in flight (``--concurrency`` for more). It reports each
variant's p50/p90/p99 and calls per second, the median over rounds of its block median divided by
the first variant's, the health-check floor, the share of CPU the VM's host took (steal), and
whether every variant returns the same top 10 (ids and RRF scores) for every query.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.perf import retrieval_bench
from bench.perf.corpus import chat_documents, queries
from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.serve import MODEL_CACHE, bench_precision, save_precomputed
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc as rgrpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

NOISE_SIGMA = 0.04
SEED = 20261203
READY_SECONDS = 900.0


def build(data: Path, size: int, base: int) -> None:
    texts = chat_documents(size)
    model = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=bench_precision(), threads=2)
    embedded = np.concatenate([model.embed_documents(texts[i : i + 500]) for i in range(0, base, 500)])
    rows = np.arange(size)
    noisy = embedded[rows % base] + np.random.default_rng(SEED).normal(0.0, NOISE_SIGMA, (size, 384))
    noisy[:base] = embedded
    vectors = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    work = data.parent / f"{data.name}-build"
    table = save_precomputed(work / "precomputed", texts, vectors)
    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    server = retrieval_bench._server(data, work / "server.log", table).start()
    try:
        retrieval_bench.ingest(server.address, corpus, 0, size, f"0->{size}")
    finally:
        server.stop()
    began = time.monotonic()
    retrieval_bench._server(data, work / "server.log", table).start().stop()  # its start builds HNSW
    print(f"restarted (building HNSW) in {time.monotonic() - began:.0f} s; data in {data}", flush=True)


class Variant:
    def __init__(self, name: str, source: Path, data: Path, env: dict[str, str]) -> None:
        self.name = name
        copy = data.parent / f"{data.name}-ab-{name}"
        if not copy.exists():
            shutil.copytree(data, copy)
        variables = {"OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": f"{source.resolve()}:{Path.cwd()}"}
        with (data.parent / f"ab-{name}.log").open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.perf.serve", "retrieval", "--data-dir", str(copy)],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=os.environ | variables | env,
            )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], READY_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"variant {name} did not start; see {log.name}")
        channel = grpc.insecure_channel(line.split()[1])
        self.search = rgrpc.RetrievalServiceStub(channel).Search
        self.check = health_pb2_grpc.HealthStub(channel).Check

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _top(variant: Variant, request: rpb.SearchRequest) -> list[tuple[str, float]]:
    return [(hit.document.id, round(hit.rrf_score, 12)) for hit in variant.search(request).hits]


def _timed(call: object, request: object) -> float:
    began = time.perf_counter()
    call(request)  # type: ignore[operator]
    return time.perf_counter() - began


def run(variants: list[Variant], rounds: int, block: int, mode: str, concurrency: int) -> None:
    flt = rpb.DocumentFilter(tenant_id=retrieval_bench.TENANT, agent_ids=[retrieval_bench.AGENT])
    number = rpb.SearchMode.Value(mode)
    requests = [rpb.SearchRequest(query=q, mode=number, filter=flt, top_k=10) for q in queries(200)]
    first = variants[0]
    expected = [_top(first, request) for request in requests]
    for variant in variants[1:]:
        same = sum(_top(variant, r) == e for r, e in zip(requests, expected, strict=True))
        print(f"{variant.name}: the same top 10 as {first.name} for {same} of {len(requests)} queries")
    for variant in variants:
        for request in requests[:50]:
            variant.search(request)
    latency: dict[str, list[float]] = {v.name: [] for v in variants}
    blocks: dict[str, list[float]] = {v.name: [] for v in variants}
    floor: dict[str, list[float]] = {v.name: [] for v in variants}
    rates: dict[str, list[float]] = {v.name: [] for v in variants}
    pool = ThreadPoolExecutor(concurrency)
    health = health_pb2.HealthCheckRequest()
    ticks, began = cpu_ticks(), time.monotonic()
    for round_number in range(rounds):
        chunk = [requests[(round_number * block + i) % len(requests)] for i in range(block)]
        for variant in random.sample(variants, len(variants)):
            started = time.perf_counter()
            times = list(pool.map(_timed, [variant.search] * len(chunk), chunk))
            rates[variant.name].append(len(chunk) / (time.perf_counter() - started))
            floor[variant.name] += [_timed(variant.check, health) for _ in range(5)]
            latency[variant.name] += times
            blocks[variant.name].append(statistics.median(times))
    print(
        f"{rounds} rounds x {block} calls in {time.monotonic() - began:.0f} s; the host took "
        f"{steal_percent(ticks, cpu_ticks())} % of the CPU; load average {os.getloadavg()[0]:.1f}"
    )
    for variant in variants:
        ordered = sorted(latency[variant.name])
        p90, p99 = ordered[int(len(ordered) * 0.9)], ordered[int(len(ordered) * 0.99)]
        ratios = [a / b for a, b in zip(blocks[variant.name], blocks[first.name], strict=True)]
        print(
            f"  {variant.name:<12} p50 {statistics.median(ordered) * 1e3:6.2f} ms  "
            f"p90 {p90 * 1e3:6.2f}  p99 {p99 * 1e3:6.2f}  "
            f"block median / {first.name} {statistics.median(ratios):.3f}  "
            f"health p50 {statistics.median(floor[variant.name]) * 1e3:.2f} ms  "
            f"{statistics.median(rates[variant.name]):.0f} calls/s at {concurrency} in flight"
        )


def main() -> None:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.perf.search_ab", description=summary)
    commands = parser.add_subparsers(dest="command", required=True)
    building = commands.add_parser("build")
    building.add_argument("--data", type=Path, required=True)
    building.add_argument("--size", type=int, default=100_000)
    building.add_argument("--base", type=int, default=5_000, help="texts embedded by the real model")
    running = commands.add_parser("run")
    running.add_argument("--data", type=Path, required=True)
    running.add_argument("--rounds", type=int, default=40)
    running.add_argument("--block", type=int, default=25)
    running.add_argument("--mode", default="SEARCH_MODE_HYBRID")
    running.add_argument("--concurrency", type=int, default=1, help="calls in flight")
    running.add_argument("--env", action="append", default=[], help="NAME:KEY=VALUE for one variant")
    running.add_argument("variants", nargs="+", help="NAME=SOURCE_DIR (the first is the reference)")
    args = parser.parse_args()
    if args.command == "build":
        build(args.data, args.size, args.base)
        return
    env: dict[str, dict[str, str]] = {}
    for item in args.env:
        name, assignment = item.split(":", 1)
        key, value = assignment.split("=", 1)
        env.setdefault(name, {})[key] = value
    variants: list[Variant] = []
    try:
        for spec in args.variants:
            name, source = spec.split("=", 1)
            variants.append(Variant(name, Path(source), args.data, env.get(name, {})))
        run(variants, args.rounds, args.block, args.mode, args.concurrency)
    finally:
        for variant in variants:
            variant.stop()


if __name__ == "__main__":
    main()
