"""Exploratory: would an equal-weight min-max score fusion (the one that lifts SciFact above 0.72 in
``make bench-quality``) lower LoCoMo recall? Not served; RRF stays the service's fusion.

Run: ``python -m bench.locomo.score_fusion``. Indexes every LoCoMo conversation straight into a
RetrievalEngine (no gRPC; the documents MemoryService builds by default: speaker-prefixed text, the
previous turn as context for the full-text leg), takes each leg's top 100 with scores per question,
and compares, per held-out conversation, the served RRF with the min-max fusion of
bench/scifact/quality.py at depth 100. Writes ``bench/results/locomo_score_fusion.json``.
"""

from __future__ import annotations

import json
import shutil
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo.recall import RESULTS
from bench.locomo.selection import METRICS, Setting, evidence_ranks, fuse, scored
from bench.locomo.services import conversations, load_questions, load_turns, session_time, turn_content
from bench.scifact.quality import min_max_fusion
from strata_memory.settings import MemorySettings
from strata_retrieval.engine import FTS, VECTOR
from strata_retrieval.main import load_embedder, open_engine
from strata_retrieval.model import (
    ContextLegs,
    Document,
    DocumentFilter,
    DocumentKind,
    Scope,
    SearchMode,
    SearchQuery,
    document_key,
)
from strata_retrieval.settings import RetrievalSettings

TENANT = "locomo"
DEPTH = 100


def documents(conv: str) -> list[Document]:
    out, previous = [], ""
    for turn in load_turns(conv):
        text = f"{turn['speaker']}: {turn_content(turn)}"
        out.append(
            Document(
                id=f"{conv}/{turn['dia_id']}",
                text=text,
                context=previous,
                context_legs=ContextLegs.TEXT,
                kind=DocumentKind.MESSAGE,
                scope=Scope(tenant_id=TENANT, agent_id=conv),
                created_at=session_time(turn["session_date_time"]),
            )
        )
        previous = text
    return out


def main() -> None:
    data_dir = Path(".data/bench/locomo-score-fusion")
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = RetrievalSettings().model_copy(update={"data_dir": data_dir, "log_json": False})
    engine = open_engine(settings, load_embedder(settings))
    s = MemorySettings()
    served = Setting(
        "text", s.recall_vector_weight, s.recall_rrf_k, s.recall_candidate_depth, s.recall_fts_weight
    )
    per_conv: dict[str, dict[str, Any]] = {}
    for conv in conversations():
        docs = documents(conv)
        for start in range(0, len(docs), 64):
            engine.upsert(docs[start : start + 64])
        ids = {document_key(TENANT, d.id): d.id.split("/", 1)[1] for d in docs}
        questions, _ = scored(load_questions(conv))
        hits: dict[str, dict[str, int]] = {
            "rrf (served weights)": dict.fromkeys(METRICS, 0),
            "min-max": dict.fromkeys(METRICS, 0),
        }
        for q in questions:
            query = SearchQuery(
                text=q.text,
                mode=SearchMode.HYBRID,
                filter=DocumentFilter(tenant_id=TENANT, agent_ids=(conv,)),
                top_k=DEPTH,
                vector_depth=DEPTH,
                fts_depth=DEPTH,
            )
            candidates = engine.candidates(query)
            legs = {name: [ids[c.key] for c in found] for name, found in candidates.items()}
            rankings = {
                "rrf (served weights)": fuse(legs[VECTOR], legs[FTS], served),
                "min-max": [ids[key] for key in min_max_fusion(candidates, DEPTH, ids)],
            }
            for name, ranked in rankings.items():
                ranks = evidence_ranks(q, ranked)
                for metric in METRICS:
                    hits[name][metric] += ranks.hit(metric)
        per_conv[conv] = {
            name: {m: round(v / len(questions), 4) for m, v in counts.items()}
            for name, counts in hits.items()
        }
        per_conv[conv]["questions"] = len(questions)
        print(conv, per_conv[conv], flush=True)
    engine.close()
    summary = {
        name: {
            "any@10 per conversation": [per_conv[c][name]["any@10"] for c in per_conv],
            "any@10 median": statistics.median(per_conv[c][name]["any@10"] for c in per_conv),
            "any@10 pooled": round(
                sum(per_conv[c][name]["any@10"] * per_conv[c]["questions"] for c in per_conv)
                / sum(per_conv[c]["questions"] for c in per_conv),
                4,
            ),
        }
        for name in ("rrf (served weights)", "min-max")
    }
    result = {
        "command": "python -m bench.locomo.score_fusion",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "served_rrf": served.as_dict(),
        "min_max": {"weights": "equal", "depth": DEPTH},
        "per_conversation": per_conv,
        "summary": summary,
    }
    print(json.dumps(summary, indent=1))
    (RESULTS / "locomo_score_fusion.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
