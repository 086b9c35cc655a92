"""TantivyTextIndex: stemming, BM25, filters inside the query, hostile user text, replace and delete."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from strata_retrieval.model import ContextLegs, Document, DocumentFilter, DocumentKind, Scope, TagMatch
from strata_retrieval.text_index import MAX_QUERY_WORDS, TantivyTextIndex, query_words, search_terms

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def doc(
    doc_id: str,
    text: str,
    *,
    tenant: str = "t1",
    agent: str = "a1",
    tags: tuple[str, ...] = (),
    role: str = "",
    kind: DocumentKind = DocumentKind.PASSAGE,
    hours: int = 0,
) -> Document:
    return Document(
        id=doc_id,
        text=text,
        kind=kind,
        scope=Scope(tenant_id=tenant, agent_id=agent),
        role=role,
        tags=tags,
        created_at=T0 + timedelta(hours=hours),
    )


@pytest.fixture
def index(tmp_path: Path) -> TantivyTextIndex:
    text_index = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    text_index.upsert(
        [
            doc("run", "She was running in the park every morning", tags=("health",), role="user", hours=1),
            doc(
                "cook", "Cooking pasta with fresh tomatoes", tags=("food", "home"), role="assistant", hours=2
            ),
            doc("other", "Running a marathon in the park", agent="a2", tags=("health",), hours=3),
            doc("msg", "the park was closed for running", kind=DocumentKind.MESSAGE, role="user", hours=4),
            doc("elsewhere", "running running park park", tenant="t2"),
        ]
    )
    return text_index


def ids(index: TantivyTextIndex, text: str, flt: DocumentFilter, limit: int = 10) -> list[str]:
    keys = {d.key: d.id for d in _all_docs()}
    return [keys[hit.key] for hit in index.search(text, flt, limit)]


def _all_docs() -> list[Document]:
    return [
        doc("run", ""),
        doc("cook", ""),
        doc("other", "", agent="a2"),
        doc("msg", ""),
        doc("elsewhere", "", tenant="t2"),
        doc("new", ""),
    ]


T1 = DocumentFilter(tenant_id="t1")


def test_english_stemming_matches_other_word_forms(index: TantivyTextIndex) -> None:
    assert set(ids(index, "runs", T1)) == {"run", "other", "msg"}
    assert ids(index, "cooked", T1) == ["cook"]


def test_scores_are_bm25_and_best_first(index: TantivyTextIndex) -> None:
    hits = index.search("park running", T1, 10)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)


def test_filters_restrict_without_changing_scores(index: TantivyTextIndex) -> None:
    everything = {hit.key: hit.score for hit in index.search("running park", T1, 10)}
    filtered = index.search("running park", DocumentFilter(tenant_id="t1", agent_ids=("a1",)), 10)
    assert filtered
    for hit in filtered:
        assert hit.score == pytest.approx(everything[hit.key])


def test_tenant_is_always_enforced(index: TantivyTextIndex) -> None:
    assert "elsewhere" not in ids(index, "running park", T1)
    assert ids(index, "running park", DocumentFilter(tenant_id="t2")) == ["elsewhere"]
    assert ids(index, "running", DocumentFilter(tenant_id="nobody")) == []


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (DocumentFilter(tenant_id="t1", agent_ids=("a2",)), {"other"}),
        (DocumentFilter(tenant_id="t1", kinds=(DocumentKind.MESSAGE,)), {"msg"}),
        (DocumentFilter(tenant_id="t1", roles=("user",)), {"run", "msg"}),
        (DocumentFilter(tenant_id="t1", tags=("health", "food")), {"run", "other"}),
        (DocumentFilter(tenant_id="t1", tags=("health", "home"), tag_match=TagMatch.ALL), set()),
        (
            DocumentFilter(
                tenant_id="t1", created_from=T0 + timedelta(hours=3), created_to=T0 + timedelta(hours=4)
            ),
            {"other", "msg"},
        ),
        (DocumentFilter(tenant_id="t1", created_to=T0 + timedelta(hours=1)), {"run"}),
    ],
)
def test_each_filter_field(index: TantivyTextIndex, flt: DocumentFilter, expected: set[str]) -> None:
    assert set(ids(index, "running park", flt)) == expected


def test_all_tags_must_match_in_all_mode(index: TantivyTextIndex) -> None:
    flt = DocumentFilter(tenant_id="t1", tags=("food", "home"), tag_match=TagMatch.ALL)
    assert ids(index, "pasta", flt) == ["cook"]


HOSTILE = [
    'he said "hello',
    "foo:bar",
    "agent_id:a2 running",
    "deadline: Friday (tentatively",
    "cats AND",
    "NOT cats",
    "-cats",
    "IN [a b]",
    "*",
    "\\",
    '"',
    ")",
    "{}",
    "C++ x^2 a && b || !c",
    "🙂🚀 running",
    "",
    "   ",
    "_",
    "'single' `back` ~fuzzy~2 running^10",
    "text:running OR tenant_id:t2",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_is_never_query_syntax(index: TantivyTextIndex, text: str) -> None:
    found = ids(index, text, T1)
    assert "elsewhere" not in found
    assert set(found) <= {"run", "cook", "other", "msg"}


def test_field_syntax_is_searched_as_plain_words(index: TantivyTextIndex) -> None:
    assert set(ids(index, "agent_id:a2 running", T1)) == {"run", "other", "msg"}
    assert ids(index, "*", T1) == []


def test_query_words_keep_unicode_words_and_are_capped() -> None:
    assert query_words("Grüße, naïve café! 東京") == ["Grüße", "naïve", "café", "東京"]
    assert len(query_words("w " * 1000)) == MAX_QUERY_WORDS


def test_function_words_leave_the_query_unless_nothing_else_is_left() -> None:
    assert search_terms("What is the name of the park?") == ["name", "park"]
    assert search_terms("Who is it?") == ["Who"]  # question words stay
    assert search_terms("is it the") == ["is", "it", "the"]


def test_function_words_do_not_change_which_documents_rank_or_how(index: TantivyTextIndex) -> None:
    plain = [(hit.key, hit.score) for hit in index.search("running park", T1, 10)]
    worded = [(hit.key, hit.score) for hit in index.search("Was the running in a park?", T1, 10)]
    assert worded == plain


def test_function_words_are_still_indexed_and_found_alone(tmp_path: Path) -> None:
    text_index = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    text_index.upsert([doc("hamlet", "to be or not to be"), doc("park", "a walk in the park")])
    assert [hit.key for hit in text_index.search("to be", T1, 10)] == [doc("hamlet", "").key]
    assert [hit.key for hit in text_index.search("the walk", T1, 10)] == [doc("park", "").key]


def test_upsert_replaces_by_key_and_is_visible_on_return(index: TantivyTextIndex) -> None:
    index.upsert([doc("cook", "Baking bread at home", tags=("food",))])
    assert ids(index, "pasta", T1) == []
    assert ids(index, "bread", T1) == ["cook"]
    index.upsert([doc("new", "a brand new pasta recipe")])
    assert ids(index, "pasta", T1) == ["new"]


def test_delete_removes_from_results(index: TantivyTextIndex) -> None:
    index.delete(T1.tenant_id, [doc("run", "").key, doc("msg", "").key])
    assert ids(index, "running", T1) == ["other"]


def test_index_persists_across_reopen(tmp_path: Path) -> None:
    first = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    first.upsert([doc("run", "running in the park")])
    first.close()
    reopened = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    assert ids(reopened, "run", T1) == ["run"]
    assert reopened.document_count() == 1


def _turns() -> list[Document]:
    """A turn, the reply after it (the turn as its context), and unrelated turns."""
    said = "Caroline: I went to a LGBTQ support group yesterday"
    return [
        doc("said", said, kind=DocumentKind.MESSAGE),
        replace(
            doc("reply", "Melanie: Caroline, what a group!", kind=DocumentKind.MESSAGE),
            context=said,
            context_legs=ContextLegs.TEXT,
        ),
        *(doc(f"other-{i}", f"Melanie: the pottery class number {i} was fun") for i in range(6)),
    ]


@pytest.mark.parametrize("weight", [0.1, 0.2, 0.5])
def test_the_turn_that_says_the_words_outranks_the_reply_that_has_them_as_context(
    tmp_path: Path, weight: float
) -> None:
    index = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000, own_text_weight=weight)
    index.upsert(_turns())
    keys = {d.key: d.id for d in _turns()}
    found = [keys[hit.key] for hit in index.search("Caroline LGBTQ support group", T1, 10)]
    assert found == ["said", "reply"]
    alone = index.search("LGBTQ", T1, 10)  # in the reply's context only: found, below the turn
    assert [keys[hit.key] for hit in alone] == ["said", "reply"]


def test_an_own_text_weight_of_zero_scores_the_text_and_its_context_as_one(tmp_path: Path) -> None:
    weighted = TantivyTextIndex(tmp_path / "weighted", writer_heap_bytes=15_000_000, own_text_weight=0.5)
    as_one = TantivyTextIndex(tmp_path / "as-one", writer_heap_bytes=15_000_000, own_text_weight=0.0)
    weighted.upsert(_turns())
    as_one.upsert(_turns())
    scores = {hit.key: hit.score for hit in as_one.search("support group", T1, 10)}
    boosted = {hit.key: hit.score for hit in weighted.search("support group", T1, 10)}
    reply = next(d.key for d in _turns() if d.id == "reply")
    said = next(d.key for d in _turns() if d.id == "said")
    assert boosted[said] > scores[said] * 1.4  # "support group" in its own text: half again
    assert boosted[reply] < scores[reply] * 1.3  # "group" only: less


def test_a_context_the_text_leg_does_not_read_is_not_indexed(tmp_path: Path) -> None:
    index = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    turns = [replace(d, context_legs=ContextLegs.VECTOR) for d in _turns()]
    index.upsert(turns)
    assert len(index.search("LGBTQ support", T1, 10)) == 1
