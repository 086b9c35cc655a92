"""Paired, interleaved A/B of RetrievalService's write path: the import's batches sent straight to it.

    python -m bench.perf.upsert_ab --rounds 8 --batches 4 old=/path/to/old/sources new=services/retrieval

Every variant's RetrievalService (``PYTHONPATH=SOURCE``, a directory holding ``strata_retrieval``)
runs at once on its own data directory, so each sees the same load. Round after round each variant,
in an order shuffled per round, takes ``--batches`` UpsertDocuments calls of the outbox's batch size
(one in flight, as the outbox sends them) holding the next LoCoMo messages exactly as MemoryService
indexes them (``message_document`` with the configured context turns and legs). Per variant: the
median over rounds of documents per second and of the server's CPU per document, each also as the
median of per-round ratios to the first variant. The encoder alone takes its turn in each round
too, in this process, on the texts the engine embeds for the same batches, so every variant's
CPU per document is also given over the encoder's, paired. Then whether every variant answers a
sample of hybrid searches with the same top 10 (ids and RRF scores) as the first, and with the same legs: the
vector leg's top 50 in order, the text leg's up to the order of equal BM25 scores (Tantivy breaks
those ties by segment, and two indexes of the same documents order their segments differently, so
a hybrid top 10 can differ between two runs of the same code).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.ingest_e2e import DATA, conversations
from bench.perf.processes import ServerProcess, cpu_seconds
from bench.perf.serve import MODEL_CACHE, bench_precision
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.indexing.documents import message_document
from strata_memory.settings import MemorySettings
from strata_memory.store.records import MessageRecord
from strata_retrieval.conversions import document_from_pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings
from strata_serving.tenancy import DEFAULT_TENANT

WORK = Path(".cache/bench/work/upsert_ab")
SAMPLE_QUERIES = 40


def documents(total: int) -> list[rpb.Document]:
    """``total`` LoCoMo messages as the outbox sends them, one agent per conversation copy. Copies
    after the first name their speakers "Caroline 2", ...: identical texts would tie in both legs,
    and ties are ordered by storage position, which differs between two indexes."""
    settings = MemorySettings()
    out: list[rpb.Document] = []
    originals = len(list((DATA / "turns").glob("*.jsonl")))
    for agent, conversation in enumerate(conversations(total)):
        copy = agent // originals
        records = [
            MessageRecord(
                id=f"message-{agent}-{i}",
                tenant_id=DEFAULT_TENANT,
                agent_id=f"agent-{agent}",
                conversation_id="default",
                role="user",
                content=turn.content,
                name=f"{turn.speaker} {copy + 1}" if copy else turn.speaker,
                sequence=i,
                created_us=1_780_000_000_000_000 + 1_000_000 * len(out) + i,
            )
            for i, turn in enumerate(conversation)
        ]
        turns = settings.recall_context_turns
        out += [
            message_document(
                record, records[max(0, i - turns) : i], context_legs=settings.recall_context_legs
            )
            for i, record in enumerate(records)
        ]
    return out


class Variant:
    def __init__(self, name: str, source: Path) -> None:
        self.name = name
        path = f"{source.resolve()}:{Path.cwd()}"
        shutil.rmtree(WORK / name, ignore_errors=True)
        self.server = ServerProcess(
            ["retrieval", "--data-dir", str(WORK / name)], WORK / f"{name}.log", env={"PYTHONPATH": path}
        )
        self.server.start()
        self.channel = grpc.insecure_channel(
            self.server.address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
        )
        self.stub = retrieval_pb2_grpc.RetrievalServiceStub(self.channel)

    def upsert(self, batches: list[list[rpb.Document]]) -> tuple[float, float]:
        """Seconds and server CPU seconds to index ``batches``, one call after another."""
        cpu, began = cpu_seconds(self.server.pid), time.perf_counter()
        for batch in batches:
            self.stub.UpsertDocuments(rpb.UpsertDocumentsRequest(documents=batch), timeout=600)
        return time.perf_counter() - began, cpu_seconds(self.server.pid) - cpu

    def top(self, query: str) -> list[tuple[str, float]]:
        flt = rpb.DocumentFilter(tenant_id=DEFAULT_TENANT)
        request = rpb.SearchRequest(query=query, mode=rpb.SEARCH_MODE_HYBRID, filter=flt, top_k=10)
        return [(hit.document.id, round(hit.rrf_score, 12)) for hit in self.stub.Search(request).hits]

    def legs(self, query: str) -> tuple[list[tuple[str, float]], set[tuple[str, float]]]:
        """The vector leg's top 50 (ids and cosines, in order) and the text leg's as a set of (id, BM25
        score) without the lowest score: Tantivy orders equal scores by segment, and segments are not
        in the same order in two indexes of the same documents."""
        flt = rpb.DocumentFilter(tenant_id=DEFAULT_TENANT)
        vector = self.stub.Search(
            rpb.SearchRequest(query=query, mode=rpb.SEARCH_MODE_VECTOR, filter=flt, top_k=50)
        ).hits
        text = self.stub.Search(
            rpb.SearchRequest(query=query, mode=rpb.SEARCH_MODE_FTS, filter=flt, top_k=50)
        ).hits
        lowest = min((round(hit.fts_score, 9) for hit in text), default=0.0)
        return (
            [(hit.document.id, round(hit.vector_score, 9)) for hit in vector],
            {(hit.document.id, round(hit.fts_score, 9)) for hit in text if round(hit.fts_score, 9) > lowest},
        )

    def stop(self) -> None:
        self.channel.close()
        self.server.stop()


class Encoder:
    """The encoder alone, in this process, on the texts the engine embeds for the same batches."""

    name = "encoder"

    def __init__(self) -> None:
        settings = RetrievalSettings()
        self.embedder = OnnxSentenceEmbedder.load(
            MODEL_CACHE,
            precision=bench_precision(),
            threads=settings.embedder_threads,
            batch_size=settings.embedder_batch_size,
        )

    def upsert(self, batches: list[list[rpb.Document]]) -> tuple[float, float]:
        now = datetime.now(UTC)
        texts = [[document_from_pb(d, "d", lambda: now).embedded_text for d in batch] for batch in batches]
        cpu, began = time.process_time(), time.perf_counter()
        for batch in texts:
            self.embedder.embed_documents(batch)
        return time.perf_counter() - began, time.process_time() - cpu


def run(variants: list[Variant], rounds: int, batches: int) -> None:
    size = MemorySettings().outbox_batch_size
    docs = documents(size * (batches * rounds + 1))
    blocks = [docs[i : i + size] for i in range(0, len(docs), size)]
    encoder = Encoder()
    runners: list[Variant | Encoder] = [*variants, encoder]
    for runner in runners:
        runner.upsert(blocks[:1])  # warm-up: the first batch grows onnxruntime's arena
    rate: dict[str, list[float]] = {v.name: [] for v in runners}
    cpu: dict[str, list[float]] = {v.name: [] for v in runners}
    ticks, began = cpu_ticks(), time.monotonic()
    for round_number in range(rounds):
        chunk = blocks[1 + round_number * batches : 1 + (round_number + 1) * batches]
        count = sum(len(batch) for batch in chunk)
        for runner in random.sample(runners, len(runners)):
            seconds, used = runner.upsert(chunk)
            rate[runner.name].append(count / seconds)
            cpu[runner.name].append(1000 * used / count)
    print(
        f"{rounds} rounds x {batches} batches of {size} in {time.monotonic() - began:.0f} s; steal "
        f"{steal_percent(ticks, cpu_ticks())} %; load average {os.getloadavg()[0]:.1f}"
    )
    first = variants[0].name
    for runner in runners:
        name = runner.name

        def paired(values: dict[str, list[float]], other: str, name: str = name) -> float:
            return float(statistics.median(a / b for a, b in zip(values[name], values[other], strict=True)))

        print(
            f"  {name:<10} {statistics.median(rate[name]):6.1f} docs/s "
            f"({paired(rate, first):.3f}x {first}'s, {paired(rate, 'encoder'):.3f}x the encoder's, paired), "
            f"CPU {statistics.median(cpu[name]):.3f} ms/doc "
            f"({paired(cpu, first):.3f}x {first}'s, {paired(cpu, 'encoder'):.3f}x the encoder's, paired)"
        )
    texts = [doc.text for doc in docs[:: max(1, len(docs) // SAMPLE_QUERIES)]][:SAMPLE_QUERIES]
    queries = [" ".join(text.split()[:8]) for text in texts]
    expected = [variants[0].top(query) for query in queries]
    expected_legs = [variants[0].legs(query) for query in queries]
    for variant in variants[1:]:
        same = sum(variant.top(query) == top for query, top in zip(queries, expected, strict=True))
        legs = sum(variant.legs(query) == leg for query, leg in zip(queries, expected_legs, strict=True))
        print(
            f"  {variant.name}: the same hybrid top 10 as {first} for {same} of {len(queries)} queries; "
            f"the same legs (vector top 50 in order, text top 50 up to the order of equal BM25 scores) "
            f"for {legs}"
        )


def main() -> None:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.perf.upsert_ab", description=summary)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batches", type=int, default=4, help="UpsertDocuments calls per variant per round")
    parser.add_argument("variants", nargs="+", help="NAME=SOURCE_DIR (the first is the reference)")
    args = parser.parse_args()
    variants: list[Variant] = []
    try:
        for spec in args.variants:
            name, source = spec.split("=", 1)
            variants.append(Variant(name, Path(source)))
        run(variants, args.rounds, args.batches)
    finally:
        for variant in variants:
            variant.stop()


if __name__ == "__main__":
    main()
