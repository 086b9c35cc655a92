"""One page of a tenant's document ids on the edge shard: listing every key and cutting the page (as
``RetrievalEngine.list_ids`` did before) against ``keys_after`` (a scroll from the page token's key),
interleaved round by round on one shard.

    python -m bench.perf.list_ids_page --documents 100000 --page 5000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope
from strata_retrieval.vectors.edge_shard import EdgeShardIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    index = EdgeShardIndex(Path(tempfile.mkdtemp()) / "shard", 8)
    now, written = datetime.now(UTC), 0
    while written < args.documents:
        batch = [
            Document(
                id=f"d{written + i}",
                text="t",
                kind=DocumentKind.PASSAGE,
                scope=Scope(tenant_id="t", archive_id="a"),
                created_at=now,
            )
            for i in range(2_000)
        ]
        index.upsert(batch, np.random.default_rng(written).random((2_000, 8), dtype=np.float32))
        written += len(batch)
    flt = DocumentFilter(tenant_id="t")
    every, after = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        keys = sorted(index.keys_matching(flt))
        every.append(time.perf_counter() - start)
        token = keys[len(keys) // 2]
        start = time.perf_counter()
        page = index.keys_after(flt, token, args.page + 1)
        after.append(time.perf_counter() - start)
        assert page == keys[len(keys) // 2 + 1 : len(keys) // 2 + 2 + args.page]
    index.close()
    old, new = statistics.median(every), statistics.median(after)
    print(
        f"{written} documents, page {args.page}: every key {old * 1000:.1f} ms, "
        f"keys_after {new * 1000:.1f} ms"
    )
    print(f"ratio {new / old:.3f} (p50 of {args.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
