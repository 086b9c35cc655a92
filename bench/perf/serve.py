"""One server for a benchmark in its own process: ``python -m bench.perf.serve bare|memory|retrieval``.

``bare`` is a plain ``grpc.aio`` server with only the health service: the floor without Strata's
interceptors. Otherwise the service is the real one (``start_memory_server`` / ``RetrievalApp``),
configured from the command line. Each prints ``READY <address>`` on stdout once it reports
SERVING and stops on SIGTERM.
``--precomputed DIR`` (retrieval) gives the embedder a table of texts and their vectors, all
computed earlier by the same model: a text found there is not embedded again (the "embedding
excluded" ingest path); any other text goes through the real model.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Sequence
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2_grpc

from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.onnx_embedder import DEFAULT_PRECISION, OnnxSentenceEmbedder, Precision
from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings

MODEL_CACHE = Path(".cache/bench/models")


def bench_precision() -> Precision:
    """The precision benchmarks embed with: ``STRATA_RETRIEVAL_EMBEDDER_PRECISION``, else the default."""
    return RetrievalSettings().embedder_precision or DEFAULT_PRECISION


class PrecomputedEmbedder:
    """The real embedder behind a text -> vector table: known texts are looked up, others embedded."""

    def __init__(self, model: Embedder, texts: Sequence[str], vectors: Vectors) -> None:
        self._model = model
        self._rows = {text: i for i, text in enumerate(texts)}
        self._vectors = vectors
        self.looked_up = 0
        self.embedded = 0

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        rows = [self._rows.get(text, -1) for text in texts]
        missing = [i for i, row in enumerate(rows) if row < 0]
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        known = [i for i, row in enumerate(rows) if row >= 0]
        out[known] = self._vectors[[rows[i] for i in known]]
        if missing:
            out[missing] = self._model.embed_documents([texts[i] for i in missing])
        self.looked_up += len(known)
        self.embedded += len(missing)
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._model.embed_query(text)


def save_precomputed(path: Path, texts: Sequence[str], vectors: Vectors) -> Path:
    """A table for ``--precomputed``: ``texts.txt`` (one a line) and ``vectors.npy`` (row per text)."""
    if any(len(text.splitlines()) != 1 for text in texts):
        raise ValueError("every text must be one line (see bench.perf.corpus.one_line)")
    path.mkdir(parents=True, exist_ok=True)
    (path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    np.save(path / "vectors.npy", np.asarray(vectors, dtype=np.float32))
    return path


def load_precomputed(model: Embedder, path: Path) -> PrecomputedEmbedder:
    texts = (path / "texts.txt").read_text(encoding="utf-8").splitlines()
    return PrecomputedEmbedder(model, texts, np.load(path / "vectors.npy", mmap_mode="r"))


async def _until_sigterm() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def serve_bare(args: argparse.Namespace) -> None:
    """A plain ``grpc.aio`` server with only the health service: no interceptors, no reflection."""
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health_aio.HealthServicer(), server)
    port = server.add_insecure_port(args.address)
    await server.start()
    print(f"READY {args.address.rsplit(':', 1)[0]}:{port}", flush=True)
    await _until_sigterm()
    await server.stop(1.0)


async def serve_memory(args: argparse.Namespace) -> None:
    settings = MemorySettings(
        address=args.address,
        database_url=args.database_url,
        retrieval_address=args.retrieval_address,
        reuse_port=args.reuse_port,
        log_level="WARNING",
        log_json=False,
    )
    server = await start_memory_server(settings)
    print(f"READY {server.address}", flush=True)
    await _until_sigterm()
    await server.stop(1.0)


async def serve_retrieval(args: argparse.Namespace) -> None:
    settings = RetrievalSettings(
        address=args.address,
        data_dir=args.data_dir,
        model_cache_dir=MODEL_CACHE,
        hnsw_build_threshold=args.hnsw_threshold,
        log_level="WARNING",
        log_json=False,
    )
    model = OnnxSentenceEmbedder.load(
        MODEL_CACHE,
        precision=bench_precision(),
        threads=settings.embedder_threads,
        batch_size=settings.embedder_batch_size,
    )
    embedder = load_precomputed(model, args.precomputed) if args.precomputed else model
    app = RetrievalApp(settings, embedder=embedder)
    await app.start()
    print(f"READY {app.address}", flush=True)
    await _until_sigterm()
    await app.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.serve")
    services = parser.add_subparsers(dest="service", required=True)
    memory = services.add_parser("memory")
    memory.add_argument("--address", default="127.0.0.1:0")
    memory.add_argument("--database-url", required=True)
    memory.add_argument("--retrieval-address", default="127.0.0.1:9")
    memory.add_argument("--reuse-port", action="store_true", help="share the port (SO_REUSEPORT)")
    bare = services.add_parser("bare")
    bare.add_argument("--address", default="127.0.0.1:0")
    retrieval = services.add_parser("retrieval")
    retrieval.add_argument("--address", default="127.0.0.1:0")
    retrieval.add_argument("--data-dir", type=Path, required=True)
    retrieval.add_argument("--hnsw-threshold", type=int, default=10_000)
    retrieval.add_argument("--precomputed", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    serve = {"bare": serve_bare, "memory": serve_memory, "retrieval": serve_retrieval}[args.service]
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
