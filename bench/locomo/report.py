"""The LoCoMo benchmark's result (JSON), its printed summary and bench/LOCOMO.md, from one run."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.locomo.selection import CATEGORIES, METRICS, OBJECTIVE, Grid, Question, Ranks, Setting

if TYPE_CHECKING:
    from bench.locomo.services import IndexRun

REPO = Path(__file__).resolve().parents[2]
CONTEXT_MODES = {
    "none": "message alone in both legs",
    "vector": "previous turn embedded with the message; text leg over the message alone",
    "text": (
        "previous turn in the text leg only, the message's own words weighted again; "
        "vector leg over the message alone"
    ),
    "both": "previous turn embedded with the message, and in the text leg",
}


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "bench", "services"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def assemble(
    *,
    questions: Sequence[Question],
    excluded: Sequence[Question],
    runs: Mapping[str, IndexRun],
    served_run: IndexRun,
    served: Setting,
    chosen: Setting,
    grid: Grid,
    ranks: Mapping[Setting, Mapping[tuple[str, int], Ranks]],
    loco: dict[str, Any],
    tables: dict[str, Any],
    alone: dict[str, Any],
    temporal: dict[str, Any],
    embedder: str,
    settings: dict[str, Any],
    seconds: float,
) -> dict[str, Any]:
    convs = grid.convs
    per_conversation = {
        name: {c: {"questions": grid.size[c], **grid.score(s, [c])} for c in convs}
        for name, s in (("served", served), ("loco_chosen", chosen))
    }
    by_context = {}
    for mode in CONTEXT_MODES:
        among = [s for s in grid.settings if s.context == mode]
        if among:
            result = grid.leave_one_out(served, among)
            best = grid.best(convs, among)
            by_context[mode] = {
                "held_out_pooled": result["held_out_pooled"],
                "held_out_spread": result["held_out_spread"][OBJECTIVE],
                "best_on_all": {"setting": best.as_dict(), **grid.score(best, convs)},
            }
    return {
        "benchmark": "LoCoMo evidence recall through MemoryService SearchMessages (gRPC)",
        "data": os.environ.get("STRATA_LOCOMO_DIR", "/work/shared/data/locomo"),
        "conversations": convs,
        "turns": sum(len(c.dia_of) for c in served_run.corpora.values()),
        "questions_scored": len(questions),
        "questions_excluded_no_evidence": len(excluded),
        "excluded": [{"conv": q.conv, "qa_index": q.index, "question": q.text} for q in excluded],
        "questions_per_category": {
            CATEGORIES[c]: sum(q.category == c for q in questions) for c in CATEGORIES
        },
        "config": {
            "embedding_model": f"{embedder} (ONNX)",
            "message": "role user, name = speaker, content = text [+ ' [image: <blip_caption>]'], "
            "create_time = session date",
            "memory_settings": settings,
        },
        "served_setting": served.as_dict(),
        "loco_chosen_setting": chosen.as_dict(),
        "modes": tables,
        "legs_alone": alone,
        "fusion_checks": served_run.checks,
        "leave_one_conversation_out": loco,
        "leave_one_conversation_out_per_context_mode": by_context,
        "per_conversation": per_conversation,
        "grid": [{**s.as_dict(), **grid.score(s, convs)} for s in grid.settings],
        "temporal": temporal,
        "latency": served_run.latency,
        "index_seconds": {run.label: round(run.index_seconds, 1) for run in runs.values()},
        "run_seconds": round(seconds, 1),
        "git_commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
    }


def _cells(row: Mapping[str, Any], metrics: Sequence[str] = METRICS) -> str:
    return " | ".join(f"{row[m]:.3f}" for m in metrics)


def _setting(s: Mapping[str, Any]) -> str:
    method = s.get("method", "rrf")  # results written before the blend name no method: RRF
    k = f", k {s['rrf_k']:g}" if method == "rrf" else ""
    return f"{s['context']}, {method}, w_vec {s['vector_weight']:g}{k}, depth {s['depth']}"


def print_summary(result: Mapping[str, Any]) -> None:
    print(
        f"\nscored {result['questions_scored']} questions, "
        f"excluded {result['questions_excluded_no_evidence']}"
    )
    for mode, by_category in result["modes"].items():
        for name, row in by_category.items():
            print(f"  {mode:28} {name:16} {row['questions']:>4} {_cells(row)}")
    loco = result["leave_one_conversation_out"]
    print(f"\nLOCO ({loco['objective']}), held-out pooled:", loco["held_out_pooled"])
    for fold in loco["folds"]:
        print(
            f"  {fold['held_out']}: chose {_setting(fold['chosen'])}: held-out {OBJECTIVE} "
            f"{fold['held_out_score'][OBJECTIVE]:.3f} "
            f"(served default {fold['default_on_held_out'][OBJECTIVE]:.3f}, "
            f"oracle {fold['oracle_on_held_out'][OBJECTIVE]:.3f})"
        )
    print("  spread:", loco["held_out_spread"][OBJECTIVE])
    for name, row in (loco.get("held_out_per_category") or {}).items():
        print(f"  held-out {name:16} {row['questions']:>4} {_cells(row)}")
    for mode, row in result["leave_one_conversation_out_per_context_mode"].items():
        print(f"  context {mode:6}: held-out {row['held_out_pooled']}  spread {row['held_out_spread']}")
    print("fusion checks:", result["fusion_checks"])
    print("temporal:", result["temporal"])
    print("latency:", result["latency"])


def markdown(result: Mapping[str, Any]) -> str:
    loco = result["leave_one_conversation_out"]
    served, chosen = result["served_setting"], result["loco_chosen_setting"]
    checks = result["fusion_checks"]
    lines = [
        "# LoCoMo evidence recall (issue 4 item 7, issue 18 item 4)",
        "",
        f"Written by `make bench-locomo` (`python -m bench.locomo.recall`) on {result['date']}, commit "
        f"{result['git_commit']}, run time {result['run_seconds']:.0f} s, load average "
        f"{', '.join(f'{x:.1f}' for x in result['machine']['load_average'])} "
        f"({result['machine']['cpus']} CPUs). "
        "Full result: `bench/results/locomo_recall.json`.",
        "",
        f"{len(result['conversations'])} conversations "
        f"({', '.join(result['conversations'])}; all the data holds), "
        f"{result['turns']} turns, {result['questions_scored']} questions of categories 1-4 scored "
        f"({result['questions_per_category']}); "
        f"**{result['questions_excluded_no_evidence']} excluded**: they name "
        "no evidence turn. Any@k: at least one evidence turn in the top k; all@k: every one.",
        "",
        *_findings(result),
        "## Served defaults",
        "",
        f"Setting served by MemoryService: {_setting(served)}, fts weight {served['fts_weight']:g}.",
        "",
        "| mode | category | n | " + " | ".join(METRICS) + " |",
        "|---|---|---:|" + "---:|" * len(METRICS),
    ]
    for mode, by_category in result["modes"].items():
        for name, row in by_category.items():
            lines.append(f"| {mode} | {name} | {row['questions']} | {_cells(row)} |")
    same = checks["served_hybrid"]
    lines += [
        "",
        f"Local fusion = service: the grid's fusion of the two legs reproduced the served hybrid top 20 "
        f"for **{same['identical_top20']}/{same['questions']}** questions; "
        "with other weights sent per request to "
        "RetrievalService `Search`: "
        + "; ".join(
            f"{_setting(c['setting'])}: {c['identical_top20']}/{c['questions']}"
            + (
                f" ({c['left_out_naming_a_period']} naming a period left out: searched within it)"
                if c.get("left_out_naming_a_period")
                else ""
            )
            for c in checks["direct_search"]
        )
        + f". `conversation_search` = `SearchMessages`: {checks['conversation_search']['identical_top10']}/"
        f"{checks['conversation_search']['questions']}.",
        "",
        f"## Leave-one-conversation-out (objective {loco['objective']}, "
        "pooled over the training conversations)",
        "",
        "| held out | n | chosen on the others | held-out any@5 | any@10 | any@20 | all@10 "
        "| served default any@10 | best possible any@10 |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for f in loco["folds"]:
        h = f["held_out_score"]
        lines.append(
            f"| {f['held_out']} | {f['questions']} | {_setting(f['chosen'])} | "
            f"{h['any@5']:.3f} | {h['any@10']:.3f} | "
            f"{h['any@20']:.3f} | {h['all@10']:.3f} | {f['default_on_held_out']['any@10']:.3f} | "
            f"{f['oracle_on_held_out']['any@10']:.3f} |"
        )
    pooled = loco["held_out_pooled"]
    lines += [
        "",
        "Held-out, pooled over all questions: " + ", ".join(f"{m} {pooled[m]:.3f}" for m in METRICS) + ".",
    ]
    by_category = loco.get("held_out_per_category") or {}
    if by_category:
        lines += [
            "",
            "| held-out category | n | " + " | ".join(METRICS) + " |",
            "|---|---:|" + "---:|" * len(METRICS),
        ]
        lines += [f"| {name} | {row['questions']} | {_cells(row)} |" for name, row in by_category.items()]
    lines += ["", "| metric | min | median | max (over held-out conversations) |", "|---|---:|---:|---:|"]
    for m, spread in loco["held_out_spread"].items():
        lines.append(f"| {m} | {spread['min']:.3f} | {spread['median']:.3f} | {spread['max']:.3f} |")
    lines += [
        "",
        f"Setting best on all conversations (what LOCO estimates): **{_setting(chosen)}**.",
        "",
        "### Context indexing, each mode chosen by LOCO on its own",
        "",
        "| context | what | held-out any@10 | any@5 | any@20 | all@10 "
        "| any@10 min / median / max | best on all |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for mode, row in result["leave_one_conversation_out_per_context_mode"].items():
        p, s = row["held_out_pooled"], row["held_out_spread"]
        lines.append(
            f"| {mode} | {CONTEXT_MODES[mode]} | {p['any@10']:.3f} | {p['any@5']:.3f} | {p['any@20']:.3f} | "
            f"{p['all@10']:.3f} | {s['min']:.3f} / {s['median']:.3f} / {s['max']:.3f} | "
            f"{_setting(row['best_on_all']['setting'])} |"
        )
    lines += ["", "Each leg alone (overall): ", "", "| leg, index | " + " | ".join(METRICS) + " |"]
    lines.append("|---|" + "---:|" * len(METRICS))
    for name, row in result["legs_alone"].items():
        lines.append(f"| {name} | {_cells(row)} |")
    lines += ["", "## Per conversation", "", "| setting | conversation | n | " + " | ".join(METRICS) + " |"]
    lines.append("|---|---|---:|" + "---:|" * len(METRICS))
    for name, per_conv in result["per_conversation"].items():
        for conv, row in per_conv.items():
            lines.append(f"| {name} | {conv} | {row['questions']} | {_cells(row)} |")
    lines += _temporal(result["temporal"])
    lat = result["latency"]
    lines += [
        "",
        "## Latency (sequential, hybrid, limit 10, interleaved)",
        "",
        f"`SearchMessages` p50 {lat['memory_search_messages_ms']['p50']} ms "
        f"(p95 {lat['memory_search_messages_ms']['p95']}) "
        f"against RetrievalService `Search` p50 {lat['direct_retrieval_search_ms']['p50']} ms "
        f"(p95 {lat['direct_retrieval_search_ms']['p95']}): ratio {lat['ratio_p50']} (target <= 2).",
        "",
        "## Grid (every setting, pooled over all conversations; best any@10 first, top 25)",
        "",
        "| context | fusion | w_vec | k | depth | " + " | ".join(METRICS) + " |",
        "|---|---|---:|---:|---:|" + "---:|" * len(METRICS),
    ]
    for row in sorted(result["grid"], key=lambda r: (-r["any@10"], -sum(r[m] for m in METRICS)))[:25]:
        method = row.get("method", "rrf")
        k = f"{row['rrf_k']:g}" if method == "rrf" else "-"
        lines.append(
            f"| {row['context']} | {method} | {row['vector_weight']:g} | {k} | {row['depth']} | "
            f"{_cells(row)} |"
        )
    return "\n".join(lines) + "\n"


def _findings(result: Mapping[str, Any]) -> list[str]:
    """The headline of the run, from its own figures."""
    loco = result["leave_one_conversation_out"]
    modes = result["leave_one_conversation_out_per_context_mode"]
    best = max(modes, key=lambda mode: modes[mode]["held_out_pooled"][OBJECTIVE])
    served = result["served_setting"]
    pooled, spread = loco["held_out_pooled"][OBJECTIVE], loco["held_out_spread"][OBJECTIVE]
    lines = [
        "## Findings",
        "",
        f"- Held-out {OBJECTIVE} of the leave-one-conversation-out choice: **{pooled:.3f}** pooled, per "
        f"conversation {spread['min']:.3f} / {spread['median']:.3f} / {spread['max']:.3f} "
        "(min / median / max).",
        "- Context indexing, each chosen by LOCO: "
        + ", ".join(f"{m} {modes[m]['held_out_pooled'][OBJECTIVE]:.3f}" for m in modes)
        + f"; best: **{best}** ({CONTEXT_MODES[best]}). Served: {served['context']}.",
    ]
    text = (result.get("temporal") or {}).get("date_in_text") or {}
    if text:
        before, after = text["without_date"], text["with_date"]
        lines.append(
            f"- Session date in the indexed text: {OBJECTIVE} overall {before['overall'][OBJECTIVE]:.3f} -> "
            f"{after['overall'][OBJECTIVE]:.3f}, temporal {before['2-temporal'][OBJECTIVE]:.3f} -> "
            f'{after["2-temporal"][OBJECTIVE]:.3f}, "When ..." {before["asks_when"][OBJECTIVE]:.3f} -> '
            f"{after['asks_when'][OBJECTIVE]:.3f} (not served: measured only)."
        )
    filters = (result.get("temporal") or {}).get("date_filters") or {}
    if filters:
        lines.append(
            f"- Questions naming a period ({filters['questions_naming_a_date']}), without a session-date "
            f"range -> as served: {OBJECTIVE} {filters['without_filter'][OBJECTIVE]:.3f} -> "
            f"{filters['with_filter'][OBJECTIVE]:.3f} (MemoryService reads the period when "
            "`recall_query_periods` is on; `conversation_search` also takes start_date/end_date)."
        )
    return [*lines, ""]


def _temporal(temporal: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Temporal questions and session dates", ""]
    text = temporal.get("date_in_text") or {}
    if text:
        lines += [
            f"Session date written after each turn (`[said on 8 May 2023]`), served fusion "
            f"({_setting(text['setting'])}):",
            "",
            "| index | subset | n | " + " | ".join(METRICS) + " |",
            "|---|---|---:|" + "---:|" * len(METRICS),
        ]
        for name in ("without_date", "with_date"):
            for subset, row in text[name].items():
                lines.append(f"| {name} | {subset} | {row['questions']} | {_cells(row)} |")
    filters = temporal.get("date_filters") or {}
    if filters:
        lines += [
            "",
            f"Questions naming a period MemoryService reads ({filters['questions_naming_a_date']}: "
            f"{filters['per_category']}), hybrid ({filters['window']}):",
            "",
            "| search | " + " | ".join(METRICS) + " |",
            "|---|" + "---:|" * len(METRICS),
            f"| without range | {_cells(filters['without_filter'])} |",
            f"| as served | {_cells(filters['with_filter'])} |",
        ]
    return lines
