"""The end-to-end ingest scenario (``bench/perf/ingest_e2e.py``) in REPORT.md: target rows and a section."""

from __future__ import annotations

from typing import Any


def _mark(met: bool) -> str:
    return "met" if met else "**not met**"


def target_rows(found: dict[str, Any]) -> list[str]:
    """One row per scenario: the end-to-end rate against the encoder alone on the same texts."""
    if not found:
        return []
    encoder = found["encoder"]["indexed"]["texts_per_s"]
    rows = []
    imported = found["import"]
    ratio = imported["vs_encoder"]
    rows.append(
        f"| AppendMessages → searchable ≥ {ratio['target']}x the encoder alone, "
        f"{imported['messages']:,}-message import | {imported['rate_per_s']:.0f} msgs/s vs encoder "
        f"{encoder:.0f} texts/s: {ratio['ratio']:.2f}x | {_mark(ratio['met'])} |"
    )
    if "stream" in found:
        stream = found["stream"]
        ratio = stream["vs_encoder"]
        latency = stream["latency_ms"]
        rows.append(
            f"| same, stream of 1-3-message appends ({stream['writers']} writers, wait_searchable) | "
            f"{stream['rate_per_s']:.0f} msgs/s vs encoder {stream['encoder']['texts_per_s']:.0f} texts/s: "
            f"{ratio['ratio']:.2f}x; write → searchable p50 {latency['p50']:.0f} ms, "
            f"p99 {latency['p99']:.0f} ms | {_mark(ratio['met'])} |"
        )
    return rows


def section(found: dict[str, Any]) -> list[str]:
    encoder = found["encoder"]
    imported = found["import"]
    meta = found["meta"]
    lines = [
        f"- Command: `{meta['command']}` (part of `make bench`), {meta['started_utc']} UTC, "
        f"{meta['wall_s']:.0f} s, {meta['cpu_steal_percent']} % of the CPU stolen.",
        f"- Embedded texts: each message with {found['context_turns']} preceding turn(s) read by the "
        f"`{found.get('context_legs', 'both')}` leg(s) (`recall_context_turns`, `recall_context_legs`); "
        f"embedded texts average {encoder['mean_chars_indexed']:.0f} characters against "
        f"{encoder['mean_chars_own']:.0f} for the message alone. Encoder alone (same class, settings, "
        f"batches of {found['outbox_batch_size']}): {encoder['indexed']['texts_per_s']:.0f} texts/s, "
        f"{encoder['own_texts']['texts_per_s']:.0f} messages/s for the messages alone.",
        "",
        "| scenario | messages | msgs/s | / encoder | / encoder (message alone) | server CPU ms/msg "
        "(memory + retrieval) | / encoder CPU | latency p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cpu = imported["cpu_ms_per_message"]
    lines.append(
        f"| import, {imported['messages_per_call']} per call | {imported['messages']:,} | "
        f"{imported['rate_per_s']:.0f} | {imported['vs_encoder']['ratio']:.2f}x | "
        f"{imported['vs_encoder_own_texts']:.2f}x | {cpu['memory']:.2f} + {cpu['retrieval']:.2f} | "
        f"{imported['cpu_vs_encoder']:.2f}x | - |"
    )
    if "stream" in found:
        stream = found["stream"]
        cpu = stream["cpu_ms_per_message"]
        lines.append(
            f"| stream, 1-3 per call, {stream['writers']} writers | {stream['messages']:,} | "
            f"{stream['rate_per_s']:.0f} | {stream['vs_encoder']['ratio']:.2f}x | - | "
            f"{cpu['memory']:.2f} + {cpu['retrieval']:.2f} | {stream['cpu_vs_encoder']:.2f}x | "
            f"{stream['latency_ms']['p50']:.0f} / {stream['latency_ms']['p99']:.0f} |"
        )
    lines += [
        "",
        "\"/ encoder CPU\" is both servers' CPU per message over the encoder's CPU per text: the work the "
        "path adds beyond embedding, which holds up on a busy machine better than the rates do.",
    ]
    return lines
