"""The fusion variants of ``python -m bench.fusion.lab evaluate``, over the legs ``collect`` kept.

Every variant is a family with a small parameter grid. On LoCoMo a family's parameters are chosen by
leave-one-conversation-out (objective any@10, pooled over the training conversations, as
bench/locomo/selection.py does for RRF), so each family is compared by its held-out any@10. On SciFact
each family is reported at its untuned point (equal leg weights, the engine's default depth) and at
the point LoCoMo chose on all conversations: neither looks at SciFact's judgements.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fusion import LAB
from bench.fusion import report as fusion_report
from bench.locomo.selection import Grid, Question, Setting, evidence_ranks, scored, table
from bench.locomo.services import conversations, load_questions
from bench.scifact import data as sf
from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.fusion import dbsf_ranking

Leg = list[tuple[str, float]]
Params = tuple[float, ...]
VEC_WEIGHTS = (1.0, 0.75, 0.5, 0.35, 0.25)
DEPTHS = (20, 50, 100)
RRF_KS = (5.0, 10.0, 20.0, 30.0, 60.0)


def _ranked(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda key: (-scores[key], key))


def rrf(vector: Leg, fts: Leg, p: Params) -> list[str]:
    w_vec, k, depth = p
    scores: dict[str, float] = {}
    for weight, leg in ((w_vec, vector), (1.0, fts)):
        for rank, (key, _) in enumerate(leg[: int(depth)], start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return _ranked(scores)


Normalise = Callable[[Sequence[float]], list[float]]


def _min_max(values: Sequence[float]) -> list[float]:
    high, low = max(values), min(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def _max_only(values: Sequence[float]) -> list[float]:
    """Scaled by the best score (0 stays 0): the floor does not move with the depth."""
    high = max(values)
    return [v / high if high > 0 else 1.0 for v in values]


def dbsf(vector: Leg, fts: Leg, p: Params) -> list[str]:
    """The service's own distribution-based score fusion (``STRATA_RETRIEVAL_FUSION=dbsf``)."""
    w_vec, depth = p[0], int(p[1])
    legs = {VECTOR: vector[:depth], FTS: fts[:depth]}
    return dbsf_ranking(legs, weights={VECTOR: w_vec, FTS: 1.0}).keys


def _rank(values: Sequence[float]) -> list[float]:
    """Borda: 1 for the first of n candidates down to 1/n for the last."""
    n = len(values)
    return [(n - i) / n for i in range(n)]


def convex(normalise: Normalise) -> Callable[[Leg, Leg, Params], list[str]]:
    """w_vec * norm(vector) + w_fts * norm(bm25), each over its leg's top ``depth`` (0 if missing)."""

    def fuse(vector: Leg, fts: Leg, p: Params) -> list[str]:
        w_vec, depth = p[0], int(p[1])
        w_fts = 1.0
        scores: dict[str, float] = {}
        for weight, leg in ((w_vec, vector), (w_fts, fts)):
            top = leg[:depth]
            if not top:
                continue
            for (key, _), value in zip(top, normalise([s for _, s in top]), strict=True):
                scores[key] = scores.get(key, 0.0) + weight * value
        return _ranked(scores)

    return fuse


@dataclass(frozen=True)
class Family:
    name: str
    fuse: Callable[[Leg, Leg, Params], list[str]]
    grid: list[Params]
    untuned: Params
    served: Params | None = None  # what the service sends today, when the family is RRF

    def label(self, p: Params) -> str:
        return f"{self.name}{tuple(round(x, 3) for x in p)}"


def families() -> list[Family]:
    convex_grid: list[Params] = [(w, float(d)) for w in VEC_WEIGHTS for d in DEPTHS]
    return [
        Family(
            "rrf (w_vec, k, depth)",
            rrf,
            [(w, k, float(d)) for w in (*VEC_WEIGHTS, 0.0) for k in RRF_KS for d in DEPTHS],
            (1.0, 60.0, 50.0),
            served=(0.35, 30.0, 100.0),
        ),
        Family("min-max convex (w_vec, depth)", convex(_min_max), convex_grid, (1.0, 50.0)),
        Family("max-scaled convex (w_vec, depth)", convex(_max_only), convex_grid, (1.0, 50.0)),
        Family("dbsf (w_vec, depth)", dbsf, convex_grid, (1.0, 50.0)),
        Family("borda convex (w_vec, depth)", convex(_rank), convex_grid, (1.0, 50.0)),
    ]


def _legs(raw: dict[str, list[list[Any]]]) -> tuple[Leg, Leg]:
    return [(k, float(s)) for k, s in raw["vector"]], [(k, float(s)) for k, s in raw["fts"]]


def scifact_ndcg(fuse: Callable[[Leg, Leg, Params], list[str]], p: Params, legs: dict[str, Any]) -> float:
    _, _, qrels = sf.load_scifact(quick=False)
    return round(
        statistics.fmean(sf.ndcg_at_10(fuse(*_legs(legs[q]), p), qrels[q]) for q in legs),
        4,
    )


class Locomo:
    def __init__(self, legs: dict[str, Any]) -> None:
        self.legs = legs
        self.questions: dict[str, Question] = {}
        for conv in conversations():
            for q in scored(load_questions(conv))[0]:
                self.questions[f"{conv}#{q.index}"] = q
        self.convs = sorted({q.conv for q in self.questions.values()})
        self._cache: dict[tuple[str, Params], dict[str, bool]] = {}

    def hits(self, family: Family, p: Params) -> dict[str, bool]:
        key = (family.name, p)
        if key not in self._cache:
            self._cache[key] = {
                qid: evidence_ranks(q, family.fuse(*_legs(self.legs[qid]), p)).hit("any@10")
                for qid, q in self.questions.items()
            }
        return self._cache[key]

    def table(self, family: Family, p: Params) -> dict[str, Any]:
        """Every metric, overall and per category, of one setting over every question."""
        questions = list(self.questions.values())
        ranks = {
            q.key: evidence_ranks(q, family.fuse(*_legs(self.legs[qid]), p))
            for qid, q in self.questions.items()
        }
        return table(questions, ranks)

    def grid_loco(self, family: Family, default: Params) -> dict[str, Any]:
        """Leave-one-conversation-out with bench/locomo/selection.py's own Grid (its objective and its
        tie rule: the sum of the other metrics), over ``family``'s grid."""
        questions = list(self.questions.values())

        def setting(p: Params) -> Setting:
            return Setting("text", p[0], p[1] if len(p) == 3 else 0.0, int(p[-1]))

        ranks = {
            setting(p): {
                q.key: evidence_ranks(q, family.fuse(*_legs(self.legs[qid]), p))
                for qid, q in self.questions.items()
            }
            for p in family.grid
        }
        out = Grid(questions, ranks).leave_one_out(setting(default))
        return {"held_out_pooled": out["held_out_pooled"], "held_out_spread": out["held_out_spread"]}

    def score(self, family: Family, p: Params, convs: Sequence[str]) -> float:
        hits = self.hits(family, p)
        chosen = [hit for qid, hit in hits.items() if self.questions[qid].conv in convs]
        return sum(chosen) / len(chosen)

    def loco(self, family: Family) -> dict[str, Any]:
        folds: list[dict[str, Any]] = []
        total = 0
        for held in self.convs:
            train = [c for c in self.convs if c != held]
            best = max(family.grid, key=lambda p: self.score(family, p, train))
            n = sum(q.conv == held for q in self.questions.values())
            score = self.score(family, best, [held])
            folds.append({"held_out": held, "chosen": best, "any@10": round(score, 4), "n": n})
            total += n
        values: list[float] = [f["any@10"] for f in folds]
        pooled = sum(value * f["n"] for value, f in zip(values, folds, strict=True)) / total
        best_all = max(family.grid, key=lambda p: self.score(family, p, self.convs))
        return {
            "held_out_any@10": round(pooled, 4),
            "spread": (min(values), round(statistics.median(values), 4), max(values)),
            "folds": folds,
            "best_on_all": best_all,
            "best_on_all_in_sample": round(self.score(family, best_all, self.convs), 4),
        }


def main() -> None:
    scifact = json.loads((LAB / "scifact_legs.json").read_text())
    locomo = Locomo(json.loads((LAB / "locomo_legs.json").read_text()))
    rows: list[dict[str, Any]] = []
    for family in families():
        loco = locomo.loco(family)
        row = {
            "family": family.name,
            "locomo_loco_any@10": loco["held_out_any@10"],
            "locomo_spread": loco["spread"],
            "locomo_best_on_all": loco["best_on_all"],
            "locomo_best_in_sample": loco["best_on_all_in_sample"],
            "scifact_untuned": (family.untuned, scifact_ndcg(family.fuse, family.untuned, scifact)),
            "scifact_at_locomo_choice": scifact_ndcg(family.fuse, loco["best_on_all"], scifact),
            "locomo_untuned_in_sample": round(locomo.score(family, family.untuned, locomo.convs), 4),
            "folds": loco["folds"],
        }
        if family.served:
            row["served"] = {
                "params": family.served,
                "locomo_in_sample": round(locomo.score(family, family.served, locomo.convs), 4),
                "scifact": scifact_ndcg(family.fuse, family.served, scifact),
            }
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "folds"}), flush=True)
    rrf_family, dbsf_family = families()[0], next(f for f in families() if f.fuse is dbsf)
    served = rrf_family.served or rrf_family.untuned
    recall_dbsf = (served[0], served[2])  # MemoryService's recall weights and depth, under fusion=dbsf
    result = {
        "families": rows,
        "locomo_select_loco": {
            "rrf": locomo.grid_loco(rrf_family, served),
            "dbsf": locomo.grid_loco(dbsf_family, recall_dbsf),
        },
        "locomo_by_category": {
            "rrf, recall defaults (served)": locomo.table(rrf_family, served),
            "dbsf, recall defaults (fusion=dbsf)": locomo.table(dbsf_family, recall_dbsf),
        },
        "scifact_dbsf_grid": {
            f"w_vec {p[0]:g}, depth {p[1]:g}": scifact_ndcg(dbsf, p, scifact) for p in dbsf_family.grid
        },
        "scifact_rrf_grid_at_k60": {
            f"w_vec {p[0]:g}, depth {p[2]:g}": scifact_ndcg(rrf, p, scifact)
            for p in rrf_family.grid
            if p[1] == 60.0 and p[0] > 0
        },
    }
    Path(LAB / "variants.json").write_text(json.dumps(result, indent=1) + "\n")
    fusion_report.write()


if __name__ == "__main__":
    main()
