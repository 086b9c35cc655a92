"""PNG plots for the report (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib as mpl

mpl.use("Agg")
import matplotlib.pyplot as plt  # after mpl.use: the backend must be chosen first

MODES = ("vector", "fts", "hybrid")


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def search_latency_vs_size(retrieval: list[dict[str, Any]], path: Path) -> Path:
    """gRPC search p50 and p99 at concurrency 1 against corpus size, one line per mode and corpus.

    The first run is ``make bench`` (every document embedded); a second one is ``make bench-large``
    (generated vectors), drawn with square markers: the two corpora differ, so they are not joined.
    """
    figure, axes = plt.subplots(figsize=(7, 4.2))
    for number, run in enumerate(retrieval):
        marker, corpus = ("o", "") if number == 0 else ("s", ", generated")
        for mode, color in zip(MODES, ("tab:blue", "tab:green", "tab:red"), strict=True):
            points = sorted(
                (
                    (int(size), entry["grpc"][f"{mode}_c1"]["latency_ms"])
                    for size, entry in run["sizes"].items()
                ),
                key=lambda point: point[0],
            )
            if not points:
                continue
            sizes = [p[0] for p in points]
            axes.plot(
                sizes, [p[1]["p50"] for p in points], f"{marker}-", color=color, label=f"{mode} p50{corpus}"
            )
            axes.plot(
                sizes,
                [p[1]["p99"] for p in points],
                f"{marker}--",
                color=color,
                alpha=0.5,
                label=f"{mode} p99{corpus}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("documents in the agent's corpus")
    axes.set_ylabel("Search latency over gRPC, ms (c=1)")
    axes.set_title("RetrievalService search latency vs corpus size")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, ncol=3)
    return _save(figure, path)


def _cdf(axes: Any, cdf_ms: list[float], label: str) -> None:
    if cdf_ms:
        axes.plot(cdf_ms, [i / (len(cdf_ms) - 1) for i in range(len(cdf_ms))], label=label)


def memory_cdfs(memory: dict[str, Any], path: Path) -> Path:
    """Latency CDFs at concurrency 1: the health-check floor and every MemoryService operation."""
    figure, axes = plt.subplots(figsize=(7, 4.2))
    _cdf(axes, memory["floor"]["c1"]["cdf_ms"], "floor: Health/Check")
    for name, op in memory["operations"].items():
        _cdf(axes, op["c1"]["cdf_ms"], name)
    axes.set_xscale("log")
    axes.set_xlabel("latency, ms (c=1)")
    axes.set_ylabel("fraction of calls")
    axes.set_title("MemoryService latency CDF next to the gRPC floor")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    return _save(figure, path)


def search_cdfs(retrieval: dict[str, Any], path: Path) -> Path:
    """Latency CDFs at concurrency 1 for each search mode at the largest measured size."""
    figure, axes = plt.subplots(figsize=(7, 4.2))
    largest = max(retrieval["sizes"], key=int)
    grpc = retrieval["sizes"][largest]["grpc"]
    _cdf(axes, grpc["floor_c1"]["cdf_ms"], "floor: Health/Check")
    for mode in MODES:
        _cdf(axes, grpc[f"{mode}_c1"]["cdf_ms"], f"Search {mode}")
    axes.set_xscale("log")
    axes.set_xlabel("latency, ms (c=1)")
    axes.set_ylabel("fraction of calls")
    axes.set_title(f"Search latency CDF at {int(largest):,} documents")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    return _save(figure, path)


def throughput_vs_concurrency(memory: dict[str, Any], path: Path) -> Path:
    """Calls per second at concurrency 1, 8 and 32: the floor and every MemoryService operation."""
    figure, axes = plt.subplots(figsize=(7, 4.2))
    series = {"floor: Health/Check": memory["floor"]} | memory["operations"]
    for name, by_c in series.items():
        levels = sorted(int(c[1:]) for c in by_c)
        axes.plot(levels, [by_c[f"c{c}"]["rps"] for c in levels], "o-", label=name)
    axes.set_xscale("log", base=2)
    axes.set_xticks([1, 8, 32], labels=["1", "8", "32"])
    axes.set_xlabel("calls in flight")
    axes.set_ylabel("calls per second")
    axes.set_title("MemoryService throughput vs concurrency (one server process)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    return _save(figure, path)


def search_breakdown(retrieval: dict[str, Any], path: Path) -> Path:
    """Stacked median stage times per mode and size (in-process engine)."""
    stages = ("embedding", "vector_leg", "text_leg", "fetch", "fusion")
    labels, rows = [], []
    for size in sorted(retrieval["sizes"], key=int):
        for mode in MODES:
            labels.append(f"{mode}\n{int(size) / 1000:g}k")
            rows.append(retrieval["sizes"][size]["engine"][mode]["stage_p50_ms"])
    figure, axes = plt.subplots(figsize=(max(7, len(labels) * 0.7), 4.2))
    bottom = [0.0] * len(rows)
    for stage in stages:
        values = [row[stage] for row in rows]
        axes.bar(range(len(rows)), values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axes.set_xticks(range(len(rows)), labels=labels, fontsize=7)
    axes.set_ylabel("median ms per search (engine, in-process)")
    axes.set_title("Where search time goes")
    axes.legend(fontsize=8)
    return _save(figure, path)
