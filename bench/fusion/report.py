"""``bench/results/scifact_fusion.md`` and ``.json`` from what ``bench.fusion.lab`` and
``bench.fusion.text_legs`` left under ``.data/bench/lab`` (``python -m bench.fusion.lab evaluate``)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from bench.fusion import LAB
from bench.scifact.data import RESULTS


def _params(p: list[float]) -> str:
    names = ("w_vec", "k", "depth") if len(p) == 3 else ("w_vec", "depth")
    return ", ".join(f"{name} {value:g}" for name, value in zip(names, p, strict=True))


def write() -> None:
    variants = json.loads((LAB / "variants.json").read_text())
    texts_path, check_path = LAB / "text_variants.json", LAB / "locomo_served_check.json"
    texts: dict[str, Any] = json.loads(texts_path.read_text()) if texts_path.exists() else {}
    check: dict[str, Any] = json.loads(check_path.read_text()) if check_path.exists() else {}
    lines = [
        "# SciFact nDCG@10 by general methods, and what each does to LoCoMo recall (issue 18 item 5)",
        "",
        f"Written by `python -m bench.fusion.lab evaluate` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"load average {tuple(round(x, 1) for x in os.getloadavg())} (quality figures do not depend on "
        "load). Legs collected once by `python -m bench.fusion.lab collect`: each leg's top 100 with "
        "scores from a fresh embedded engine per data set (int8 MiniLM + Tantivy), SciFact as "
        "`make bench-quality` indexes it, LoCoMo as MemoryService indexes recall by default "
        "(speaker-prefixed text, previous turn in the text leg). On LoCoMo each family's parameters "
        "are chosen by leave-one-conversation-out (objective any@10); on SciFact each family is shown "
        "untuned (equal weights, the depth of a top-10 search) and at LoCoMo's choice: no SciFact "
        "judgement chose anything.",
        "",
        "Choice: distribution-based score fusion (`STRATA_RETRIEVAL_FUSION=dbsf`), a published, "
        "general method (Qdrant's `dbsf`), for the reason min-max scaling was tried: the legs' score "
        "margins carry information their ranks drop; scaling by mean +- 3 sd instead of by the two "
        "extreme candidates is what kept LoCoMo whole where min-max lost it. It is the only family "
        "whose LOCO any@10 on LoCoMo is not below RRF's and whose SciFact figure is >= 0.72 both "
        "untuned and at LoCoMo's choice; on SciFact it beats RRF at every point of the grid below. "
        "Not the default: RRF stays the service's default until the API says which fusion a "
        "`rrf_score` holds. Both engines, on `make bench-quality`'s index (abstracts + 2,000 chat "
        "messages): archival defaults 0.7287 embedded / 0.7280 server (RRF 0.7085 / 0.7104), "
        "`bench/results/scifact_fusion_engines.md`.",
        "",
        "## Fusion families",
        "",
        "| family | LoCoMo held-out any@10 (LOCO) | per conv. min / median / max "
        "| LoCoMo best on all (in-sample) | SciFact untuned | SciFact at LoCoMo's choice |",
        "|---|---:|---|---|---:|---:|",
    ]
    for row in variants["families"]:
        low, mid, high = row["locomo_spread"]
        untuned_params, untuned = row["scifact_untuned"]
        lines.append(
            f"| {row['family']} | {row['locomo_loco_any@10']} | {low} / {mid} / {high} | "
            f"{_params(row['locomo_best_on_all'])}: {row['locomo_best_in_sample']} | "
            f"{untuned} ({_params(untuned_params)}) | {row['scifact_at_locomo_choice']} |"
        )
    lines += [
        "",
        "LOCO folds (held out: chosen setting, held-out any@10):",
        "",
    ]
    for row in variants["families"]:
        folds = "; ".join(f"{f['held_out']}: {_params(f['chosen'])}, {f['any@10']}" for f in row["folds"])
        lines.append(f"- {row['family']}: {folds}")
    strict = variants.get("locomo_select_loco")
    if strict:
        lines += [
            "",
            "The same folds with bench/locomo/selection.py's Grid (its tie rule: the sum of the other "
            "metrics; `make bench-locomo` also lets each fold choose the context mode and reads the "
            "legs through MemoryService, hence its 0.776 for RRF):",
            "",
            "| fusion | held-out any@5 | any@10 | any@20 | all@10 | any@10 min / median / max |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for name, out in strict.items():
            pooled, spread = out["held_out_pooled"], out["held_out_spread"]["any@10"]
            lines.append(
                f"| {name} | {pooled['any@5']} | {pooled['any@10']} | {pooled['any@20']} | "
                f"{pooled['all@10']} | {spread['min']} / {spread['median']} / {spread['max']} |"
            )
    lines += ["", "## LoCoMo by category, MemoryService's recall request (w_vec 0.35, depth 100)", ""]
    lines += [
        "| fusion | category | n | any@5 | any@10 | any@20 | all@10 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, block in variants["locomo_by_category"].items():
        for category, m in block.items():
            lines.append(
                f"| {name} | {category} | {m['questions']} | {m['any@5']} | {m['any@10']} | "
                f"{m['any@20']} | {m['all@10']} |"
            )
    if check:
        # lab.py's check of the served default; an older file holds the check of fusion=dbsf
        default = "served_default_top20_equal_to_local" in check
        served = "at its default fusion" if default else "with `fusion=dbsf`"
        same = check.get("served_default_top20_equal_to_local", check.get("served_dbsf_top20_equal_to_local"))
        lines += [
            "",
            f"An engine started {served} served the same top 20 as this fusion for "
            f"{same}/{check['questions']} questions.",
        ]
    lines += ["", "## SciFact nDCG@10 over each grid (sensitivity, not a choice)", ""]
    lines += ["| setting | RRF k 60 | DBSF |", "|---|---:|---:|"]
    for label, value in variants["scifact_dbsf_grid"].items():
        lines.append(f"| {label} | {variants['scifact_rrf_grid_at_k60'].get(label, '')} | {value} |")
    if texts:
        lines += [
            "",
            "## Text-leg variants (`python -m bench.fusion.text_legs`)",
            "",
            "SciFact hybrid: archival defaults (w 1 / 1, k 60, depth 50); LoCoMo: the recall defaults "
            "(w_vec 0.35, k 30, depth 100; in-sample). Title and window variants are SciFact only "
            "(messages have neither). Each "
            "variant is a Tantivy index built by the script (SciFact without the chat messages "
            "`make bench-quality` adds, so `served` reads 0.6887 here, 0.6896 there; LoCoMo's `served` "
            "0.7921 against 0.7908 from the engine's own index above: BM25 ties ordered differently).",
            "",
            "| variant | SciFact fts | SciFact hybrid RRF | SciFact hybrid DBSF | LoCoMo fts any@10 "
            "| LoCoMo hybrid RRF any@10 | LoCoMo hybrid DBSF any@10 |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, row in texts.items():
            cells = [
                row.get(column, "-")
                for column in (
                    "scifact_fts",
                    "scifact_hybrid_archival_defaults",
                    "scifact_dbsf_archival_defaults",
                    "locomo_fts_any@10",
                    "locomo_hybrid_recall_defaults_any@10",
                    "locomo_dbsf_recall_defaults_any@10",
                )
            ]
            lines.append(f"| {name} | " + " | ".join(str(cell) for cell in cells) + " |")
    windows_path = LAB / "vector_windows.json"
    windows: dict[str, Any] = json.loads(windows_path.read_text()) if windows_path.exists() else {}
    if windows:
        lines += [
            "",
            "## Vector leg passage scoring (`python -m bench.fusion.vector_windows`)",
            "",
            f"Each abstract also embedded as windows of {windows['window_words']} words every "
            f"{windows['stride_words']} ({windows['vectors']} vectors for {windows['documents']} "
            "documents); the vector leg scores a document by its best vector (exact search). Fused with "
            "the text leg above at the archival defaults (RRF w 1 / 1, k 60, depth 50; DBSF w 1 / 1, "
            "depth 50). No LoCoMo turn (with speaker and caption) is longer than one window, so LoCoMo "
            "recall is unchanged by construction. Not served: it needs several vectors per document in "
            "both vector engines and embeds ~5x the vectors on ingest (issue 18 item 1 wants ingest "
            "faster).",
            "",
            "| leg / fusion | whole text (served) | best window |",
            "|---|---:|---:|",
        ]
        scores = windows["ndcg@10"]
        for name in ("vector", "rrf", "dbsf"):
            lines.append(f"| {name} | {scores[f'{name} whole']} | {scores[f'{name} best window']} |")
    (RESULTS / "scifact_fusion.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "scifact_fusion.json").write_text(
        json.dumps(
            {"variants": variants, "text_legs": texts, "served_check": check, "vector_windows": windows},
            indent=1,
        )
        + "\n"
    )
