"""Where a SearchMessages call's time goes at LoCoMo scale, stage by stage (issue 32 item 5).

    .venv/bin/python -m bench.search.messages_breakdown --questions 300

Both services run as child processes (``bench.perf.serve``, default settings, the outbox's batches
of 32 as ``bench.search.messages_p50``) with tracing on: each prints its spans (OpenTelemetry's
console exporter) to a file. LoCoMo's ten conversations are appended as one agent each; then, one
call in flight, ``--questions`` sampled questions are asked through hybrid ``SearchMessages`` (limit
10), each a text never asked before (so the query vector is embedded: the first-ask case). The spans
of each call's trace are matched up and the median of each stage written to
``bench/results/search_breakdown.json``:

* the client's wall time, MemoryService's server span, and between them the client-side hop;
* in MemoryService: before it calls RetrievalService, the call (client span), after it (the store
  read of the hits, ``store.transaction``);
* the hop MemoryService -> RetrievalService (client span less the server span);
* in RetrievalService: before the vector leg starts (parsing, the executor hop, the text leg handed
  to its thread), the query embedding, the vector search, the wait for the text leg after the
  vector leg, fusion with the fetch of the hits' documents, and from there to the end of the span
  (the response built);
* the text leg (on its own thread, beside the embedding);
* beside them, the embedder alone on the same texts in this process and a health check of each
  service (the gRPC round trip and nothing else).

The spans cost time of their own, so the stages add up to a little more than an untraced call
(``bench.search.messages_p50`` measures that); the split is what this is for.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.locomo.selection import scored
from bench.locomo.services import load_questions
from bench.search.messages_p50 import SERVER_ENV, embedding_alone, load, summary, timed
from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc

RESULTS = Path(__file__).resolve().parents[1] / "results" / "search_breakdown.json"
WARMUP = 30
READY_SECONDS = 900


class TracedServer:
    """``python -m bench.search.messages_breakdown serve <bench.perf.serve args>``: spans to ``spans``."""

    def __init__(self, args: list[str], folder: Path, name: str) -> None:
        self.spans = folder / f"{name}.spans"
        env = os.environ | {"OPENBLAS_NUM_THREADS": "1"} | SERVER_ENV
        with self.spans.open("w") as out, (folder / f"{name}.log").open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.search.messages_breakdown", "serve", name, *args],
                stdout=out,
                stderr=log,
                env=env,
            )
        deadline = time.monotonic() + READY_SECONDS
        while "READY " not in (text := self.spans.read_text()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start; see {folder / f'{name}.log'}")
            time.sleep(0.2)
        self.address = text.split("READY ", 1)[1].split()[0]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def spans_of(path: Path) -> list[dict[str, Any]]:
    """The JSON objects the console exporter printed (one pretty-printed object per span)."""
    text, decoder, found, at = path.read_text(), json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) >= 0:
        try:
            value, at = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        if isinstance(value, dict) and "context" in value:
            found.append(value)
    return found


def _ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def _first(spans: list[tuple[str, dict[str, Any]]], service: str, suffix: str) -> dict[str, Any]:
    """The first span of ``service`` whose name ends with ``suffix`` ({} when there is none)."""
    return next((s for svc, s in spans if svc == service and s["name"].endswith(suffix)), {})


def _length(span: dict[str, Any]) -> float:
    return _ms(span["end_time"]) - _ms(span["start_time"])


def stages(
    memory_spans: list[dict[str, Any]], retrieval_spans: list[dict[str, Any]]
) -> dict[str, list[float]]:
    """Per SearchMessages trace, each stage's milliseconds (see the module docstring)."""
    traces: dict[str, list[tuple[str, dict[str, Any]]]] = collections.defaultdict(list)
    for service, printed in (("memory", memory_spans), ("retrieval", retrieval_spans)):
        for span in printed:
            traces[span["context"]["trace_id"]].append((service, span))
    out: dict[str, list[float]] = collections.defaultdict(list)
    for spans in traces.values():
        served, call = _first(spans, "memory", "/SearchMessages"), _first(spans, "memory", "/Search")
        answered, vector = (
            _first(spans, "retrieval", "/Search"),
            _first(spans, "retrieval", "search.vector_leg"),
        )
        fusion, embed = _first(spans, "retrieval", "search.fusion"), _first(spans, "retrieval", "embed.query")
        text = _first(spans, "retrieval", "search.fts_leg")
        reads = [s for svc, s in spans if svc == "memory" and s["name"] == "store.transaction"]
        if not all((served, call, answered, vector, fusion, embed, text, reads)):
            continue
        length = _length
        out["memory_server_span"].append(length(served))
        out["memory_before_retrieval_call"].append(_ms(call["start_time"]) - _ms(served["start_time"]))
        out["memory_retrieval_call"].append(length(call))
        out["hop_memory_to_retrieval"].append(length(call) - length(answered))
        out["retrieval_server_span"].append(length(answered))
        out["retrieval_before_vector_leg"].append(_ms(vector["start_time"]) - _ms(answered["start_time"]))
        out["retrieval_query_embedding"].append(length(embed))
        out["retrieval_vector_search"].append(length(vector) - length(embed))
        out["retrieval_wait_for_text_leg"].append(_ms(fusion["start_time"]) - _ms(vector["end_time"]))
        out["retrieval_fusion_and_fetch"].append(length(fusion))
        out["retrieval_after_fusion"].append(_ms(answered["end_time"]) - _ms(fusion["end_time"]))
        out["retrieval_text_leg_beside"].append(length(text))
        out["memory_after_retrieval_call"].append(_ms(served["end_time"]) - _ms(call["end_time"]))
        out["memory_store_read"].append(length(reads[-1]))
    return out


def run(work: Path, questions: int) -> dict[str, Any]:
    started = time.perf_counter()
    retrieval = TracedServer(["retrieval", "--data-dir", str(work / "retrieval")], work, "retrieval")
    try:
        database = f"sqlite:///{work}/memory.sqlite3"
        memory_args = ["memory", "--database-url", database, "--retrieval-address", retrieval.address]
        memory = TracedServer(memory_args, work, "memory")
        try:
            agents = asyncio.run(load(memory.address))
            everything, _ = scored(q for conv in agents for q in load_questions(conv))
            step = max(1, len(everything) // questions)
            asked = [(agents[q.conv], q.text) for q in everything[::step][:questions]]
            client, floor = ask(memory.address, retrieval.address, asked)
        finally:
            memory.stop()
    finally:
        retrieval.stop()
    split = stages(spans_of(work / "memory.spans"), spans_of(work / "retrieval.spans"))
    return {
        "client_search_messages": summary(client[WARMUP:]),
        "stages": {name: summary(values[WARMUP:]) for name, values in split.items()},
        "floor": {name: summary(values) for name, values in floor.items()},
        "embedding_alone": embedding_alone([text for _, text in asked]),
        "questions": len(asked),
        "load_average": os.getloadavg(),
        "seconds": round(time.perf_counter() - started, 1),
    }


def ask(
    memory_address: str, retrieval_address: str, asked: list[tuple[str, str]]
) -> tuple[list[float], dict[str, list[float]]]:
    """Warm-up calls, then each question once (a text never asked); and the health checks."""
    with (
        grpc.insecure_channel(memory_address) as memory_channel,
        grpc.insecure_channel(retrieval_address) as retrieval_channel,
    ):
        memory = memory_service_pb2_grpc.MemoryServiceStub(memory_channel)
        calls = [(agent, f"{text} ") for agent, text in asked[:WARMUP]] + list(asked)
        client = []
        for agent, text in calls:
            request = mpb.SearchMessagesRequest(
                agent_id=agent, query=text, mode=mpb.SEARCH_MODE_HYBRID, limit=10
            )
            client.append(timed(functools.partial(memory.SearchMessages, request)))
        check = health_pb2.HealthCheckRequest()
        floor: dict[str, list[float]] = {"memory_health": [], "retrieval_health": []}
        memory_health = health_pb2_grpc.HealthStub(memory_channel)
        retrieval_health = health_pb2_grpc.HealthStub(retrieval_channel)
        for _ in asked:
            floor["memory_health"].append(timed(lambda: memory_health.Check(check)))
            floor["retrieval_health"].append(timed(lambda: retrieval_health.Check(check)))
    return client, floor


def serve(name: str, args: list[str]) -> None:
    """Run ``bench.perf.serve`` with a tracer provider printing every span to stdout."""
    from bench.perf import serve as served
    from strata_serving.server_tracing import TraceExporter, configure_tracing

    configure_tracing(f"strata-{name}", TraceExporter.CONSOLE)
    sys.argv = ["bench.perf.serve", *args]
    served.main()


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.search.messages_breakdown")
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="messages-breakdown-") as scratch:
        figures = run(Path(scratch), args.questions)
    figures["command"] = f"python -m bench.search.messages_breakdown --questions {args.questions}"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
