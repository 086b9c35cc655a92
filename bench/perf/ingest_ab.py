"""Paired A/B of RetrievalService's ingest (``make bench``'s "ingest docs/s, embedding included")
between source trees, to tell a change from the run-to-run spread of one figure.

    python -m bench.perf.ingest_ab --tree before=/tmp/ab/before --tree after=. --rounds 4

Each ``--tree NAME=PATH`` is a source tree (a checkout or ``git archive`` of a commit); the first is
the reference. Every round starts one RetrievalService per tree in turn (order alternating between
rounds) with ``PYTHONPATH=<tree>/services/retrieval:<tree>/services/serving`` ahead of the editable
install, on a fresh data directory, warms it with 512 documents and times ``--documents`` more
(``bench.perf.retrieval_bench.ingest``: the same chat-length corpus, 64 per call, 2 calls in flight).
Reported: each tree's rates and median, and per round each tree's rate over the reference's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.perf.corpus import chat_documents
from bench.perf.processes import ServerProcess
from bench.perf.retrieval_bench import ingest

WARM = 512


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.ingest_ab", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--documents", type=int, default=5_000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (each.split("=", 1) for each in args.tree)}
    reference = next(iter(trees))
    work = Path(tempfile.mkdtemp(prefix="ingest_ab-"))
    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(chat_documents(WARM + args.documents)) + "\n", encoding="utf-8")
    rates: dict[str, list[float]] = {name: [] for name in trees}
    load = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            tree = trees[name]
            env = {"PYTHONPATH": f"{tree}/services/retrieval:{tree}/services/serving"}
            args_ = ["retrieval", "--data-dir", str(work / f"{name}-{round_}")]
            with ServerProcess(args_, work / f"{name}.log", env=env) as server:
                ingest(server.address, corpus, 0, WARM, f"{name} warm-up")
                rates[name].append(ingest(server.address, corpus, WARM, args.documents, name)["docs_per_s"])
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {
        name: {"docs_per_s": runs, "median": statistics.median(runs)} for name, runs in rates.items()
    }
    for name in trees:
        if name != reference:
            ratios = [mine / theirs for mine, theirs in zip(rates[name], rates[reference], strict=True)]
            summary[name]["vs_ref_per_round"] = [round(r, 3) for r in ratios]
            summary[name]["vs_ref_median"] = round(statistics.median(ratios), 3)
    summary["meta"] = {"trees": args.tree, "rounds": args.rounds, "documents": args.documents, "load": load}
    print(json.dumps(summary), flush=True)
    if args.output:
        args.output.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
