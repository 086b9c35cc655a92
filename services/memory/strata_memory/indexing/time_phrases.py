"""Time in what people say: relative phrases in a message resolved against when it was said, and the
calendar period a search query names.

Parsing is dateparser's (pinned in requirements/base.txt); this module only decides what to keep:

* **A message** ("I went to a support group yesterday", said on 8 May 2023) is indexed with each time
  phrase it holds written as an absolute date, ``[yesterday: 7 May 2023]``, so a query naming the
  day, the month or the year meets the turn in the full-text leg. A phrase is resolved against the
  message's own time (UTC) with past dates preferred, written at the precision dateparser reports
  (a day, ``week of 1 May 2023``, ``June 2023``, ``2020``), and kept only when it names another day
  than the message's ("now", "tonight" add nothing) and is not made only of words dateparser reads
  as dates in ordinary prose ("we" as Wednesday, "may" as May); such words are also trimmed from a
  phrase's ends ("yesterday and" is written as "yesterday").
* **A query** ("… in May 2023?", "… on 8 May, 2023?") names a period when dateparser finds a phrase
  with at least a month and a year in it whose year is written in the phrase (so a stray number is
  not taken for a date; a query with no four-digit number is not parsed at all). The period is that
  day or that month, as [start, end) in UTC, moved by the word that comes right before the phrase:
  "the week (day, Sunday) before 16 May 2023" is the seven days before it (a month before: 31 days),
  "after" the same span after it, and "by", "as of", "until" leave the start open (None). The query
  is searched piece by piece between those words: over the whole question dateparser misses some.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from dateparser.date import DateDataParser
from dateparser.search import search_dates

LANGUAGES = ["en"]
"""The languages phrases are read in (each further language costs parse time on every message)."""
_PROSE_WORDS = frozenset(
    {
        "we",
        "may",
        "now",
        "sat",
        "sun",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "one's",
        "and",
        "after",
        "the",
        "in",
        "on",
        "at",
        "to",
        "just",
    }
)
"""Words dateparser reads as dates that are mostly ordinary prose: trimmed from a phrase's ends."""
_CLAUSE = re.compile(r"[.,;:!?()\n]+")
"""Phrases are searched clause by clause: over a whole sentence dateparser's search misses some."""
_YEAR = re.compile(r"\b\d{4}\b")
_UP_TO = frozenset({"by", "as of", "until", "till"})
_RELATION = re.compile(r"\b(before|after|by|as of|until|till)\b", re.IGNORECASE)
"""Words that move the period a query names; the query is split at them (kept at odd indexes)."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A time phrase as written and the absolute date it names, at its precision."""

    phrase: str
    when: datetime
    period: str  # dateparser's period: "day", "week", "month" or "year"

    def written(self) -> str:
        """The date as indexed: ``7 May 2023``, ``week of 1 May 2023``, ``May 2023`` or ``2023``."""
        if self.period == "year":
            return f"{self.when.year}"
        if self.period == "month":
            return f"{self.when:%B} {self.when.year}"
        day = f"{self.when.day} {self.when:%B} {self.when.year}"
        return f"week of {day}" if self.period == "week" else day


def resolve(text: str, said_at: datetime) -> list[Resolved]:
    """The time phrases in ``text`` that name another day than ``said_at``, resolved against it."""
    base = said_at.astimezone(UTC).replace(tzinfo=None)
    settings: dict[str, Any] = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    found = [
        hit
        for clause in _CLAUSE.split(text)
        if clause.strip()
        for hit in search_dates(clause, languages=LANGUAGES, settings=settings) or []
    ]
    parser = DateDataParser(languages=LANGUAGES, settings=settings)
    kept: list[Resolved] = []
    for phrase, when in found:
        words = phrase.split()
        while words and words[0].lower() in _PROSE_WORDS:
            words.pop(0)
        while words and words[-1].lower() in _PROSE_WORDS:
            words.pop()
        if when.date() == base.date() or not words:
            continue
        period = parser.get_date_data(phrase).period or "day"
        resolved = Resolved(" ".join(words), when, period)
        if resolved not in kept:
            kept.append(resolved)
    return kept


def date_notes(text: str, said_at: datetime) -> str:
    """Each time phrase in ``text`` with its date, ``[yesterday: 7 May 2023]``, space-separated."""
    return " ".join(f"[{r.phrase}: {r.written()}]" for r in resolve(text, said_at))


def may_name_period(query: str) -> bool:
    """Whether ``query`` holds a four-digit number, without which it names no period (no parse)."""
    return _YEAR.search(query) is not None


def named_period(query: str) -> tuple[datetime | None, datetime] | None:
    """The period a query names (a day or a month with its year, moved by a "before", "after" or "by"
    right before it) as [start, end) in UTC, start None when open; None when the query names none."""
    if not may_name_period(query):
        return None
    settings: dict[str, Any] = {
        "REQUIRE_PARTS": ["month", "year"],
        "RETURN_AS_TIMEZONE_AWARE": False,
        "PREFER_DAY_OF_MONTH": "first",
    }
    pieces = _RELATION.split(query)
    for index in range(0, len(pieces), 2):
        relation = pieces[index - 1].lower() if index else ""
        before = pieces[index - 2] if index else ""
        for phrase, when in search_dates(pieces[index], languages=LANGUAGES, settings=settings) or []:
            if str(when.year) not in _YEAR.findall(phrase):
                continue
            adjacent = not pieces[index].split(phrase, 1)[0].strip()
            period = DateDataParser(languages=LANGUAGES, settings=settings).get_date_data(phrase).period
            start = datetime(when.year, when.month, when.day if period == "day" else 1, tzinfo=UTC)
            end = start + timedelta(
                days=1 if period == "day" else calendar.monthrange(when.year, when.month)[1]
            )
            return _related(start, end, relation if adjacent else "", before)
    return None


def _related(start: datetime, end: datetime, relation: str, before: str) -> tuple[datetime | None, datetime]:
    """[start, end) moved by the word right before the phrase naming it."""
    span = timedelta(days=31 if before.strip().lower().endswith("month") else 7)
    if relation == "before":
        return start - span, start
    if relation == "after":
        return end, end + span
    if relation in _UP_TO:
        return None, end
    return start, end
