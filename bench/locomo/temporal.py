"""Temporal questions in the LoCoMo benchmark: do session dates help, in the text or as filters?

* **In the text**: the same conversations indexed with ``[said on 8 May 2023]`` after each turn (the
  session date), scored under the served fusion against the index without it, per category and for
  the questions that ask "When …".
* **As filters**: the questions that name a day or a month ("… on May 3, 2023?", "… in June 2023?")
  searched again with a time range on the session dates: from the start of the named period to
  ``AFTER_DAYS`` days after its end (a turn tells of an event on the day or later). Compared with the
  same questions searched without the range.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from google.protobuf.timestamp_pb2 import Timestamp

from bench.locomo.selection import METRICS, Question, Ranks, Setting, table
from strata.client.async_stubs import MemoryStub

if TYPE_CHECKING:
    from bench.locomo.services import Corpus, IndexRun

AFTER_DAYS = 31
LIMIT = 20
_MONTHS = "|".join(calendar.month_name[1:])
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTHS}),? (\d{{4}})\b")
_MONTH_FIRST = re.compile(rf"\b({_MONTHS}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MONTH_ONLY = re.compile(rf"\b({_MONTHS}),? (\d{{4}})\b")


def named_period(text: str) -> tuple[datetime, datetime] | None:
    """The day or month a question names, as [start, end) in UTC; None when it names neither."""
    month_number = {name: i for i, name in enumerate(calendar.month_name) if name}
    if m := _DAY_FIRST.search(text):
        day = datetime(int(m[3]), month_number[m[2]], int(m[1]), tzinfo=UTC)
        return day, day + timedelta(days=1)
    if m := _MONTH_FIRST.search(text):
        day = datetime(int(m[3]), month_number[m[1]], int(m[2]), tzinfo=UTC)
        return day, day + timedelta(days=1)
    if m := _MONTH_ONLY.search(text):
        year, month = int(m[2]), month_number[m[1]]
        start = datetime(year, month, 1, tzinfo=UTC)
        return start, start + timedelta(days=calendar.monthrange(year, month)[1])
    return None


def _stamp(when: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def asks_when(question: Question) -> bool:
    return question.text.strip().lower().startswith("when")


async def date_filters(
    stub: MemoryStub,
    corpora: Mapping[str, Corpus],
    questions: Sequence[Question],
    legs: Mapping[str, Mapping[tuple[str, int], Sequence[str]]],
) -> dict[str, Any]:
    """Hybrid recall of the questions naming a date, without and with a session-date range."""
    from bench.locomo.selection import evidence_ranks
    from bench.locomo.services import search

    dated = [(q, period) for q in questions if (period := named_period(q.text))]
    plain: dict[tuple[str, int], Ranks] = {}
    ranged: dict[tuple[str, int], Ranks] = {}
    for q, (start, end) in dated:
        corpus = corpora[q.conv]
        ids = await search(stub, corpus.agent_id, q.text, "hybrid", LIMIT)
        plain[q.key] = evidence_ranks(q, [corpus.dia_of[i] for i in ids])
        window = (_stamp(start), _stamp(end + timedelta(days=AFTER_DAYS)))
        ids = await search(stub, corpus.agent_id, q.text, "hybrid", LIMIT, window=window)
        ranged[q.key] = evidence_ranks(q, [corpus.dia_of[i] for i in ids])
    subset = [q for q, _ in dated]
    return {
        "questions_naming_a_date": len(subset),
        "window": f"named day or month to {AFTER_DAYS} days after it, on the session date (create_time)",
        "without_filter": _overall(subset, plain),
        "with_filter": _overall(subset, ranged),
    }


def dated_text(
    questions: Sequence[Question],
    *,
    plain_run: IndexRun,
    dated_run: IndexRun,
    setting: Setting,
    fuse: Callable[[Sequence[str], Sequence[str], Setting], list[str]],
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
