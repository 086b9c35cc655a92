"""Leave-one-corpus-out choice of the default fusion (issue 32 item 3), over the legs ``bench.fusion.lab
collect`` kept (each leg's top 100 with scores: SciFact's 300 claims, every LoCoMo question).

Run: ``python -m bench.fusion.lab collect`` once, then ``python -m bench.fusion.corpus_out`` (minutes).

Each family is a fusion with a grid of knobs (the vector leg's weight against the text leg's 1, the
candidates per leg, and the family's own). Per family:

- **chosen on SciFact** (best nDCG@10 over the claims), then evaluated on LoCoMo (any@10 over every
  scored question of every conversation: LoCoMo chose nothing);
- **chosen on LoCoMo** (best any@10 over every conversation), then evaluated on SciFact; beside it
  LoCoMo's own leave-one-conversation-out figure (each conversation scored at the knobs the others
  chose);
- **one default for both**: the best SciFact point among those that do not lower LoCoMo below the
  best RRF on LoCoMo in the same run, and the best LoCoMo point among those with SciFact >= 0.73.

The served default (RetrievalService's settings, MemoryService's recall knobs) is scored beside them,
with the RRF it replaced (RetrievalService's former defaults on SciFact, MemoryService's former recall
knobs on LoCoMo). Writes ``bench/results/fusion_corpus_out.json`` and ``.md``.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.fusion import LAB
from bench.fusion.variants import Family as LabFamily
from bench.fusion.variants import Leg, Locomo, Params, _legs, dbsf, rrf
from bench.scifact import data as sf
from strata_memory.settings import MemorySettings
from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.fusion import blend_ranking
from strata_retrieval.model import default_depth
from strata_retrieval.settings import RetrievalSettings

TARGET = 0.73
W_VECS = (1.0, 0.9, 0.75, 0.6, 0.5, 0.35, 0.25)
DEPTHS = (50.0, 100.0)
RRF_KS = (5.0, 10.0, 20.0, 30.0, 60.0)
ALPHAS = (0.0, 0.1, 0.25, 0.4, 0.5, 0.75, 1.0)
BLEND_KS = (5.0, 10.0, 20.0)
FORMER_RRF_SCIFACT: Params = (1.0, 60.0, 50.0)  # RetrievalService's defaults before issue 32
FORMER_RRF_LOCOMO: Params = (0.35, 30.0, 100.0)  # MemoryService's recall knobs before issue 32


def blend(vector: Leg, fts: Leg, p: Params) -> list[str]:
    """:func:`strata_retrieval.fusion.blend_ranking` over each leg's top ``depth``."""
    w_vec, depth, alpha, k = p[0], int(p[1]), p[2], p[3]
    legs = {VECTOR: vector[:depth], FTS: fts[:depth]}
    return blend_ranking(legs, weights={VECTOR: w_vec, FTS: 1.0}, alpha=alpha, k=k).keys


@dataclass(frozen=True)
class Family:
    name: str
    knobs: tuple[str, ...]
    fuse: Callable[[Leg, Leg, Params], list[str]]
    grid: list[Params]

    def label(self, p: Params) -> str:
        return ", ".join(f"{n} {v:g}" for n, v in zip(self.knobs, p, strict=True))

    def lab(self) -> LabFamily:
        return LabFamily(self.name, self.fuse, self.grid, self.grid[0])


def families() -> list[Family]:
    return [
        Family(
            "rrf",
            ("w_vec", "k", "depth"),
            rrf,
            [(w, k, d) for w in W_VECS for k in RRF_KS for d in DEPTHS],
        ),
        Family("dbsf", ("w_vec", "depth"), dbsf, [(w, d) for w in W_VECS for d in DEPTHS]),
        Family(
            "blend",
            ("w_vec", "depth", "alpha", "k"),
            blend,
            [(w, d, a, k) for w in W_VECS for d in DEPTHS for a in ALPHAS for k in BLEND_KS],
        ),
    ]


def served() -> tuple[Params, Params]:
    """The blend's knobs as served: (a Search with no knobs, top 10; MemoryService's recall search)."""
    r, m = RetrievalSettings(), MemorySettings()
    fusion = r.fusion_setting
    assert fusion.method == "blend", "corpus_out scores the served default as a blend"
    default = (r.vector_weight / r.fts_weight, float(default_depth(10)), fusion.alpha, fusion.rank_k)
    depth = float(m.recall_candidate_depth or default_depth(10))
    recall = (m.recall_vector_weight / m.recall_fts_weight, depth, fusion.alpha, fusion.rank_k)
    return default, recall


class Scifact:
    def __init__(self) -> None:
        self.legs = json.loads((LAB / "scifact_legs.json").read_text())
        self.qrels = sf.load_scifact(quick=False)[2]

    def score(self, fuse: Callable[[Leg, Leg, Params], list[str]], p: Params) -> float:
        return statistics.fmean(
            sf.ndcg_at_10(fuse(*_legs(self.legs[q]), p), self.qrels[q]) for q in self.legs
        )


def _best(grid: Sequence[Params], key: Callable[[Params], float]) -> Params:
    return max(grid, key=key)


def study(family: Family, scifact: Scifact, locomo: Locomo, rrf_best_locomo: float) -> dict[str, Any]:
    sci = {p: scifact.score(family.fuse, p) for p in family.grid}
    loc = {p: locomo.score(family.lab(), p, locomo.convs) for p in family.grid}
    on_sci = _best(family.grid, lambda p: sci[p] + loc[p] * 1e-6)  # ties: the other corpus
    on_loc = _best(family.grid, lambda p: loc[p] + sci[p] * 1e-6)
    loco = locomo.loco(family.lab())
    keeps = [p for p in family.grid if loc[p] >= rrf_best_locomo - 1e-9]
    reaches = [p for p in family.grid if sci[p] >= TARGET]

    def point(p: Params) -> dict[str, Any]:
        return {
            "knobs": family.label(p),
            "scifact_ndcg@10": round(sci[p], 4),
            "locomo_any@10": round(loc[p], 4),
        }

    return {
        "family": family.name,
        "grid_points": len(family.grid),
        "chosen_on_scifact": point(on_sci),
        "chosen_on_locomo": point(on_loc),
        "locomo_loco_any@10": loco["held_out_any@10"],
        "locomo_loco_folds": {f["held_out"]: family.label(f["chosen"]) for f in loco["folds"]},
        "best_scifact_not_lowering_locomo": point(_best(keeps, lambda p: sci[p])) if keeps else None,
        "best_locomo_reaching_scifact_target": point(_best(reaches, lambda p: loc[p])) if reaches else None,
        "grid": {family.label(p): [round(sci[p], 4), round(loc[p], 4)] for p in family.grid},
    }


def main() -> None:
    scifact = Scifact()
    locomo = Locomo(json.loads((LAB / "locomo_legs.json").read_text()))
    rrf_family = families()[0]
    rrf_best_locomo = max(locomo.score(rrf_family.lab(), p, locomo.convs) for p in rrf_family.grid)
    rows = []
    for family in families():
        rows.append(study(family, scifact, locomo, rrf_best_locomo))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "grid"}), flush=True)
    blend_family = families()[2]
    default, recall = served()
    out = {
        "command": "python -m bench.fusion.corpus_out",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "legs": "bench.fusion.lab collect (.data/bench/lab): each leg's top 100 with scores",
        "locomo_questions": len(locomo.questions),
        "rrf_best_on_locomo": round(rrf_best_locomo, 4),
        "served": {
            "default (SciFact: a Search with no knobs, top 10)": {
                "knobs": blend_family.label(default),
                "scifact_ndcg@10": round(scifact.score(blend, default), 4),
            },
            "recall (LoCoMo: MemoryService's recall search)": {
                "knobs": blend_family.label(recall),
                "locomo_any@10": round(locomo.score(blend_family.lab(), recall, locomo.convs), 4),
            },
            "former rrf default on SciFact": {
                "knobs": rrf_family.label(FORMER_RRF_SCIFACT),
                "scifact_ndcg@10": round(scifact.score(rrf, FORMER_RRF_SCIFACT), 4),
            },
            "former rrf recall on LoCoMo": {
                "knobs": rrf_family.label(FORMER_RRF_LOCOMO),
                "locomo_any@10": round(
                    locomo.score(
                        LabFamily("rrf", rrf, [FORMER_RRF_LOCOMO], FORMER_RRF_LOCOMO),
                        FORMER_RRF_LOCOMO,
                        locomo.convs,
                    ),
                    4,
                ),
            },
        },
        "families": rows,
    }
    (sf.RESULTS / "fusion_corpus_out.json").write_text(json.dumps(out, indent=1) + "\n")
    (sf.RESULTS / "fusion_corpus_out.md").write_text(markdown(out))
    print(json.dumps(out["served"], indent=1))


def markdown(out: dict[str, Any]) -> str:
    lines = [
        "# One fusion for SciFact and LoCoMo, chosen by leave-one-corpus-out (issue 32 item 3)",
        "",
        f"`{out['command']}` on {out['date']}, load average {out['load_average']} (quality figures do "
        f"not depend on load), over {out['legs']}. SciFact: nDCG@10 over 300 claims; LoCoMo: any@10 "
        f"over {out['locomo_questions']} questions of every conversation. Grids: "
        + "; ".join(f"{row['family']} {row['grid_points']} points" for row in out["families"])
        + ".",
        "",
        "| family | chosen on SciFact: knobs | its SciFact | its LoCoMo (held out) | chosen on LoCoMo: knobs "
        "| its LoCoMo | its SciFact (held out) | LoCoMo LOCO |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for row in out["families"]:
        s, lo = row["chosen_on_scifact"], row["chosen_on_locomo"]
        lines.append(
            f"| {row['family']} | {s['knobs']} | {s['scifact_ndcg@10']} | {s['locomo_any@10']} | "
            f"{lo['knobs']} | {lo['locomo_any@10']} | {lo['scifact_ndcg@10']} | {row['locomo_loco_any@10']} |"
        )
    lines += [
        "",
        f"One default for both: the best SciFact among the points that keep LoCoMo at or above the best "
        f"RRF on LoCoMo ({out['rrf_best_on_locomo']}), and the best LoCoMo among the points with SciFact "
        f">= {TARGET}:",
        "",
        "| family | best SciFact keeping LoCoMo | SciFact | LoCoMo "
        "| best LoCoMo with SciFact >= 0.73 | SciFact | LoCoMo |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for row in out["families"]:
        a, b = row["best_scifact_not_lowering_locomo"], row["best_locomo_reaching_scifact_target"]
        cells = [
            f"{x['knobs']} | {x['scifact_ndcg@10']} | {x['locomo_any@10']}" if x else "none | - | -"
            for x in (a, b)
        ]
        lines.append(f"| {row['family']} | " + " | ".join(cells) + " |")
    lines += ["", "Served (the settings' defaults) and the RRF it replaced, on the same legs:", ""]
    lines += [f"- {name}: {json.dumps(value)}" for name, value in out["served"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
