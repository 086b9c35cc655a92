"""End-to-end ingest: AppendMessages -> searchable, next to the encoder alone on the same texts.

    python -m bench.perf.ingest_e2e                      # both scenarios: bench/results/ingest_e2e.json
    python -m bench.perf.ingest_e2e --messages 2000 --stream-seconds 10 --output /tmp/x.json

Both services run as their own processes on free ports with embedded defaults (SQLite store, Qdrant's
in-process engine + Tantivy) and fresh data directories; the client is this process.

1. **Encoder alone**: the texts RetrievalService will embed for these messages (the outbox's own
   ``message_document`` read as the engine reads it: with the preceding turns only when
   ``recall_context_legs`` names the vector leg), run
   through the same embedder class with the service's settings, in batches of the outbox's batch
   size (what one delivery hands the engine). Also the messages' own texts without context: what the
   user wrote.
2. **Import** (``--messages``, default 10,000): LoCoMo's conversations (``/work/shared/data/locomo``),
   repeated as further agents until the count is reached, appended by one client in calls of 100
   messages, one conversation after another, then polled through RetrievalService's ``Stats`` until
   every message is searchable. Rate = messages / (first call -> all searchable).
3. **Stream** (``--stream-seconds``): ``--writers`` agents each append 1, 2 or 3 messages per call
   (cycling) with ``wait_searchable``, in a closed loop: throughput = messages searchable per second,
   latency = the call's duration (write -> searchable, as a client waits for it), p50 / p99.

Each scenario also records the CPU each server process spent per message and the host's steal. The
verdict compares each end-to-end rate with the encoder alone on the texts that scenario embedded
(target >= 0.8x). ``cpu_vs_encoder`` (both servers' CPU per message over the encoder's CPU per text)
says how much work the path adds beyond embedding; unlike the rates it holds up on a busy machine,
where a two-process pipeline gets a larger share of the cores than the one-process encoder run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.processes import ServerProcess
from bench.perf.serve import MODEL_CACHE, bench_precision
from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as mres
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.indexing.documents import message_document
from strata_memory.settings import MemorySettings
from strata_memory.store.records import MessageRecord
from strata_retrieval.conversions import document_from_pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings
from strata_serving.tenancy import DEFAULT_TENANT

DATA = Path(os.environ.get("STRATA_LOCOMO_DIR", "/work/shared/data/locomo"))
RESULTS = Path(__file__).resolve().parent.parent / "results"
WORK = Path(".cache/bench/work/ingest_e2e")
TARGET_RATIO = 0.8
IMPORT_CALL = 100  # messages per AppendMessages call of the import
POLL_SECONDS = 0.2  # Stats counts and lists tags: polled often it would take the encoder's CPU
OWN_TEXT_SAMPLE = 3_000
STREAM_SIZES = (1, 2, 3)


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    content: str
    created_us: int


def conversations(total: int) -> list[list[Turn]]:
    """LoCoMo's conversations in name order, repeated (each copy a further agent's history) until they
    hold ``total`` turns; the last copy is cut short."""
    base: list[list[Turn]] = []
    for path in sorted((DATA / "turns").glob("*.jsonl")):
        turns = []
        for line in path.open(encoding="utf-8"):
            row = json.loads(line)
            caption = str(row.get("blip_caption") or "").strip()
            text = str(row["text"]).strip()
            turns.append(Turn(row["speaker"], f"{text} [image: {caption}]" if caption else text, 0))
        base.append(turns)
    if not base:
        raise SystemExit(f"no LoCoMo turns under {DATA / 'turns'} (set STRATA_LOCOMO_DIR)")
    out: list[list[Turn]] = []
    left = total
    while left > 0:
        for turns in base:
            if left <= 0:
                break
            out.append(turns[:left])
            left -= len(out[-1])
    return out


def embedded_texts(conversation: Sequence[Turn], context_turns: int, context_legs: str = "text") -> list[str]:
    """What RetrievalService embeds for each turn: the outbox's ``message_document`` read back as the
    engine reads it (``embedded_text``: the context only when the vector leg is one of its legs)."""
    records = [
        MessageRecord(
            id=f"message-{i}",
            tenant_id=DEFAULT_TENANT,
            agent_id="agent",
            conversation_id="default",
            role="user",
            content=turn.content,
            name=turn.speaker,
            sequence=i,
        )
        for i, turn in enumerate(conversation)
    ]
    documents = [
        message_document(record, records[max(0, i - context_turns) : i], context_legs=context_legs)
        for i, record in enumerate(records)
    ]
    return [document_from_pb(d, "document", lambda: datetime.now(UTC)).embedded_text for d in documents]


def encoder_rate(embedder: OnnxSentenceEmbedder, texts: Sequence[str], batch: int) -> dict[str, float]:
    """Texts per second (and CPU ms per text) through ``embed_documents`` in batches of ``batch``, after
    a warm-up."""
    embedder.embed_documents(list(texts[:64]))
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        embedder.embed_documents(list(texts[start : start + batch]))
    seconds = time.perf_counter() - started
    return {
        "texts_per_s": round(len(texts) / seconds, 1),
        "cpu_ms_per_text": round(1000 * (time.process_time() - cpu) / len(texts), 3),
        "texts": len(texts),
    }


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Servers:
    """RetrievalService and MemoryService as child processes on fresh data directories."""

    def __init__(
        self, work: Path, memory_env: Mapping[str, str], retrieval_env: Mapping[str, str] | None = None
    ) -> None:
        """``*_env``: settings for each service (``STRATA_MEMORY_*``, ``STRATA_RETRIEVAL_*``) for A/Bs."""
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        self.retrieval = ServerProcess(
            ["retrieval", "--data-dir", str(work / "retrieval")], work / "retrieval.log", env=retrieval_env
        )
        self.retrieval.start()
        self.memory = ServerProcess(
            [
                "memory",
                "--database-url",
                f"sqlite:///{work / 'memory.sqlite3'}",
                "--retrieval-address",
                self.retrieval.address,
            ],
            work / "memory.log",
            env=memory_env,
        )
        try:
            self.memory.start()
        except BaseException:
            self.retrieval.stop()
            raise

    def cpu(self) -> dict[str, float]:
        return {
            "memory": process_cpu_seconds(self.memory.pid),
            "retrieval": process_cpu_seconds(self.retrieval.pid),
        }

    def stop(self) -> None:
        self.memory.stop()
        self.retrieval.stop()


def _message(turn: Turn) -> mres.Message:
    stamp = Timestamp()
    stamp.FromMicroseconds(turn.created_us or int(time.time() * 1e6))
    return mres.Message(
        role=mres.MESSAGE_ROLE_USER, name=turn.speaker, content=turn.content, create_time=stamp
    )


async def searchable_count(retrieval: RetrievalStub) -> int:
    stats = await retrieval.Stats(rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id=DEFAULT_TENANT)))
    return int(stats.message_count)


async def run_import(servers: Servers, convs: list[list[Turn]]) -> dict[str, Any]:
    total = sum(len(c) for c in convs)
    async with (
        grpc.aio.insecure_channel(servers.memory.address) as memory_channel,
        grpc.aio.insecure_channel(servers.retrieval.address) as retrieval_channel,
    ):
        memory: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(memory_channel)
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
        agents = [
            (await memory.CreateAgent(mpb.CreateAgentRequest(agent=mres.Agent(name=f"import-{i}")))).id
            for i in range(len(convs))
        ]
        cpu_before, ticks = servers.cpu(), cpu_ticks()
        started = time.perf_counter()
        for agent, conv in zip(agents, convs, strict=True):
            for start in range(0, len(conv), IMPORT_CALL):
                batch = [_message(turn) for turn in conv[start : start + IMPORT_CALL]]
                await memory.AppendMessages(
                    mpb.AppendMessagesRequest(agent_id=agent, messages=batch), timeout=60
                )
        written = time.perf_counter() - started
        deadline = started + 1800
        while (count := await searchable_count(retrieval)) < total:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {count} of {total} messages searchable after 30 minutes")
            await asyncio.sleep(POLL_SECONDS)
        seconds = time.perf_counter() - started
        cpu_after = servers.cpu()
    return {
        "messages": total,
        "agents": len(convs),
        "messages_per_call": IMPORT_CALL,
        "written_s": round(written, 2),
        "searchable_s": round(seconds, 2),
        "rate_per_s": round(total / seconds, 1),
        "cpu_s": {name: round(cpu_after[name] - cpu_before[name], 2) for name in cpu_after},
        "cpu_ms_per_message": {
            name: round(1000 * (cpu_after[name] - cpu_before[name]) / total, 3) for name in cpu_after
        },
        "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
    }


async def run_stream(servers: Servers, convs: list[list[Turn]], seconds: float) -> dict[str, Any]:
    """Closed loop: each writer appends 1, 2, 3, 1, ... of its conversation's turns with
    wait_searchable; returns throughput, latency and the turns that were written (in order)."""
    latencies: list[float] = []
    written: list[list[Turn]] = [[] for _ in convs]
    async with grpc.aio.insecure_channel(servers.memory.address) as channel:
        memory: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agents = [
            (await memory.CreateAgent(mpb.CreateAgentRequest(agent=mres.Agent(name=f"stream-{i}")))).id
            for i in range(len(convs))
        ]
        cpu_before, ticks = servers.cpu(), cpu_ticks()
        started = time.perf_counter()
        stop_at = started + seconds

        async def writer(index: int) -> None:
            conv, agent, position, call = convs[index], agents[index], 0, 0
            while time.perf_counter() < stop_at and position < len(conv):
                turns = conv[position : position + STREAM_SIZES[call % len(STREAM_SIZES)]]
                sent = time.perf_counter()
                await memory.AppendMessages(
                    mpb.AppendMessagesRequest(
                        agent_id=agent, messages=[_message(t) for t in turns], wait_searchable=True
                    ),
                    timeout=120,
                )
                latencies.append(time.perf_counter() - sent)
                written[index].extend(turns)
                position += len(turns)
                call += 1

        await asyncio.gather(*(writer(i) for i in range(len(convs))))
        elapsed = time.perf_counter() - started
        cpu_after = servers.cpu()
    total = sum(len(w) for w in written)
    ordered = sorted(latencies)
    return {
        "writers": len(convs),
        "messages_per_call": list(STREAM_SIZES),
        "calls": len(latencies),
        "messages": total,
        "seconds": round(elapsed, 2),
        "rate_per_s": round(total / elapsed, 1),
        "latency_ms": {
            "p50": round(1000 * statistics.median(ordered), 1),
            "p99": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
            "max": round(1000 * ordered[-1], 1),
        },
        "cpu_ms_per_message": {
            name: round(1000 * (cpu_after[name] - cpu_before[name]) / max(total, 1), 3) for name in cpu_after
        },
        "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
        "written": written,
    }


def verdict(rate: float, encoder: float) -> dict[str, Any]:
    ratio = rate / encoder
    return {
        "ratio": round(ratio, 3),
        "target": TARGET_RATIO,
        "met": ratio >= TARGET_RATIO,
    }


def run(
    work: Path, *, messages: int = 10_000, stream_seconds: float = 30.0, writers: int = 32
) -> dict[str, Any]:
    began, ticks = time.time(), cpu_ticks()
    memory_settings = MemorySettings()
    retrieval_settings = RetrievalSettings()
    context_turns = memory_settings.recall_context_turns
    context_legs = memory_settings.recall_context_legs
    delivery_batch = memory_settings.outbox_batch_size
    embedder = OnnxSentenceEmbedder.load(
        MODEL_CACHE,
        precision=bench_precision(),
        threads=retrieval_settings.embedder_threads,
        batch_size=retrieval_settings.embedder_batch_size,
    )
    results: dict[str, Any] = {
        "context_turns": context_turns,
        "context_legs": context_legs,
        "outbox_batch_size": delivery_batch,
        "embedder": embedder.name,
        "embedder_threads": retrieval_settings.embedder_threads,
    }
    convs = conversations(messages)
    texts = [text for conv in convs for text in embedded_texts(conv, context_turns, context_legs)]
    own = [text for conv in convs for text in embedded_texts(conv, 0)]
    print(f"ingest_e2e: encoder alone on {len(texts):,} texts (context turns {context_turns})", flush=True)
    encoder: dict[str, Any] = {
        "indexed": encoder_rate(embedder, texts, delivery_batch),
        "own_texts": encoder_rate(embedder, own[:OWN_TEXT_SAMPLE], delivery_batch),
        "mean_chars_indexed": round(statistics.fmean(len(t) for t in texts), 1),
        "mean_chars_own": round(statistics.fmean(len(t) for t in own), 1),
    }
    print(f"  encoder: {encoder}", flush=True)
    servers = Servers(work / "import", {})
    try:
        print(f"ingest_e2e: importing {messages:,} messages", flush=True)
        imported = asyncio.run(run_import(servers, convs))
    finally:
        servers.stop()
    imported["vs_encoder"] = verdict(imported["rate_per_s"], encoder["indexed"]["texts_per_s"])
    imported["vs_encoder_own_texts"] = round(imported["rate_per_s"] / encoder["own_texts"]["texts_per_s"], 3)
    imported["cpu_vs_encoder"] = round(
        sum(imported["cpu_ms_per_message"].values()) / encoder["indexed"]["cpu_ms_per_text"], 3
    )
    print(f"  import: {imported}", flush=True)
    results["encoder"] = encoder
    results["import"] = imported
    if stream_seconds > 0:
        stream_convs = conversations(writers * 700)[:writers]
        servers = Servers(work / "stream", {})
        try:
            print(
                f"ingest_e2e: stream of small appends, {writers} writers, {stream_seconds:.0f} s", flush=True
            )
            stream = asyncio.run(run_stream(servers, stream_convs, stream_seconds))
        finally:
            servers.stop()
        done = [conv for conv in stream.pop("written") if conv]
        stream_texts = [text for conv in done for text in embedded_texts(conv, context_turns, context_legs)]
        stream_encoder = encoder_rate(embedder, stream_texts, delivery_batch)
        stream["encoder"] = stream_encoder
        stream["vs_encoder"] = verdict(stream["rate_per_s"], stream_encoder["texts_per_s"])
        stream["cpu_vs_encoder"] = round(
            sum(stream["cpu_ms_per_message"].values()) / stream_encoder["cpu_ms_per_text"], 3
        )
        print(f"  stream: {stream}", flush=True)
        results["stream"] = stream
    shutil.rmtree(work, ignore_errors=True)
    results["meta"] = {
        "command": "python -m bench.perf.ingest_e2e "
        f"--messages {messages} --stream-seconds {stream_seconds:g} --writers {writers}",
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(began)),
        "wall_s": round(time.time() - began, 1),
        "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
        "load_after": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    return results


def measure(
    *, messages: int = 10_000, stream_seconds: float = 30.0, writers: int = 32, output: Path | None = None
) -> Path:
    """Run both scenarios and write the JSON (``bench/results/ingest_e2e.json`` by default)."""
    results = run(WORK, messages=messages, stream_seconds=stream_seconds, writers=writers)
    output = output or RESULTS / "ingest_e2e.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"ingest_e2e: wrote {output} in {results['meta']['wall_s']:.0f} s", flush=True)
    return output


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.ingest_e2e", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--stream-seconds", type=float, default=30.0)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--output", type=Path, default=RESULTS / "ingest_e2e.json")
    args = parser.parse_args()
    measure(
        messages=args.messages, stream_seconds=args.stream_seconds, writers=args.writers, output=args.output
    )


if __name__ == "__main__":
    main()
