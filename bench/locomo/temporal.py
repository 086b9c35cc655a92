"""Temporal questions in the LoCoMo benchmark: do session dates help, in the text or as filters?

* **In the text**: the same conversations indexed with ``[said on 8 May 2023]`` after each turn (the
  session date), scored under the served fusion against the index without it, per category and for
  the questions that ask "When …".
* **As filters**: the questions in which MemoryService reads a period
  (``strata_memory.indexing.time_phrases.named_period``: "… on May 3, 2023?", "… in June 2023?",
  "the week before …") searched as served (MemoryService ranges them on the session dates when
  ``recall_query_periods`` is on) and with a caller's range covering every session, which overrides
  the reading: the same questions without the range.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.protobuf.timestamp_pb2 import Timestamp

from bench.locomo.selection import CATEGORIES, METRICS, Leg, Question, Ranks, Setting, table
from strata.client.async_stubs import MemoryStub
from strata_memory.indexing.time_phrases import named_period
from strata_memory.operations.search import QUERY_PERIOD_AFTER

if TYPE_CHECKING:
    from bench.locomo.services import Corpus, IndexRun

LIMIT = 20
EVERY_SESSION = (datetime(1900, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
"""A caller's range holding every LoCoMo session: it overrides MemoryService's reading of the query."""


def _stamp(when: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def names_a_period(question: Question) -> bool:
    """Whether MemoryService reads a period in the question (searched within it when
    ``recall_query_periods`` is on)."""
    return named_period(question.text) is not None


def asks_when(question: Question) -> bool:
    return question.text.strip().lower().startswith("when")


async def date_filters(
    stub: MemoryStub,
    corpora: Mapping[str, Corpus],
    questions: Sequence[Question],
    legs: Mapping[str, Mapping[tuple[str, int], Leg]],
) -> dict[str, Any]:
    """Hybrid recall of the questions naming a period, with the served reading and without it."""
    from bench.locomo.selection import evidence_ranks
    from bench.locomo.services import search

    dated = [q for q in questions if named_period(q.text)]
    plain: dict[tuple[str, int], Ranks] = {}
    served: dict[tuple[str, int], Ranks] = {}
    everything = (_stamp(EVERY_SESSION[0]), _stamp(EVERY_SESSION[1]))
    for q in dated:
        corpus = corpora[q.conv]
        ids = await search(stub, corpus.agent_id, q.text, "hybrid", LIMIT, window=everything)
        plain[q.key] = evidence_ranks(q, [corpus.dia_of[i] for i in ids])
        ids = await search(stub, corpus.agent_id, q.text, "hybrid", LIMIT)
        served[q.key] = evidence_ranks(q, [corpus.dia_of[i] for i in ids])
    counts = Counter(CATEGORIES[q.category] for q in dated)
    return {
        "questions_naming_a_date": len(dated),
        "per_category": dict(sorted(counts.items())),
        "window": f"the named period to {QUERY_PERIOD_AFTER.days} days after it, on the session date",
        "without_filter": _overall(dated, plain),
        "with_filter": _overall(dated, served),
        "temporal_without_filter": _overall([q for q in dated if q.category == 2], plain),
        "temporal_with_filter": _overall([q for q in dated if q.category == 2], served),
    }


def dated_text(
    questions: Sequence[Question],
    *,
    plain_run: IndexRun,
    dated_run: IndexRun,
    setting: Setting,
    fuse: Callable[[Leg, Leg, Setting], list[str]],
    evidence_ranks: Callable[[Question, Sequence[str]], Ranks],
) -> dict[str, Any]:
    """Recall under ``setting`` with and without the session date in the indexed text."""
    out: dict[str, Any] = {"setting": setting.as_dict()}
    when = [q for q in questions if asks_when(q)]
    for name, run in (("without_date", plain_run), ("with_date", dated_run)):
        ranks = {}
        for q in questions:
            ids = fuse(run.legs["vector"][q.key], run.legs["fts"][q.key], setting)[:LIMIT]
            ranks[q.key] = evidence_ranks(q, [run.corpora[q.conv].dia_of[i] for i in ids])
        by_category = table(questions, ranks)
        out[name] = {
            "overall": by_category["overall"],
            "2-temporal": by_category["2-temporal"],
            "asks_when": _overall(when, ranks),
        }
    return out


def _overall(subset: Sequence[Question], ranks: Mapping[tuple[str, int], Ranks]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(subset)}
    for metric in METRICS:
        out[metric] = round(sum(ranks[q.key].hit(metric) for q in subset) / len(subset), 4) if subset else 0.0
    return out
