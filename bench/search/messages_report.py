"""The SearchMessages-at-LoCoMo-scale section of bench/REPORT.md (figures: bench/search/messages_p50.py)."""

from __future__ import annotations

from typing import Any

ROWS = (
    ("SearchMessages, first ask", "first_ask", "search_messages"),
    ("SearchMessages, asked again (query vector kept)", "asked_again", "search_messages"),
    ("SearchMessages, a text never asked (beside it)", "asked_again", "search_messages_new_text"),
    ("RetrievalService Search hybrid, first ask", "first_ask", "retrieval_search"),
    ("RetrievalService Search hybrid, asked again", "asked_again", "retrieval_search"),
    ("RetrievalService Search vector-only, asked again", "asked_again", "retrieval_vector_only"),
    ("RetrievalService Search text-only", "asked_again", "retrieval_text_only"),
    ("health check on MemoryService (gRPC floor)", "floor", "memory_health"),
    ("health check on RetrievalService", "floor", "retrieval_health"),
)


def section(figures: dict[str, Any]) -> list[str]:
    """A table of p50/p90 per call kind, the paired reuse ratio and the 4 ms target."""
    target = figures["target_p50_ms"]
    first = figures["first_ask"]["search_messages"]["p50_ms"]
    again = figures["asked_again"]["search_messages"]["p50_ms"]
    ratio = figures["asked_again_over_new_text_median_ratio"]
    lines = [
        f"{figures['questions']} LoCoMo questions over {len(figures['conversations'])} conversations, one "
        f"call in flight, both services as child processes (`bench/search/messages_p50.py`; settings "
        f"{figures['env']}; load average {', '.join(f'{x:.1f}' for x in figures['load_average'])}).",
        "",
        "| call | p50 ms | p90 ms |",
        "|---|---:|---:|",
    ]
    for label, group, name in ROWS:
        row = figures[group][name]
        lines.append(f"| {label} | {row['p50_ms']:.2f} | {row['p90_ms']:.2f} |")
    embed = figures["embedding_alone"]
    lines += [
        f"| the embedder alone (`embed_query`, in the bench process) | {embed['p50_ms']:.2f} | "
        f"{embed['p90_ms']:.2f} |",
        "",
        f"- Target: SearchMessages p50 <= {target:g} ms. First ask {first:.2f} ms "
        f"({'met' if first <= target else 'not met'}); asked again {again:.2f} ms "
        f"({'met' if again <= target else 'not met'}).",
        f"- Asked again over a text never asked, median per-question ratio: SearchMessages "
        f"{ratio['search_messages']:.3f}, RetrievalService Search {ratio['retrieval_search']:.3f}.",
    ]
    return lines
