"""``bench/REPORT.md`` and its plots, generated from ``bench/results/perf*.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.perf import ingest_report, memory_report, plots, replicas_report
from bench.perf.host import NOTICEABLE_STEAL_PERCENT
from bench.search import messages_report
from bench.tenant_isolation import report as tenant_isolation_report

BENCH = Path(__file__).resolve().parent.parent
FINDINGS = Path(__file__).resolve().parent / "findings.md"  # hand-written reading of the latest run
MODES = ("vector", "fts", "hybrid")
_PATH_NOISE = {"sizes", "grpc", "operations"}  # JSON keys left out of a scenario's name in the report
STAGES = ("embedding", "vector_leg", "text_leg", "fetch", "fusion")


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _mark(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _meta(meta: dict[str, Any]) -> list[str]:
    return [
        f"- Command: `{meta['command']}`; run {meta['started_utc']} → {meta['finished_utc']} "
        f"({meta['wall_s'] / 60:.1f} min), commit `{meta['git_commit']}`.",
        f"- Machine: {meta['machine']}; load average before {meta['load_before']}, "
        f"after {meta['load_after']} (other work shared the machine; compare figures within one run)"
        + _steal(meta)
        + ".",
    ]


def _steal(meta: dict[str, Any]) -> str:
    """The share of CPU time the VM's host took for others during the run (absent in older runs)."""
    if "cpu_steal_percent" not in meta:
        return ""
    return f"; {meta['cpu_steal_percent']} % of the CPU time was stolen by the host"


def disturbed(*sections: dict[str, Any]) -> list[str]:
    """A line naming the scenarios during which the host took a noticeable share of the CPU."""
    flagged: list[str] = []
    recorded = False

    def walk(node: Any, path: list[str]) -> None:
        nonlocal recorded
        if not isinstance(node, dict):
            return
        if "cpu_steal_percent" in node:
            recorded = True
            if node["cpu_steal_percent"] >= NOTICEABLE_STEAL_PERCENT:
                flagged.append(f"{' '.join(path)} ({node['cpu_steal_percent']:.0f} %)")
        for key, value in node.items():
            walk(value, path if key in _PATH_NOISE else [*path, key])

    for section in sections:
        walk(section, [])
    if not recorded:
        return []  # runs before 2026-12-03 did not record it per scenario
    if not flagged:
        return [f"- No scenario had more than {NOTICEABLE_STEAL_PERCENT:.0f} % of its CPU time stolen."]
    return [
        f"- Scenarios during which the host took {NOTICEABLE_STEAL_PERCENT:.0f} % or more of the CPU "
        f"(their figures are inflated): {', '.join(flagged)}."
    ]


def _largest(retrieval: dict[str, Any]) -> str | None:
    return max(retrieval["sizes"], key=int) if retrieval.get("sizes") else None


def targets(perf: dict[str, Any], large: dict[str, Any] | None) -> list[str]:
    memory, retrieval = perf["memory"], perf["retrieval"]
    lines = ["| target | measured | verdict |", "|---|---|---|", *memory_report.target_rows(memory)]
    sizes = retrieval["sizes"]
    if "100000" in sizes:
        hybrid = sizes["100000"]["grpc"]["hybrid_c1"]["latency_ms"]
        ok = hybrid["p50"] <= 10 and hybrid["p99"] <= 30
        lines.append(
            f"| hybrid search at 100k p50 ≤ 10 ms, p99 ≤ 30 ms | p50 {_ms(hybrid['p50'])} ms, "
            f"p99 {_ms(hybrid['p99'])} ms{hybrid_parts(sizes['100000'])} | {_mark(ok)} |"
        )
        rate = sizes["100000"]["ingest"]["docs_per_s"]
        lines.append(
            f"| ingest ≥ 500 docs/s at 100k, embedding included | {rate:.0f} docs/s | {_mark(rate >= 500)} |"
        )
    elif large and "100000" in large["retrieval"]["sizes"]:
        hybrid = large["retrieval"]["sizes"]["100000"]["grpc"]["hybrid_c1"]["latency_ms"]
        ok = hybrid["p50"] <= 10 and hybrid["p99"] <= 30
        lines.append(
            f"| hybrid search at 100k p50 ≤ 10 ms, p99 ≤ 30 ms | p50 {_ms(hybrid['p50'])} ms, "
            f"p99 {_ms(hybrid['p99'])} ms (generated-vector corpus, real query embedding) | {_mark(ok)} |"
        )
        lines.append(
            "| ingest ≥ 500 docs/s at 100k, embedding included | 100k not reached with embedding "
            "| not measured |"
        )
    else:
        lines.append("| hybrid search and ingest at 100k | 100k was not reached in this run | not measured |")
    lines.append(_growth(perf, large))
    lines += replicas_report.target_rows(perf.get("replicas", {}))
    lines += ingest_report.target_rows(perf.get("ingest_e2e", {}))
    if "search_messages" in perf:
        found = perf["search_messages"]
        target, first = found["target_p50_ms"], found["first_ask"]["search_messages"]["p50_ms"]
        again = found["asked_again"]["search_messages"]["p50_ms"]
        lines.append(
            f"| SearchMessages p50 ≤ {target:g} ms at LoCoMo scale, hybrid | a new query {_ms(first)} ms, "
            f"asked again {_ms(again)} ms | {_mark(first <= target)} |"
        )
    return lines


def hybrid_parts(step: dict[str, Any]) -> str:
    """The engine's part of the hybrid p50 (and its query embedding), the floor, the host's steal."""
    engine, steal = step["engine"]["hybrid"], step["grpc"]["hybrid_c1"].get("cpu_steal_percent")
    floor = step["grpc"]["floor_c1"]["latency_ms"]["p50"]
    stolen = f"; host took {steal:.0f} % of the CPU" if steal is not None else ""
    total, embedding = engine["engine_p50_ms"], engine["stage_p50_ms"]["embedding"]
    return f" (engine {_ms(total)} ms, embedding {_ms(embedding)}; floor {_ms(floor)}{stolen})"


def _growth(perf: dict[str, Any], large: dict[str, Any] | None) -> str:
    points = {
        int(s): e["grpc"]["hybrid_c1"]["latency_ms"]["p50"] for s, e in perf["retrieval"]["sizes"].items()
    }
    if large:
        points |= {
            int(s): e["grpc"]["hybrid_c1"]["latency_ms"]["p50"]
            for s, e in large["retrieval"]["sizes"].items()
        }
    low, high = (10_000, 1_000_000) if 1_000_000 in points else (10_000, max(points, default=0))
    if low not in points or high <= low:
        return "| sublinear latency growth 10k → 1M | too few sizes measured | not measured |"
    growth, docs = points[high] / points[low], high / low
    runs = [perf["retrieval"]] + ([large["retrieval"]] if large else [])
    legs = {
        int(s): e["engine"]["hybrid"]["stage_p50_ms"]["vector_leg"]
        for r in runs
        for s, e in r["sizes"].items()
    }
    leg = f"; vector leg p50 x{legs[high] / legs[low]:.2f}" if legs.get(low) else ""
    scope = "" if high == 1_000_000 else f" (only up to {high:,}: 1M is `make bench-large`)"
    if large and str(high) in large["retrieval"]["sizes"] and str(low) not in large["retrieval"]["sizes"]:
        scope += f"; {low:,} from `make bench`, {high:,} from the generated-vector corpus"
    return (
        f"| sublinear latency growth 10k → 1M | hybrid p50 x{growth:.2f}{leg} "
        f"for x{docs:.0f} documents{scope} | {_mark(growth < docs)} |"
    )


def retrieval_section(retrieval: dict[str, Any]) -> list[str]:
    lines = [
        "| documents | mode | gRPC p50 ms | gRPC p99 ms | engine p50 ms | embedding | vector leg | text leg "
        "| fetch | fusion | gRPC + rest |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted(retrieval["sizes"], key=int):
        entry = retrieval["sizes"][size]
        for mode in MODES:
            grpc = entry["grpc"][f"{mode}_c1"]["latency_ms"]
            engine = entry["engine"][mode]
            stages = engine["stage_p50_ms"]
            rest = max(grpc["p50"] - engine["engine_p50_ms"], 0.0)
            cells = [f"{int(size):,}", mode, _ms(grpc["p50"]), _ms(grpc["p99"]), _ms(engine["engine_p50_ms"])]
            cells += [f"{_ms(stages[s])} ({engine['share'][s]:.0%})" for s in STAGES]
            lines.append("| " + " | ".join([*cells, _ms(rest)]) + " |")
    vectors = "precomputed vectors" if retrieval.get("precomputed") else "embedding included"
    lines += [
        "",
        f"| documents | ingest docs/s ({vectors}) "
        "| HNSW built at open | build s | hybrid rps c=8 "
        "| server RSS MiB | disk MiB (du) |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sorted(retrieval["sizes"], key=int):
        entry = retrieval["sizes"][size]
        foot = entry["footprint"]
        cells = [
            f"{int(size):,}",
            f"{entry['ingest']['docs_per_s']:.0f}",
            str(entry["engine"]["hnsw_built"]),
            str(entry["engine"]["hnsw_build_s"]),
            f"{entry['grpc']['hybrid_c8']['rps']:.0f}",
            str(foot["rss_mib"]),
            str(foot["disk_mib"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if retrieval.get("skipped"):
        lines += ["", f"Sizes skipped to stay inside the time budget: {json.dumps(retrieval['skipped'])}"]
    return lines


def footprint(retrieval: dict[str, Any]) -> list[str]:
    largest = _largest(retrieval)
    if largest is None:
        return []
    entry = retrieval["sizes"][largest]["footprint"]
    per = 100_000 / int(largest)
    rss = (entry["rss_mib"] - retrieval["empty"]["rss_mib"]) * per
    empty = retrieval["empty"]["rss_mib"]
    how = "measured at" if int(largest) == 100_000 else "extrapolated linearly from"
    return [
        f"Per 100k documents ({how} {int(largest):,}): **{rss:.0f} MiB** of server memory above the empty "
        f"service ({empty} MiB with the model loaded) and **{entry['disk_mib'] * per:.0f} MiB** on disk "
        f"(apparent size {entry['apparent_mib'] * per:.0f} MiB; the vector WAL preallocates).",
    ]


def write(perf: dict[str, Any], large: dict[str, Any] | None, out: Path = BENCH / "REPORT.md") -> Path:
    plot_dir = BENCH / "plots"
    memory, retrieval = perf["memory"], perf["retrieval"]
    made = [
        plots.memory_cdfs(memory, plot_dir / "memory_latency_cdf.png"),
        plots.throughput_vs_concurrency(memory, plot_dir / "memory_throughput_vs_concurrency.png"),
    ]
    if retrieval["sizes"]:
        runs = [retrieval] + ([large["retrieval"]] if large else [])
        made += [
            plots.search_latency_vs_size(runs, plot_dir / "search_latency_vs_size.png"),
            plots.search_cdfs(retrieval, plot_dir / "search_latency_cdf.png"),
            plots.search_breakdown(retrieval, plot_dir / "search_breakdown.png"),
        ]
    text = [
        "# Strata performance report",
        "",
        "Generated by `bench/run_all.py` from `bench/results/perf.json`"
        + (" and `perf_large.json`." if large else "."),
        "",
        *_meta(perf["meta"]),
        *disturbed(memory, retrieval),
        "",
        "## Targets",
        "",
        *targets(perf, large),
        "",
        "## MemoryService next to the gRPC floor",
        "",
        *memory_report.section(memory),
        "",
        "## RetrievalService",
        "",
        *retrieval_section(retrieval),
        "",
        *footprint(retrieval),
        "",
    ]
    text += ingest_notes(retrieval)
    if "ingest_e2e" in perf:
        text += [
            "",
            "## End-to-end ingest: AppendMessages → searchable",
            "",
            *ingest_report.section(perf["ingest_e2e"]),
        ]
    if "search_messages" in perf:
        text += [
            "",
            "## SearchMessages at LoCoMo scale",
            "",
            *messages_report.section(perf["search_messages"]),
        ]
    if "replicas" in perf:
        text += [
            "",
            "## MemoryService replicas on PostgreSQL",
            "",
            *replicas_report.section(perf["replicas"]),
        ]
    tenants = perf.get("tenant_isolation") or _tenant_isolation_alone()
    if tenants:
        text += [
            "",
            "## Tenant isolation: a quiet tenant beside one noisy tenant",
            "",
            *tenant_isolation_report.section(tenants),
        ]
    if large:
        text += [
            "",
            "## Generated-vector corpus (`make bench-large`)",
            "",
            *_meta(large["meta"]),
            *disturbed(large["retrieval"]),
            "",
            *retrieval_section(large["retrieval"]),
            "",
            *footprint(large["retrieval"]),
            "(Here the server's RSS also holds the text -> vector lookup table of the generated corpus.)",
            "",
            large["retrieval"].get("how", ""),
        ]
    if FINDINGS.exists():
        text += ["", FINDINGS.read_text(encoding="utf-8").strip()]
    text += ["", "## Plots", ""] + [f"![{p.stem}](plots/{p.name})" for p in made]
    text += ["", "## How it was measured", "", *METHOD]
    out.write_text("\n".join(text) + "\n", encoding="utf-8")
    return out


def _tenant_isolation_alone() -> dict[str, Any] | None:
    """``bench/results/tenant_isolation.json`` from its own run (``make bench-tenants``), if any."""
    found = BENCH / "results" / "tenant_isolation.json"
    return json.loads(found.read_text(encoding="utf-8")) if found.exists() else None


def ingest_notes(retrieval: dict[str, Any]) -> list[str]:
    lines = []
    alone, excluded = retrieval.get("embedder_alone"), retrieval.get("ingest_without_embedding")
    if alone:
        lines.append(
            f"- The embedder alone (in-process, batches of 64, 2 threads): {alone['docs_per_s']:.0f} docs/s."
        )
    if excluded:
        lines.append(
            f"- Ingest with embedding excluded: {excluded['docs_per_s']:.0f} docs/s over gRPC for "
            f"{excluded['documents']:,} documents into an empty service ({excluded['how']})."
        )
    return lines


METHOD = [
    "- Every figure comes from one run of `make bench` (`python -m bench.run_all`) with the load "
    "generator `strata.loadtest` (Python `grpc.aio`; ghz is not installable here). Client and servers "
    "share the machine's 2 cores, as they did for the floor in the dependency notes (section 1).",
    "- Latency: one client process, one call in flight, after a warm-up. Throughput: two client "
    "processes sharing 8 or 32 calls in flight. MemoryService's table divides by "
    "`grpc.health.v1.Health/Check` on the same server process (the cost of the operation over a call "
    "through that server); the latency targets are judged against the same call on a bare `grpc.aio` "
    "server (health service only) measured in the same run. MemoryService at c=1 is measured "
    "interleaved with both floors (rounds of 20 calls per scenario, shuffled order): the ratios are "
    "medians of per-round ratios, so every scenario sees the same load and the same store state.",
    "- Edits are real `ExecuteTool` calls: `memory_replace` moves a unique counter in a block each "
    "worker owns, in a block of the average size `core_memory_append` meets; `core_memory_append` "
    "appends a line (each worker rotates over its own agents every 250 appends, so blocks grow to "
    "~8,000 of their 20,000 characters). SQLite commits each edit with `synchronous=FULL` (one "
    "fdatasync) before replying.",
    "- Corpus: chat-length windows (12-20 words) of the SciFact abstracts interleaved with LoCoMo "
    "turns, all owned by one agent; queries alternate SciFact claims and LoCoMo questions; top_k 10; "
    "each search filters by tenant and agent. Ingest: `UpsertDocuments`, 64 documents per call, "
    "2 calls in flight.",
    "- Stage shares come from the same engine classes reopened in-process on the service's data with "
    'timed wrappers (`bench/perf/breakdown.py`); "fusion" is everything in `RetrievalEngine.search` '
    'outside the embedder, the two legs and the document fetch (RRF, hits). "gRPC + rest" is the '
    "gRPC p50 minus the engine p50 (transport, protobuf conversion, the executor hop).",
    "- Vector engine: Qdrant's engine in-process (qdrant-edge-py 0.9.0): exact search over plain "
    "segments below 10k unindexed vectors, an HNSW graph (ef 128) built when the service opens with "
    "more; the full-text leg is Tantivy BM25.",
]
