"""conversions: domain -> wire -> domain is the identity; the wire's defaults parse as documented."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval import conversions
from strata_retrieval.model import (
    DEFAULT_RRF_K,
    Document,
    DocumentFilter,
    DocumentKind,
    Hit,
    LegWeights,
    Scope,
    SearchMode,
    TagMatch,
)
from strata_serving.errors import InvalidArgument

text = st.text(max_size=20)
names = st.lists(st.text(min_size=1, max_size=8), max_size=4).map(tuple)
moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))
documents = st.builds(
    Document,
    id=st.text(min_size=1, max_size=12),
    text=text,
    kind=st.sampled_from(DocumentKind),
    scope=st.builds(Scope, tenant_id=text, agent_id=text, archive_id=text, conversation_id=text),
    created_at=moments,
    role=text,
    tags=names,
    metadata=st.dictionaries(text, text, max_size=3),
)
filters = st.builds(
    DocumentFilter,
    tenant_id=text,
    agent_ids=names,
    archive_ids=names,
    conversation_ids=names,
    kinds=st.lists(st.sampled_from(DocumentKind), max_size=2).map(tuple),
    tags=names,
    tag_match=st.sampled_from(TagMatch),
    roles=names,
    created_from=st.none() | moments,
    created_to=st.none() | moments,
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@given(documents)
def test_document_round_trip(document: Document) -> None:
    wire = pb.Document.FromString(conversions.document_to_pb(document).SerializeToString())
    assert conversions.document_from_pb(wire, "document", lambda: NOW) == document


@given(filters)
def test_filter_round_trip(flt: DocumentFilter) -> None:
    wire = pb.DocumentFilter.FromString(conversions.filter_to_pb(flt).SerializeToString())
    assert conversions.filter_from_pb(wire) == flt


@given(
    documents,
    st.sampled_from(SearchMode),
    st.floats(0, 1),
    st.none() | st.integers(1, 50),
    st.none() | st.integers(1, 50),
)
def test_hit_round_trip(
    document: Document, mode: SearchMode, score: float, vector_rank: int | None, fts_rank: int | None
) -> None:
    hit = Hit(
        document=document,
        rrf_score=score,
        vector_rank=vector_rank,
        fts_rank=fts_rank,
        vector_score=None if vector_rank is None else 0.5,
        fts_score=None if fts_rank is None else 7.25,
    )
    wire = conversions.hit_to_pb(hit, mode)
    assert wire.search_mode == conversions.MODE_TO_PB[mode]
    assert conversions.hit_from_pb(pb.SearchHit.FromString(wire.SerializeToString())) == hit


def test_unset_created_at_takes_the_server_clock() -> None:
    wire = pb.Document(id="a", kind=pb.DOCUMENT_KIND_PASSAGE, scope=pb.Scope(tenant_id="t"))
    assert conversions.document_from_pb(wire, "d", lambda: NOW).created_at == NOW


def test_unspecified_tag_match_means_any() -> None:
    assert conversions.filter_from_pb(pb.DocumentFilter(tenant_id="t")).tag_match is TagMatch.ANY


def test_search_defaults_and_partial_weights() -> None:
    defaults = LegWeights(vector=0.8, fts=1.2)
    plain = conversions.search_from_pb(
        pb.SearchRequest(query="q", mode=pb.SEARCH_MODE_FTS, top_k=3), defaults
    )
    assert (plain.rrf_k, plain.weights, plain.vector_depth, plain.fts_depth) == (
        DEFAULT_RRF_K,
        None,
        None,
        None,
    )
    request = pb.SearchRequest(mode=pb.SEARCH_MODE_HYBRID, top_k=3, fts_weight=0.0, rrf_k=0.0, vector_depth=9)
    parsed = conversions.search_from_pb(request, defaults)
    assert parsed.weights == LegWeights(vector=0.8, fts=0.0)
    assert (parsed.rrf_k, parsed.vector_depth, parsed.fts_depth) == (0.0, 9, None)


@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_UNSPECIFIED, 42])
def test_mode_must_be_a_known_choice(mode: int) -> None:
    with pytest.raises(InvalidArgument) as caught:
        conversions.search_from_pb(pb.SearchRequest(mode=mode, top_k=1), LegWeights(1, 1))  # type: ignore[arg-type]
    assert caught.value.field_violations[0][0] == "mode"


def test_timestamps_keep_microseconds() -> None:
    moment = NOW + timedelta(microseconds=123_456)
    assert conversions.timestamp_to_datetime(conversions.datetime_to_timestamp(moment)) == moment
