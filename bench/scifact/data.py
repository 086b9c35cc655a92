"""The SciFact data every SciFact study shares: the corpus, queries and judgements, as documents.

``STRATA_SCIFACT_DIR`` (default /work/shared/data/scifact) holds ``corpus.jsonl``, ``queries.jsonl``
and ``qrels.tsv``; only queries with a relevant document are asked. Results go to bench/results as
JSON rewritten after every phase (:class:`Report`), so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from strata_retrieval.model import Document, DocumentKind, Scope

DATA = Path(os.environ.get("STRATA_SCIFACT_DIR", "/work/shared/data/scifact"))
RESULTS = Path(__file__).parents[1] / "results"
TENANT, CHAT_TENANT = "scifact", "chat"
EVAL_TOP_K = 100


def load_scifact(quick: bool) -> tuple[list[dict[str, str]], dict[str, str], dict[str, set[str]]]:
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    queries = {q["id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in list((DATA / "qrels.tsv").open())[1:]:
        query_id, doc_id, score = line.split()
        if int(score) > 0:
            qrels[query_id].add(doc_id)
    if quick:
        relevant = {doc for docs in qrels.values() for doc in docs}
        corpus = [d for d in corpus if d["id"] in relevant] + [d for d in corpus if d["id"] not in relevant]
        corpus = corpus[:1000]
    return corpus, {q: queries[q] for q in qrels}, dict(qrels)


def as_documents(corpus: list[dict[str, str]]) -> list[Document]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        Document(
            id=doc["id"],
            text=f"{doc['title']} {doc['text']}".strip(),
            kind=DocumentKind.PASSAGE,
            scope=Scope(tenant_id=TENANT, archive_id="scifact"),
            created_at=start + timedelta(seconds=i),
        )
        for i, doc in enumerate(corpus)
    ]


def chat_messages(corpus: list[dict[str, str]], count: int) -> list[Document]:
    """Chat-length messages (12-30 words) cut from the abstracts, alternating user/assistant."""
    words = " ".join(doc["text"] for doc in corpus[:400]).split()
    start, messages, position = datetime(2026, 2, 1, tzinfo=UTC), [], 0
    for i in range(count):
        length = 12 + (i * 7) % 19
        text = " ".join(words[position : position + length])
        position = (position + length) % max(1, len(words) - 40)
        messages.append(
            Document(
                id=f"m{i}",
                text=text,
                kind=DocumentKind.MESSAGE,
                scope=Scope(tenant_id=CHAT_TENANT, agent_id="agent-1", conversation_id="c1"),
                role="user" if i % 2 == 0 else "assistant",
                created_at=start + timedelta(seconds=i),
            )
        )
    return messages


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


class Report:
    """The JSON report, written again after every phase so an interrupted run keeps what it measured."""

    def __init__(self, out: Path, header: dict[str, Any]) -> None:
        self.out = out
        self.data = header

    def record(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.data["load_average_now"] = os.getloadavg()  # the machine is shared: > 2 means contention
        print(f"{key}: {json.dumps(value)}", flush=True)
        self.out.parent.mkdir(exist_ok=True)
        self.out.write_text(json.dumps(self.data, indent=2) + "\n")
