"""What the embedded vector index's write journal costs a write (issue 26 item 8), in process.

The same batches (``--batch`` documents of chat-length text, random unit vectors of the model's 384
dimensions) are written into a plain Edge shard (``EdgeShardIndex``, as before) and into the
journaled one the service opens (``DurableEdgeShard``: each batch appended to the journal and
fsynced before the shard takes it), alternating batch by batch so drift hits both alike. Figures:
p50/p90 ms per batch write, and the duration of a checkpoint (shard flush + journal emptied) after
``--checkpoint-every`` batches.

    .venv/bin/python -m bench.search.vector_journal      # bench/results/vector_journal.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.perf import corpus
from bench.search.tenant_scoring import documents, percentiles
from strata_retrieval.vectors.edge_durable import DurableEdgeShard
from strata_retrieval.vectors.edge_shard import EdgeShardIndex

RESULTS = Path(__file__).resolve().parents[1] / "results" / "vector_journal.json"
DIMENSION = 384


def run(batches: int, batch_size: int, checkpoint_every: int) -> dict[str, Any]:
    texts = corpus.chat_documents(batches * batch_size)
    written = documents(texts, 10)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="vector-journal-") as tmp:
        plain = EdgeShardIndex(Path(tmp) / "plain", DIMENSION)
        journaled = DurableEdgeShard(
            Path(tmp) / "journaled", DIMENSION, Path(tmp) / "journal", flush_seconds=3600.0
        )
        times: dict[str, list[float]] = {"plain": [], "journaled": []}
        checkpoints = []
        for number, batch in enumerate(written[:batches], start=1):
            vectors = rng.standard_normal((len(batch), DIMENSION)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            order = (("plain", plain), ("journaled", journaled))
            for name, index in order if number % 2 else order[::-1]:
                begun = time.perf_counter()
                index.upsert(batch, vectors)
                times[name].append(time.perf_counter() - begun)
            if number % checkpoint_every == 0:
                begun = time.perf_counter()
                journaled.checkpoint()
                checkpoints.append(time.perf_counter() - begun)
        plain.close()
        journaled.close()
    return {
        "batches": batches,
        "batch_documents": batch_size,
        "write": {name: percentiles(seconds) for name, seconds in times.items()},
        "checkpoint_every_batches": checkpoint_every,
        "checkpoint_p50_ms": round(statistics.median(checkpoints) * 1000, 2) if checkpoints else None,
    }


def report(command: str, batches: int, batch_size: int, checkpoint_every: int) -> dict[str, Any]:
    return {
        "benchmark": "the embedded vector index's write journal: batch write time, journaled against plain",
        "command": command,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg(),
        **run(batches, batch_size, checkpoint_every),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    found = report("python -m bench.search.vector_journal", args.batches, args.batch, args.checkpoint_every)
    args.output.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
