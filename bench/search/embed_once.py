"""Search latency when a leg's scores tie past its read depth (issue 31 item 2).

One real RetrievalService (``python -m bench.perf.serve retrieval``: ONNX MiniLM, edge shard,
Tantivy) holds two kinds of passages for one tenant: ``--tied`` short notes that all share the word
"milk" and have the same length, so the text leg's BM25 scores tie past any depth (agent memory
is full of such short repeated phrases), and ``--plain`` varied sentences. Two queries are timed
over gRPC at concurrency 1, interleaved call by call so drift hits them alike: the tie-heavy one
("milk") and a plain one, each in hybrid and in vector mode. Figures: p50/p90 ms per query and
mode, written under ``--label`` (e.g. ``before`` and ``after`` a change) into the results file, so
two runs of different code land side by side.

    .venv/bin/python -m bench.search.embed_once --label after   # bench/results/search_embed_once.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from bench.perf.processes import ServerProcess
from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc

RESULTS = Path(__file__).resolve().parents[1] / "results" / "search_embed_once.json"
TENANT = "bench"
WORDS = ["apple", "river", "violin", "candle", "meadow", "bishop", "cotton", "falcon", "harbor", "lantern"]
SUBJECTS = ["The user", "Her sister", "The team lead", "Our landlord", "The dentist", "My neighbour"]
VERBS = ["prefers", "booked", "forgot", "asked about", "recommended", "cancelled"]
OBJECTS = ["window seats on trains", "the cello lesson", "a vegetarian menu", "the Lisbon trip", "dark roast"]
QUERIES = {"tie_heavy": "milk", "plain": "which seat does the user like on trains"}
MODES = {"hybrid": pb.SEARCH_MODE_HYBRID, "vector": pb.SEARCH_MODE_VECTOR}


def documents(tied: int, plain: int) -> list[pb.Document]:
    """``tied`` two-word notes sharing "milk", then ``plain`` varied sentences."""
    notes = [f"milk {a}{b}{c}" for a in WORDS for b in WORDS for c in WORDS][:tied]
    parts = [(SUBJECTS[i % 6], VERBS[(i // 6) % 6], OBJECTS[(i // 36) % 5]) for i in range(plain)]
    sentences = [f"{who} {did} {what} ({i})" for i, (who, did, what) in enumerate(parts)]
    return [
        pb.Document(
            id=f"d{i:05d}", text=text, kind=pb.DOCUMENT_KIND_PASSAGE, scope=pb.Scope(tenant_id=TENANT)
        )
        for i, text in enumerate(notes + sentences)
    ]


def measure(address: str, docs: list[pb.Document], calls: int, warmup: int) -> dict[str, Any]:
    """Upsert ``docs``, then time every (query, mode) pair ``calls`` times, interleaved."""
    with grpc.insecure_channel(address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        for start in range(0, len(docs), 64):
            stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=docs[start : start + 64]))
        requests = {
            f"{query}/{mode}": pb.SearchRequest(
                query=text, mode=mode_value, top_k=10, filter=pb.DocumentFilter(tenant_id=TENANT)
            )
            for query, text in QUERIES.items()
            for mode, mode_value in MODES.items()
        }
        timings: dict[str, list[float]] = {name: [] for name in requests}
        for round_ in range(warmup + calls):
            for name, request in requests.items():
                began = time.perf_counter()
                stub.Search(request)
                if round_ >= warmup:
                    timings[name].append((time.perf_counter() - began) * 1000)
    return {
        name: {
            "p50_ms": round(statistics.median(values), 3),
            "p90_ms": round(statistics.quantiles(values, n=10)[-1], 3),
            "calls": len(values),
        }
        for name, values in timings.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search.embed_once")
    parser.add_argument("--label", required=True, help="where the figures go in the results file")
    parser.add_argument("--tied", type=int, default=400)
    parser.add_argument("--plain", type=int, default=400)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        server = ServerProcess(["retrieval", "--data-dir", f"{scratch}/data"], Path(scratch) / "server.log")
        server.start()
        try:
            figures = measure(server.address, documents(args.tied, args.plain), args.calls, args.warmup)
        finally:
            server.stop()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[args.label] = {"tied": args.tied, "plain": args.plain, "top_k": 10, "figures": figures}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({args.label: figures}, indent=2))


if __name__ == "__main__":
    main()
